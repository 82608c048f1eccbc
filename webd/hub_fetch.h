/* A hub's GET requests to its sites (docs/decisions/0033): libcurl (loaded on first use,
 * curl_lib.h) on webd's loop, each request with its own timeout and a bound on the
 * answer's bytes, any number of sites in parallel, at most HUB_SITE_INFLIGHT requests
 * in flight per site (one more fails at once: a slow site never queues work without
 * bound). The answer goes to a callback, once, unless the request was cancelled. */
#ifndef KP_WEBD_HUB_FETCH_H
#define KP_WEBD_HUB_FETCH_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
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

/* A connection to the site alone (TCP, and TLS for https, checked against the site's
 * CA), for hub_ws.c to speak its WebSocket on: cb gets the connection (conn, and its
 * socket) or why not. The connection is the caller's from then on: hub_conn_send and
 * hub_conn_recv move bytes (-EAGAIN when the socket is not ready), hub_conn_close ends
 * it. hub_get_cancel before cb ends the attempt. */
struct hub_conn;
typedef void (*hub_conn_cb)(void *arg, struct hub_conn *conn, int fd, const char *why);
struct hub_get *hub_conn_start(const kp_HubSite *site, unsigned *inflight, unsigned timeout_ms, hub_conn_cb cb,
			       void *arg, char *why, size_t why_len);
ssize_t hub_conn_send(struct hub_conn *c, const void *p, size_t n);
ssize_t hub_conn_recv(struct hub_conn *c, void *p, size_t n);
void hub_conn_close(struct hub_conn *c);
void hub_fetch_close(void);

#endif
