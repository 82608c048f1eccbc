/* An EventRecord as the event JSON of docs/queries.md (the shape recorderd answers for
 * searches), for the live fan-out. */
#ifndef KP_WEBD_EVENT_JSON_H
#define KP_WEBD_EVENT_JSON_H

#include <stddef.h>

#include "json.h"
#include "keeppeek.pb.h"

/* Room for the largest EventRecord nanopb can hold, every character escaped. */
#define WEBD_EVENT_JSON_MAX (64 * 1024)

void webd_event_json(struct json_w *w, const kp_EventRecord *e, size_t jpeg_bytes);

/* "main" or "sub" */
const char *webd_stream_name(uint32_t stream);

#endif
