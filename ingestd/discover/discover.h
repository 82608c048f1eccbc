/* ingestd's search for cameras on the local segments (discover.c). */
#ifndef KP_ING_DISCOVER_H
#define KP_ING_DISCOVER_H

#include "keeppeek.pb.h"
#include "worker.h"

/* Starts a search; the answer goes to the supervisor as DiscoverFound pieces. */
void ing_discover(struct kp_worker *w, const kp_DiscoverRequest *rq);
/* Closes the search's handles (the worker is stopping). */
void ing_discover_stop(void);

#endif
