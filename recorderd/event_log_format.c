/* The bytes of event log segments: names, header, items (see event_log.h). Pure: no
 * files, so that the fuzzer and the unit test reach every check. */
#include "event_log.h"

#include <errno.h>
#include <pb_decode.h>
#include <pb_encode.h>
#include <stdio.h>
#include <string.h>

#include "event_record.h"

#define FORMAT_VERSION 1

static const uint8_t magic[4] = {'K', 'P', 'E', 'L'};

static void put_le32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t get_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

void rec_evlog_segment_path(uint64_t seq, char *out, size_t cap)
{
	snprintf(out, cap, "%s/%016llx%s", REC_EVLOG_DIR, (unsigned long long)seq, REC_EVLOG_SUFFIX);
}

int rec_evlog_parse_name(const char *name, uint64_t *ret_seq)
{
	if (strlen(name) != 16 + strlen(REC_EVLOG_SUFFIX) || strcmp(name + 16, REC_EVLOG_SUFFIX))
		return 0;
	uint64_t v = 0;
	for (int i = 0; i < 16; i++) {
		char c = name[i];
		int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
		if (d < 0)
			return 0;
		v = v << 4 | (uint64_t)d;
	}
	if (!v)
		return 0;
	*ret_seq = v;
	return 1;
}

void rec_evlog_header(uint64_t seq, uint8_t out[REC_EVLOG_HEADER])
{
	memcpy(out, magic, sizeof magic);
	put_le32(out + 4, FORMAT_VERSION);
	put_le32(out + 8, (uint32_t)seq);
	put_le32(out + 12, (uint32_t)(seq >> 32));
	put_le32(out + 16, 0);
	put_le32(out + 20, rec_crc32(out, 20));
}

int rec_evlog_check_header(const uint8_t *buf, size_t len, uint64_t *ret_seq)
{
	if (len < REC_EVLOG_HEADER || memcmp(buf, magic, sizeof magic) || get_le32(buf + 4) != FORMAT_VERSION ||
	    get_le32(buf + 16) != 0 || get_le32(buf + 20) != rec_crc32(buf, 20))
		return -EBADMSG;
	*ret_seq = (uint64_t)get_le32(buf + 8) | (uint64_t)get_le32(buf + 12) << 32;
	return 0;
}

/* The CRC of an item: its first 8 bytes, then the payload. */
static uint32_t item_crc(const uint8_t *item, const uint8_t *payload, size_t n)
{
	return rec_crc32_update(rec_crc32(item, 8), payload, n);
}

/* The item's header around the n payload bytes at out + REC_EVLOG_ITEM_HEADER. */
static void frame(enum rec_evlog_kind kind, uint8_t *out, size_t n, size_t *ret_len)
{
	put_le32(out, (uint32_t)n);
	out[4] = (uint8_t)kind;
	out[5] = out[6] = out[7] = 0;
	put_le32(out + 8, item_crc(out, out + REC_EVLOG_ITEM_HEADER, n));
	*ret_len = REC_EVLOG_ITEM_HEADER + n;
}

int rec_evlog_encode(enum rec_evlog_kind kind, const kp_EventRecord *ev, uint8_t *out, size_t cap, size_t *ret_len)
{
	if (cap < REC_EVLOG_ITEM_HEADER || (kind != REC_EVLOG_RECORD && kind != REC_EVLOG_TOMBSTONE))
		return -ENOSPC;
	static _Thread_local kp_EventRecord tomb;
	const kp_EventRecord *what = ev;
	if (kind == REC_EVLOG_TOMBSTONE) {
		tomb = (kp_EventRecord)kp_EventRecord_init_zero;
		memcpy(tomb.event_id, ev->event_id, sizeof tomb.event_id);
		tomb.revision = ev->revision;
		tomb.committed_ms = ev->committed_ms;
		what = &tomb;
	}
	pb_ostream_t o = pb_ostream_from_buffer(out + REC_EVLOG_ITEM_HEADER, cap - REC_EVLOG_ITEM_HEADER);
	if (!pb_encode(&o, kp_EventRecord_fields, what))
		return o.bytes_written == o.max_size ? -ENOSPC : -EINVAL;
	frame(kind, out, o.bytes_written, ret_len);
	return 0;
}

int rec_evlog_encode_pb(enum rec_evlog_kind kind, const uint8_t *pb, size_t n, uint8_t *out, size_t cap,
			size_t *ret_len)
{
	if (kind != REC_EVLOG_RECORD && kind != REC_EVLOG_TOMBSTONE)
		return -EINVAL;
	if (n > kp_EventRecord_size)
		return -EINVAL;
	if (cap < REC_EVLOG_ITEM_HEADER || cap - REC_EVLOG_ITEM_HEADER < n)
		return -ENOSPC;
	memcpy(out + REC_EVLOG_ITEM_HEADER, pb, n);
	frame(kind, out, n, ret_len);
	return 0;
}

int rec_evlog_next(const uint8_t *buf, size_t len, size_t *off, struct rec_evlog_item *item, kp_EventRecord *ev)
{
	size_t at = *off;
	if (at == len)
		return -ENODATA;
	if (at > len || len - at < REC_EVLOG_ITEM_HEADER)
		return -EBADMSG;
	const uint8_t *p = buf + at;
	uint32_t n = get_le32(p);
	uint8_t kind = p[4];
	if (n > kp_EventRecord_size || n > len - at - REC_EVLOG_ITEM_HEADER || p[5] || p[6] || p[7] ||
	    (kind != REC_EVLOG_RECORD && kind != REC_EVLOG_TOMBSTONE) ||
	    item_crc(p, p + REC_EVLOG_ITEM_HEADER, n) != get_le32(p + 8))
		return -EBADMSG;
	*ev = (kp_EventRecord)kp_EventRecord_init_zero;
	pb_istream_t in = pb_istream_from_buffer(p + REC_EVLOG_ITEM_HEADER, n);
	if (!pb_decode(&in, kp_EventRecord_fields, ev) || !ev->event_id[0] || !ev->revision)
		return -EBADMSG;
	item->kind = kind;
	item->off = at;
	item->len = REC_EVLOG_ITEM_HEADER + (size_t)n;
	*off = at + item->len;
	return 0;
}
