/* The data routes' handlers, by file: routes_data.c (table, coverage, recordings,
 * delete), routes_events.c (publish, search, event parts), routes_export.c (export). */
#ifndef KP_WEBD_ROUTES_DATA_H
#define KP_WEBD_ROUTES_DATA_H

#include "webd.h"
#include "kp_limits.h"

/* POST /api/v1/events body ceiling: the largest JPEG as base64 (4 bytes per 3, the
 * largest of the three encodings), plus 64 KiB for the event, multipart headers and
 * JSON escapes. A JPEG over KP_ANALYSIS_JPEG_MAX inside a body under this ceiling gets
 * 413 from the route itself. */
#define WEBD_EVENT_ENVELOPE_MAX (64 * KP_KIB)
#define WEBD_PUBLISH_MAX_BODY   (4 * ((KP_ANALYSIS_JPEG_MAX + 2) / 3) + WEBD_EVENT_ENVELOPE_MAX)

void webd_route_events_publish(struct web_req *r);
void webd_route_events_search(struct web_req *r);
void webd_route_event_get(struct web_req *r);
void webd_route_export(struct web_req *r);

#endif
