/* The event JSON of docs/queries.md ("The event JSON"), from its stored record. */
#ifndef KP_REC_EVENT_JSON_H
#define KP_REC_EVENT_JSON_H

#include "catalog_events.h"
#include "jbuf.h"

/* links: the event's keyframe links (n of them). */
void rec_event_json(struct jbuf *b, const kp_EventRecord *ev, const struct cat_event_row *row,
		    const struct cat_event_link *links, unsigned nlinks);

#endif
