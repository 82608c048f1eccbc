/* A hub's sites (docs/decisions/0033): the [site "NAME"] sections from the WorkerConfig,
 * each one's state as its last answer left it (up, down, refused, bad answer), counted
 * for /metrics, and the fan-out of one browser request to several sites at once
 * (hub_fan_start), answered when every site asked has answered or timed out. */
#ifndef KP_WEBD_HUB_H
#define KP_WEBD_HUB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "http.h"
#include "keeppeek.pb.h"
#include "kp_limits.h"

enum hub_state { HUB_UNKNOWN, HUB_UP, HUB_DOWN, HUB_REFUSED, HUB_BAD_ANSWER };

void webd_hub_init(uv_loop_t *loop);
void webd_hub_configure(const kp_WorkerConfig *cfg);
void webd_hub_close(void);
/* Prometheus text per site: up, requests, failures, latency. */
void webd_hub_metrics(char *buf, size_t len);
bool webd_hub_enabled(void);
unsigned webd_hub_nsites(void);
const char *webd_hub_site_name(unsigned i);
/* The index of a site by name, or -1. */
int webd_hub_site_find(const char *name);

/* One site's part of a fan-out. */
struct hub_answer {
	bool asked;
	long status;     /* the site's HTTP status; 0: none */
	const char *why; /* no answer: why (static text) */
	char *body;      /* the answer (NUL-terminated), status 200 only */
	size_t len;
	uint64_t ms;
};
#define HUB_FAN_CTX 2048
struct hub_fan {
	uint64_t req; /* the browser's request (web_req_find) */
	unsigned pending;
	struct hub_answer a[KP_MAX_SITES];
	struct hub_get *gets[KP_MAX_SITES];
	void (*done)(struct web_req *r, struct hub_fan *f);
	unsigned char ctx[HUB_FAN_CTX]; /* the route's parameters */
};
/* For each site i: path(i, buf, cap, ctx) writes the site's path and query and returns 1
 * to ask it, 0 to leave it out. Each answer is bounded by max_bytes and given [hub]
 * timeout_ms, or min_timeout_ms when that is longer. done runs once,
 * when every site asked has answered (or at once when none was asked), with the request
 * still open; it answers it. ctx (ctx_len <= HUB_FAN_CTX bytes) is copied into the fan. */
void hub_fan_start(struct web_req *r, size_t max_bytes, unsigned min_timeout_ms,
		   int (*path)(unsigned i, char *buf, size_t cap, const void *ctx), const void *ctx, size_t ctx_len,
		   void (*done)(struct web_req *r, struct hub_fan *f));
/* The route's verdict on site i's answer: it was read (ok) or not (the answer could not
 * be read: state bad answer). Sets the site's state and counts it. */
void hub_site_verdict(unsigned i, const struct hub_answer *a, bool ok);
/* A signaling link to site i (hub_ws.h) under its timeout and in-flight bound. */
struct hub_ws_ops;
struct hub_ws *webd_hub_link_open(unsigned i, const struct hub_ws_ops *ops, void *arg, char *why, size_t why_len);
/* struct webd's rtc_divert and rtc_divert_end (hub_rtc.c). */
struct web_ws;
bool webd_hub_rtc_message(struct web_ws *ws, void **state, const uint8_t *data, size_t len);
void webd_hub_rtc_end(void *state);

/* {"name","state","error","latency_ms","checked_ms"} of site i, written to w. */
struct json_w;
void hub_site_json(unsigned i, struct json_w *w);

#endif
