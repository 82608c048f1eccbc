/* Checks of untrusted event input from webd, before anything is stored: the event id's
 * charset, the times, and the JPEG (size, SOI/EOI markers, a header libturbojpeg
 * parses); and the opaque search cursor (encode/decode). Each failure has a stable
 * error code and a sentence (docs/queries.md). Fuzzed by fuzz_rec_event_check.c. */
#ifndef KP_REC_EVENT_CHECK_H
#define KP_REC_EVENT_CHECK_H

#include <stddef.h>
#include <stdint.h>

#include "keeppeek.pb.h"

#define REC_EVENT_MAX_SPAN_MS (24ll * 3600 * 1000)
#define REC_EVENT_EARLIEST_MS 946684800000ll       /* 2000-01-01T00:00:00Z */
#define REC_EVENT_AHEAD_MS    (24ll * 3600 * 1000) /* a detector's clock ahead of ours */
#define REC_CURSOR_LEN        36                   /* "c1." + 16 hex + "." + 16 hex */

struct rec_reject {
	kp_CatalogResult result; /* CATALOG_BAD_REQUEST, CATALOG_TOO_LARGE */
	const char *code;        /* "bad_jpeg", ... */
	char why[160];
};

/* 0 when id is [A-Za-z0-9._:-]{1,64}. */
int rec_event_id_ok(const char *id);
/* 0, or -EINVAL with *rej filled: start_ms from 2000-01-01 (REC_EVENT_EARLIEST_MS) to
 * one day after now_ms, end_ms 0 (open) or from start_ms to 24 hours after it. */
int rec_event_times_check(int64_t start_ms, int64_t end_ms, int64_t now_ms, struct rec_reject *rej);
/* 0 with the picture size, or -EINVAL/-EMSGSIZE with *rej filled. */
int rec_jpeg_check(const uint8_t *p, size_t len, uint32_t *ret_width, uint32_t *ret_height, struct rec_reject *rej);

void rec_cursor_encode(int64_t start_ms, uint64_t seq, char out[REC_CURSOR_LEN + 1]);
/* -EINVAL unless s is exactly what rec_cursor_encode writes. */
int rec_cursor_decode(const char *s, int64_t *ret_start_ms, uint64_t *ret_seq);

#endif
