/* A hub's WebSocket to one site's /api/v1/rtc (docs/decisions/0033): the connection
 * made by libcurl (hub_fetch.h, TLS and the site's CA included), the upgrade and the
 * frames ours (hub_ws_frame.h), on webd's loop. Text messages only, each at most
 * KP_CONTROL_MESSAGE_MAX; what waits to be sent is bounded (HUB_WS_QUEUE_BYTES: one
 * more message is refused, not queued), so a stalled site never grows webd. */
#ifndef KP_WEBD_HUB_WS_H
#define KP_WEBD_HUB_WS_H

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "keeppeek.pb.h"

#define HUB_WS_QUEUE_BYTES (256 * 1024)

struct hub_ws;
struct hub_ws_ops {
	void (*on_message)(void *arg, const char *text, size_t len);
	/* Once, when the link ends for any reason but hub_ws_close: why in a sentence. */
	void (*on_close)(void *arg, const char *why);
};

void hub_ws_init(uv_loop_t *loop);
/* Starts the link; messages sent before it is up wait in the queue. NULL with why. */
struct hub_ws *hub_ws_open(const kp_HubSite *site, unsigned *inflight, unsigned timeout_ms,
			   const struct hub_ws_ops *ops, void *arg, char *why, size_t why_len);
/* Queues one text message: 0, -ENOBUFS (queue full), -EMSGSIZE (too large). */
int hub_ws_send(struct hub_ws *ws, const char *text, size_t len);
/* Ends the link; no callback follows. */
void hub_ws_close(struct hub_ws *ws);

#endif
