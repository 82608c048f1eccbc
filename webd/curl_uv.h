/* libcurl's multi interface on webd's libuv loop: a uv_poll for each socket libcurl
 * names and one timer, shared by the webhooks and the hub's requests (each with a multi
 * handle of its own, so that neither waits for the other's transfers). The owner makes
 * the multi handle and the timer; after every socket or timer action curl_uv calls the
 * owner's done() to read the finished transfers. */
#ifndef WEBD_CURL_UV_H
#define WEBD_CURL_UV_H

#include <uv.h>

#include "curl_lib.h"

struct curl_uv {
	uv_loop_t *loop;
	CURLM *multi;     /* NULL until the owner has libcurl */
	uv_timer_t timer; /* initialised by the owner on loop */
	const struct webd_curl *k;
	const char *who; /* for log lines: "webhook", "hub" */
	void (*done)(void);
};

/* Hands c->multi's socket and timer callbacks to c (c->multi, k, timer set). */
void curl_uv_drive(struct curl_uv *c);

#endif
