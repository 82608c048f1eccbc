/* webd's internals shared by its core files (not by the route modules, which use
 * http.h): the counters /metrics shows, the listener's life cycle, static files, and how
 * auth.c attaches a principal to a request or WebSocket. */
#ifndef KP_WEBD_SERVER_H
#define KP_WEBD_SERVER_H

#include <stdint.h>

#include "http.h"

/* Every ceiling webd enforces, named as in keeppeek_limit_rejections_total{limit=...}. */
enum web_limit {
	WEB_LIMIT_CONNECTIONS,
	WEB_LIMIT_READ_TIMEOUT,
	WEB_LIMIT_WRITE_TIMEOUT,
	WEB_LIMIT_REQUEST_LINE,
	WEB_LIMIT_HEADER_LINE,
	WEB_LIMIT_HEADER_BYTES,
	WEB_LIMIT_HEADER_COUNT,
	WEB_LIMIT_HANDLERS,
	WEB_LIMIT_BODY,
	WEB_LIMIT_BODY_MEMORY,
	WEB_LIMIT_WS_MESSAGE,
	WEB_LIMIT_WS_QUEUE,
	WEB_LIMIT_CONNECTIONS_PER_ADDRESS,
	WEB_LIMIT_CONNECTIONS_EVICTED,
	WEB_LIMIT_BODY_RATE,
	WEB_LIMIT_HANDLERS_RESERVE,
	WEB_LIMIT_COUNT
};

struct webd_counters {
	uint64_t responses[6]; /* by status class: [1] 1xx ... [5] 5xx */
	uint64_t connections_accepted;
	unsigned connections_active;
	unsigned connections_anonymous; /* of those: not yet shown valid credentials */
	unsigned handlers_active;
	uint64_t limit_rejections[WEB_LIMIT_COUNT];
	uint64_t ws_opened;
	unsigned ws_active_live, ws_active_rtc, ws_active_other;
	uint64_t bytes_in, bytes_out;
};

extern struct webd_counters webd_counters;
extern const char *const web_limit_names[WEB_LIMIT_COUNT];

/* http_server.c: binds the listeners and loads TLS (before confinement), then serves. */
int webd_server_open(struct kp_worker *w, const kp_WorkerConfig *cfg);
void webd_server_close(void);
void web_req_set_principal(struct web_req *r, const struct web_principal *p);
void web_ws_set_principal(struct web_ws *ws, const struct web_principal *p);
/* The WebSocket's route path ("/api/v1/live"). */
const char *web_ws_path(const struct web_ws *ws);

/* static_files.c: GET/HEAD of a file under www_dir (index.html for directories). */
void webd_static_init(const char *www_dir);
void webd_static_serve(struct web_req *r);

/* answers.c: frames from the supervisor or a peer that may be answers; 1 when taken. */
int webd_answer_frame(struct kp_ipc_frame *f);
void webd_answers_init(uv_loop_t *loop);
/* The link to peer dropped: every question waiting for it ends now (f == NULL). */
void webd_answers_peer_lost(kp_Peer peer);
void webd_answers_close(void);

#endif
