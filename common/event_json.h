/* The event JSON of docs/queries.md ("The event JSON"), rendered in this one place for
 * recorderd's search and get answers and webd's live fan-out. */
#ifndef KP_EVENT_JSON_H
#define KP_EVENT_JSON_H

#include <stddef.h>

#include "json.h"
#include "keeppeek.pb.h"

/* Room for the largest EventRecord nanopb can hold, every character escaped, with its
 * keyframe links. */
#define KP_EVENT_JSON_MAX (64 * 1024)

/* e as stored (end_ms 0 is answered as start_ms, as the catalog stores it), jpeg_bytes
 * its JPEG's size (0: none), kf[0..nkf) its keyframe links. Scores and box coordinates
 * are written with "%.6g" (docs/events-api.md). */
void kp_event_json(struct json_w *w, const kp_EventRecord *e, size_t jpeg_bytes, const kp_EventKeyframe *kf,
		   size_t nkf);

/* "main" or "sub" */
const char *kp_stream_name(uint32_t stream);

#endif
