/* Catalog key encoding: big-endian fixed-width fields so that LMDB's byte order is the
 * numeric order and every "one stream, a time range" question is one range scan. The
 * layout is documented in docs/catalog.md. Pure; unit-tested by test_rec_catalog.c. */
#ifndef KP_REC_CATALOG_KEYS_H
#define KP_REC_CATALOG_KEYS_H

#include <stddef.h>
#include <stdint.h>

/* A stream's id: its camera's id and the stream index (0 main, 1 sub). */
static inline uint32_t cat_stream_id(uint32_t camera_id, uint32_t stream)
{
	return camera_id << 8 | (stream & 0xff);
}

void cat_be32(uint8_t *p, uint32_t v);
void cat_be64(uint8_t *p, uint64_t v);
uint32_t cat_get_be32(const uint8_t *p);
uint64_t cat_get_be64(const uint8_t *p);

/* Times are signed milliseconds; their keys flip the sign bit so negative sorts first. */
void cat_be_time(uint8_t *p, int64_t ms);
int64_t cat_get_be_time(const uint8_t *p);

#define CAT_KEY_RECORDING     8  /* recordings: id */
#define CAT_KEY_REC_BY_STREAM 20 /* rec_by_stream: stream, start, id */
#define CAT_KEY_FRAGMENT      12 /* fragments: recording id, sequence */
#define CAT_KEY_KEYFRAME      12 /* keyframes: stream, time */
#define CAT_KEY_EVENT_BY_TIME 16 /* events_by_time: start, seq */
#define CAT_KEY_EVENT_BY_CAM  20 /* events_by_camera: camera, start, seq */
#define CAT_KEY_EVENT_LINK    12 /* event_keyframes: seq, stream */
#define CAT_KEY_TERM_MAX      81 /* event_terms: term (1..64 bytes), 0x00, start, seq */
#define CAT_KEY_COV_RANGES    5  /* coverage: stream, 0 */
#define CAT_KEY_COV_BUCKET    13 /* coverage: stream, 1, bucket start */

void cat_key_rec_by_stream(uint8_t k[CAT_KEY_REC_BY_STREAM], uint32_t stream_id, int64_t start_ms, uint64_t id);
void cat_key_fragment(uint8_t k[CAT_KEY_FRAGMENT], uint64_t recording_id, uint32_t seq);
void cat_key_keyframe(uint8_t k[CAT_KEY_KEYFRAME], uint32_t stream_id, int64_t ms);
void cat_key_event_by_time(uint8_t k[CAT_KEY_EVENT_BY_TIME], int64_t start_ms, uint64_t seq);
void cat_key_event_by_cam(uint8_t k[CAT_KEY_EVENT_BY_CAM], uint32_t camera_id, int64_t start_ms, uint64_t seq);
void cat_key_event_link(uint8_t k[CAT_KEY_EVENT_LINK], uint64_t seq, uint32_t stream);
/* Returns the key length; the term is cut at 64 bytes. */
size_t cat_key_term(uint8_t k[CAT_KEY_TERM_MAX], const char *term, int64_t start_ms, uint64_t seq);
/* Splits a term key; -EBADMSG when it is not one. */
int cat_parse_term_key(const uint8_t *k, size_t len, size_t *ret_term_len, int64_t *ret_start_ms, uint64_t *ret_seq);
void cat_key_cov_ranges(uint8_t k[CAT_KEY_COV_RANGES], uint32_t stream_id);
void cat_key_cov_bucket(uint8_t k[CAT_KEY_COV_BUCKET], uint32_t stream_id, int64_t bucket_ms);

#endif
