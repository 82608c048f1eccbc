/* Which access units read from libavformat are delivered, pure code. Each one is held
 * until the next is read: libavformat's parser completes an access unit when the next
 * begins, and when the connection ends it hands over what it holds, complete or cut,
 * in the same way; so the held one is dropped at the end, never delivered. After RTP
 * packets are reported missing, the access unit being read and every one after it up
 * to a keyframe (not the very next one) are dropped: a decoder could not use them. */
#ifndef KP_INGEST_RTSP_GATE_H
#define KP_INGEST_RTSP_GATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../camera.h" /* ingestd/camera.h, not the test camera's */

struct rtsp_gate {
	uint8_t *buf[2]; /* buf[cur]: the held access unit's bytes; the other: the last delivered */
	size_t cap[2];
	unsigned cur;
	struct kp_access_unit held;
	bool have;
	bool lost;             /* packets went missing since the last access unit was read */
	unsigned skip_any;     /* access units to drop whatever they are */
	bool skip_to_keyframe; /* then drop up to a keyframe */
};

/* RTP packets of the stream were reported missing. */
void rtsp_gate_lost(struct rtsp_gate *g);

/* Before an access unit just read is built: false when it is to be dropped for loss
 * (counted in *ret_dropped), true when it goes on to rtsp_gate_push. */
bool rtsp_gate_admit(struct rtsp_gate *g, bool keyframe, uint64_t *ret_dropped);

/* The held access unit, now: after a drop, so that it is not kept waiting up to a
 * keyframe. Returns true with *out set (bytes valid until the next push). */
bool rtsp_gate_release(struct rtsp_gate *g, struct kp_access_unit *out);

/* Holds an admitted access unit. Returns 1 with *out set to the one held before (its
 * bytes valid until the next push), or 0 when none was held. One that cannot be held
 * (out of memory) is dropped, counted in *ret_dropped, and the stream resumes at a
 * keyframe. */
int rtsp_gate_push(struct rtsp_gate *g, const struct kp_access_unit *au, struct kp_access_unit *out,
		   uint64_t *ret_dropped);

/* The connection ended: drops the held access unit. Returns its size, 0 if none. */
size_t rtsp_gate_end(struct rtsp_gate *g);

void rtsp_gate_free(struct rtsp_gate *g);

#endif
