/* recorderd's answer to `keeppeekctl events search`, relayed by the supervisor as an
 * EventSearch on its link: the same search as webd's, rendered by the same common
 * renderer (common/catalog_json.h; docs/queries.md) into the JSON keeppeekctl reads, sent
 * back as RecorderReply pieces with keeppeekctl's exit code (0 found or not, 1 catalog
 * failure, 2 a bad filter or cursor). A page whose JSON would pass REC_EVENTS_ANSWER_MAX
 * is asked again with half the limit: it then holds fewer events and a next_cursor.
 * That ceiling is what the supervisor can queue to a control client in one answer
 * (supervisor/control.c), below the link's KP_IPC_TAIL_MAX_CONTROL. */
#ifndef KP_REC_REQUESTS_EVENTS_H
#define KP_REC_REQUESTS_EVENTS_H

#include "kp_limits.h"
#include "worker.h"

#define REC_EVENTS_ANSWER_MAX (256 * KP_KIB)

struct cat;

void rec_request_event_search(struct kp_worker *w, struct cat *cat, const kp_EventSearch *s);

#endif
