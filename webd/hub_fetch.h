/* A hub's GET requests to its sites (docs/decisions/0033): libcurl (loaded on first use,
 * curl_lib.h) on webd's loop, each request with its own timeout and a bound on the
 * answer's bytes, any number of sites in parallel, at most HUB_SITE_INFLIGHT requests
 * in flight per site (one more fails at once: a slow site never queues work without
 * bound). The answer goes to a callback, once, unless the request was cancelled. */
#ifndef KP_WEBD_HUB_FETCH_H
#define KP_WEBD_HUB_FETCH_H

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "keeppeek.pb.h"

#define HUB_SITE_INFLIGHT 32

struct hub_get;

/* status: the site's HTTP status, 0 when none came; why: NULL on an answer (any
 * status), else the reason none came (timeout, refused, too large, ...). body is the
 * callback's for the call only. ms: the request's duration. */
typedef void (*hub_get_cb)(void *arg, long status, const char *why, const char *body, size_t len, uint64_t ms);

void hub_fetch_init(uv_loop_t *loop);
/* GET site->url + path with the site's token. NULL (cb not called) when it cannot
 * start: why says why (libcurl missing, HUB_SITE_INFLIGHT in flight, no memory). */
struct hub_get *hub_get_start(const kp_HubSite *site, unsigned *inflight, const char *path, unsigned timeout_ms,
			      size_t max_bytes, hub_get_cb cb, void *arg, char *why, size_t why_len);
/* The request ends now; its callback is not called. */
void hub_get_cancel(struct hub_get *g);
void hub_fetch_close(void);

#endif
