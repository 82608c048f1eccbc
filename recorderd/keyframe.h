/* Keyframe lookup: a camera stream and a time (or an event id and a stream) -> the exact
 * encoded bytes of the keyframe that starts the GOP covering that time: catalog resolve
 * in one read transaction, open, one pread of the catalogued byte range. The bytes are
 * the camera's NAL units as stored in the MP4 sample (4-byte lengths);
 * h26x_sample_to_annexb (common/h26x.h) turns them into what the camera sent (start codes). Used by
 * keeppeekctl keyframe; unit-tested against the fixture's keyframes. */
#ifndef KP_REC_KEYFRAME_H
#define KP_REC_KEYFRAME_H

#include <stddef.h>
#include <stdint.h>

#include "catalog.h"

struct rec_keyframe {
	int64_t ms;       /* the keyframe's time */
	int64_t until_ms; /* the end of its GOP as recorded so far (of its fragments without a keyframe) */
	uint64_t recording_id;
	uint32_t seq;
	uint32_t codec; /* enum kp_codec */
	uint64_t offset;
	uint32_t length;
	uint32_t rec_flags; /* its recording's CAT_REC_* */
	char path[CAT_PATH_MAX];
};

/* -ENOENT when no fragment of the stream covers ms. */
int rec_keyframe_find(struct cat *cat, uint32_t stream_id, int64_t ms, struct rec_keyframe *ret);
/* The same inside a transaction. */
int rec_keyframe_find_txn(struct cat_txn *t, uint32_t stream_id, int64_t ms, struct rec_keyframe *ret);
/* The keyframe for an event and a stream (0 main, 1 sub): through the event->keyframe
 * link made at its commit, else (the GOP was not indexed yet then) the keyframe at or
 * before the event's start. -ENOENT when there is none (any more). -EAGAIN when there is
 * no link and nothing of the stream is recorded from the event's start on yet: the GOP
 * that holds it may still be being written (it commits when the next keyframe comes),
 * or may never be; ret->ms is then the event's start. */
int rec_keyframe_find_event(struct cat *cat, const char *event_id, uint32_t stream, struct rec_keyframe *ret);
/* Reads exactly k->length bytes into buf, from its recording's file (local recordings
 * only: tier_cache.h reads remote ones) or from fd, a file laid out as the recording. */
int rec_keyframe_read(int data_dirfd, const struct rec_keyframe *k, uint8_t *buf);
int rec_keyframe_read_fd(int fd, const struct rec_keyframe *k, uint8_t *buf);

#endif
