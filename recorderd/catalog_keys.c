/* Big-endian catalog keys (see catalog_keys.h). */
#include "catalog_keys.h"

#include <errno.h>
#include <string.h>

void cat_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

void cat_be64(uint8_t *p, uint64_t v)
{
	cat_be32(p, (uint32_t)(v >> 32));
	cat_be32(p + 4, (uint32_t)v);
}

uint32_t cat_get_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

uint64_t cat_get_be64(const uint8_t *p)
{
	return (uint64_t)cat_get_be32(p) << 32 | cat_get_be32(p + 4);
}

void cat_be_time(uint8_t *p, int64_t ms)
{
	cat_be64(p, (uint64_t)ms ^ (1ull << 63));
}

int64_t cat_get_be_time(const uint8_t *p)
{
	return (int64_t)(cat_get_be64(p) ^ (1ull << 63));
}

void cat_key_rec_by_stream(uint8_t k[CAT_KEY_REC_BY_STREAM], uint32_t stream_id, int64_t start_ms, uint64_t id)
{
	cat_be32(k, stream_id);
	cat_be_time(k + 4, start_ms);
	cat_be64(k + 12, id);
}

void cat_key_fragment(uint8_t k[CAT_KEY_FRAGMENT], uint64_t recording_id, uint32_t seq)
{
	cat_be64(k, recording_id);
	cat_be32(k + 8, seq);
}

void cat_key_keyframe(uint8_t k[CAT_KEY_KEYFRAME], uint32_t stream_id, int64_t ms)
{
	cat_be32(k, stream_id);
	cat_be_time(k + 4, ms);
}

void cat_key_event_by_time(uint8_t k[CAT_KEY_EVENT_BY_TIME], int64_t start_ms, uint64_t seq)
{
	cat_be_time(k, start_ms);
	cat_be64(k + 8, seq);
}

void cat_key_event_by_cam(uint8_t k[CAT_KEY_EVENT_BY_CAM], uint32_t camera_id, int64_t start_ms, uint64_t seq)
{
	cat_be32(k, camera_id);
	cat_be_time(k + 4, start_ms);
	cat_be64(k + 12, seq);
}

void cat_key_event_link(uint8_t k[CAT_KEY_EVENT_LINK], uint64_t seq, uint32_t stream)
{
	cat_be64(k, seq);
	cat_be32(k + 8, stream);
}

size_t cat_key_term(uint8_t k[CAT_KEY_TERM_MAX], const char *term, int64_t start_ms, uint64_t seq)
{
	size_t n = strnlen(term, CAT_KEY_TERM_MAX - 17);
	memcpy(k, term, n);
	k[n] = 0;
	cat_be_time(k + n + 1, start_ms);
	cat_be64(k + n + 9, seq);
	return n + 17;
}

int cat_parse_term_key(const uint8_t *k, size_t len, size_t *ret_term_len, int64_t *ret_start_ms, uint64_t *ret_seq)
{
	if (len < 18 || len > CAT_KEY_TERM_MAX || k[len - 17] != 0 || memchr(k, 0, len - 17))
		return -EBADMSG;
	*ret_term_len = len - 17;
	*ret_start_ms = cat_get_be_time(k + len - 16);
	*ret_seq = cat_get_be64(k + len - 8);
	return 0;
}

void cat_key_cov_ranges(uint8_t k[CAT_KEY_COV_RANGES], uint32_t stream_id)
{
	cat_be32(k, stream_id);
	k[4] = 0;
}

void cat_key_cov_bucket(uint8_t k[CAT_KEY_COV_BUCKET], uint32_t stream_id, int64_t bucket_ms)
{
	cat_be32(k, stream_id);
	k[4] = 1;
	cat_be_time(k + 5, bucket_ms);
}
