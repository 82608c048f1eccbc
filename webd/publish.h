/* The three encodings of POST /api/v1/events read into one EventRecord plus the JPEG:
 * JSON (publish_json.c: SPEC 7's shape, JPEG as "jpeg_base64"), multipart/form-data
 * (publish_multipart.c: an "event" JSON part and a "jpeg" part) and protobuf
 * (publish_proto.c: keeppeek.analysis.PublishEvent). All are pure (no I/O), bounded by
 * the caller's buffers, and fuzzed. publish_jpeg.c checks the JPEG. */
#ifndef KP_WEBD_PUBLISH_H
#define KP_WEBD_PUBLISH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "keeppeek.pb.h"

struct webd_publish {
	kp_EventRecord ev;
	const uint8_t *jpeg; /* NULL: none; else into the body or into jpeg_buf */
	size_t jpeg_len;
	uint8_t *jpeg_buf; /* the caller's buffer for a JPEG that must be decoded */
	size_t jpeg_cap;   /* its size: KP_ANALYSIS_JPEG_MAX */
};

struct publish_err {
	int status;       /* 400 or 413 */
	const char *code; /* "bad_json", "jpeg_too_large", ... */
	char why[200];
};

/* Each returns 0, or -1 with e filled. */
int webd_publish_json(const uint8_t *body, size_t len, struct webd_publish *p, struct publish_err *e);
/* content_type: the request's header, for its boundary parameter. */
int webd_publish_multipart(const uint8_t *body, size_t len, const char *content_type, struct webd_publish *p,
			   struct publish_err *e);
int webd_publish_proto(const uint8_t *body, size_t len, struct webd_publish *p, struct publish_err *e);

/* SOI at the start, EOI at the end, and a header libturbojpeg reads; sets the size. */
int webd_publish_jpeg_check(const uint8_t *jpeg, size_t len, uint32_t *width, uint32_t *height, struct publish_err *e);

/* Shared by the readers: an error with a formatted reason; returns -1. */
int webd_publish_fail(struct publish_err *e, int status, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* "main"/"sub" (or "0"/"1", or empty: main) into ev.stream; -1 otherwise. */
int webd_publish_stream(const char *name, uint32_t *stream);

#endif
