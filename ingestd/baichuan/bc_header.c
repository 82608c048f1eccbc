/* Baichuan header parsing/serialization and the message reader (BAICHUAN.md sections 1
 * and 7, items 1-5): every length is checked before anything is allocated. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "bc_header.h"
#include "kp_limits.h"

size_t bc_class_header_len(uint16_t cls)
{
	switch (cls) {
	case BC_CLASS_LEGACY:
	case BC_CLASS_NONCE:
		return BC_HEADER_SHORT;
	case BC_CLASS_MODERN:
	case BC_CLASS_REPLY:
	case BC_CLASS_DOWNLOAD:
		return BC_HEADER_LONG;
	default:
		return 0;
	}
}

uint32_t bc_header_raw_body_len(const uint8_t *buf)
{
	return bc_get_le32(buf + 8);
}

static bool magic_prefix_ok(const uint8_t *buf, size_t len, uint32_t magic)
{
	for (size_t i = 0; i < 4 && i < len; i++)
		if (buf[i] != (uint8_t)(magic >> (8 * i)))
			return false;
	return true;
}

int bc_header_parse(const uint8_t *buf, size_t len, struct bc_header *ret, const char **ret_reason)
{
	/* A partial magic waits for more bytes; a wrong byte fails at once. */
	if (!magic_prefix_ok(buf, len, BC_MAGIC) && !magic_prefix_ok(buf, len, BC_MAGIC_SWAPPED)) {
		*ret_reason = "unknown message magic";
		return -EBADMSG;
	}
	if (len < BC_HEADER_SHORT) {
		*ret_reason = "truncated header";
		return -EAGAIN;
	}
	uint16_t cls = bc_get_le16(buf + 18);
	size_t hlen = bc_class_header_len(cls);
	if (!hlen) {
		*ret_reason = "unknown message class";
		return -EPROTO;
	}
	uint32_t body_len = bc_get_le32(buf + 8);
	if (body_len > KP_BAICHUAN_MAX_BODY) {
		*ret_reason = "message body exceeds the 16 MiB ceiling";
		return -EMSGSIZE;
	}
	if (len < hlen) {
		*ret_reason = "truncated header";
		return -EAGAIN;
	}
	uint32_t offset = hlen == BC_HEADER_LONG ? bc_get_le32(buf + 20) : 0;
	if (offset > body_len) {
		*ret_reason = "payload offset past the end of the body";
		return -ERANGE;
	}
	if (offset > BC_EXTENSION_MAX) {
		*ret_reason = "extension larger than 64 KiB";
		return -E2BIG;
	}
	*ret = (struct bc_header){
	    .magic = bc_get_le32(buf),
	    .msg_id = bc_get_le32(buf + 4),
	    .body_len = body_len,
	    .channel = buf[12],
	    .stream_type = buf[13],
	    .msg_num = bc_get_le16(buf + 14),
	    .status = bc_get_le16(buf + 16),
	    .cls = cls,
	    .payload_offset = offset,
	    .header_len = hlen,
	};
	return 0;
}

int bc_header_write(const struct bc_header *h, uint8_t *out, size_t cap)
{
	size_t hlen = bc_class_header_len(h->cls);
	if (!hlen || cap < hlen)
		return -ENOBUFS;
	bc_put_le32(out, h->magic ? h->magic : BC_MAGIC);
	bc_put_le32(out + 4, h->msg_id);
	bc_put_le32(out + 8, h->body_len);
	out[12] = h->channel;
	out[13] = h->stream_type;
	bc_put_le16(out + 14, h->msg_num);
	bc_put_le16(out + 16, h->status);
	bc_put_le16(out + 18, h->cls);
	if (hlen == BC_HEADER_LONG)
		bc_put_le32(out + 20, h->payload_offset);
	return (int)hlen;
}

static int reader_reserve(struct bc_reader *r, size_t need)
{
	if (need <= r->cap)
		return 0;
	size_t cap = r->cap ? r->cap : 4096;
	while (cap < need)
		cap *= 2;
	uint8_t *b = realloc(r->buf, cap);
	if (!b)
		return -ENOMEM;
	r->buf = b;
	r->cap = cap;
	return 0;
}

int bc_reader_feed(struct bc_reader *r, const uint8_t *data, size_t len, bc_reader_cb cb, void *arg,
		   const char **ret_reason)
{
	/* The buffer holds at most one incomplete message (its header already validated
	 * when it is complete) plus this slice. */
	if (!len)
		return 0; /* what is buffered was already found incomplete */
	if (reader_reserve(r, r->len + len) < 0) {
		*ret_reason = "out of memory";
		return -ENOMEM;
	}
	memcpy(r->buf + r->len, data, len);
	r->len += len;
	size_t pos = 0;
	int err = 0;
	while (pos < r->len) {
		struct bc_header h;
		err = bc_header_parse(r->buf + pos, r->len - pos, &h, ret_reason);
		if (err == -EAGAIN) {
			err = 0;
			break;
		}
		if (err < 0)
			break;
		size_t need = h.header_len + (size_t)h.body_len;
		if (r->len - pos < need)
			break;
		err = cb(arg, &h, r->buf + pos + h.header_len, ret_reason);
		if (err < 0)
			break;
		pos += need;
	}
	memmove(r->buf, r->buf + pos, r->len - pos);
	r->len -= pos;
	if (r->cap > 65536 && r->len < r->cap / 4) {
		/* Give back the room of a large message once it has passed. */
		uint8_t *b = realloc(r->buf, r->len > 4096 ? r->len : 4096);
		if (b) {
			r->buf = b;
			r->cap = r->len > 4096 ? r->len : 4096;
		}
	}
	return err;
}

void bc_reader_free(struct bc_reader *r)
{
	free(r->buf);
	*r = (struct bc_reader){0};
}
