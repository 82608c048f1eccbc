/* The request API webd's route modules program against: a request is handed to its
 * route's handler once authenticated and with its whole (bounded) body read; the handler
 * answers at once or later (after an IPC answer), by the request's id, which stays valid
 * until the answer is sent or the client goes away. WebSocket routes get open, message
 * and close callbacks and a bounded send queue. http_server.c implements it on
 * libwebsockets. */
#ifndef KP_WEBD_HTTP_H
#define KP_WEBD_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "keeppeek.pb.h"
#include "worker.h"

struct web_req;
struct web_ws;

enum web_method { WEB_GET = 1, WEB_HEAD = 2, WEB_POST = 4, WEB_DELETE = 8 };

/* Route flags. Every route needs a principal unless WEB_PUBLIC. */
#define WEB_PUBLIC  0x01u /* no authentication (/healthz, login) */
#define WEB_ADMIN   0x02u /* role admin required (403 otherwise) */
#define WEB_CHANGES 0x04u /* changes state: cross-site requests refused (CSRF) */
#define WEB_PREFIX  0x08u /* path matches as a prefix ("/api/v1/events/") */
#define WEB_HEALTH  0x10u /* may take the handler slots kept for health checks (/healthz) */
/* Publishes events: roles publisher and admin. Any other route needing a principal is
 * for viewers and admins. */
#define WEB_PUBLISH 0x20u

struct web_principal {
	char name[80]; /* user name or "token:NAME" */
	kp_Role role;
	bool via_token; /* Authorization: Bearer (not a cookie) */
};

typedef void (*web_handler)(struct web_req *r);

struct web_route {
	unsigned methods; /* enum web_method bits */
	const char *path;
	unsigned flags;
	size_t max_body; /* larger bodies get 413 before the handler runs */
	web_handler fn;
};

struct web_ws_route {
	const char *path;
	unsigned flags;
	void (*on_open)(struct web_ws *ws);
	void (*on_message)(struct web_ws *ws, bool binary, const uint8_t *data, size_t len);
	void (*on_close)(struct web_ws *ws);
};

/* Route tables of the modules, each ended by an entry with path NULL. */
extern const struct web_route webd_core_routes[];  /* /healthz, /metrics, cameras (core) */
extern const struct web_route webd_auth_routes[];  /* login, logout, session (auth.c) */
extern const struct web_route webd_data_routes[];  /* events, coverage, export, delete */
extern const struct web_ws_route webd_ws_routes[]; /* core's table naming the two below */

/* /api/v1/live: live event fan-out (live.c). */
void webd_live_open(struct web_ws *ws);
void webd_live_message(struct web_ws *ws, bool binary, const uint8_t *data, size_t len);
void webd_live_close(struct web_ws *ws);
/* Prometheus text of the live fan-out (subscribers, delivered, dropped, resyncs, queue
 * high-water marks and bounds) into buf, NUL-terminated (live.c). */
void webd_live_metrics(char *buf, size_t len);
/* /api/v1/rtc: WebRTC signaling relayed to rtcd (rtc_relay.c). */
void webd_rtc_open(struct web_ws *ws);
void webd_rtc_message(struct web_ws *ws, bool binary, const uint8_t *data, size_t len);
void webd_rtc_close(struct web_ws *ws);

/* The worker, for IPC from handlers. */
struct kp_worker *webd_worker(void);

/* ---- requests ---- */
uint64_t web_req_id(const struct web_req *r);
/* The request with that id, or NULL when it was answered or its client went away. */
struct web_req *web_req_find(uint64_t id);
enum web_method web_req_method(const struct web_req *r);
const char *web_req_path(const struct web_req *r); /* decoded, without the query */
/* A query parameter, URL-decoded: 1 found, 0 absent, -1 longer than len-1. */
int web_req_query(const struct web_req *r, const char *name, char *buf, size_t len);
/* A request header by lower-case name ("content-type"), or NULL. */
const char *web_req_header(const struct web_req *r, const char *name);
const uint8_t *web_req_body(const struct web_req *r, size_t *len);
const struct web_principal *web_req_principal(const struct web_req *r);
const char *web_req_client_addr(const struct web_req *r);
bool web_req_tls(const struct web_req *r);

/* One complete answer; extra_headers is "Name: value\r\n..." or NULL. The request is
 * finished afterwards (its id no longer found). */
void web_reply(struct web_req *r, int status, const char *content_type, const void *body, size_t len,
	       const char *extra_headers);
/* {"error": message, "code": code} with that status. */
void web_reply_error(struct web_req *r, int status, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* A streamed answer: begin with the total length (chunked when unknown: UINT64_MAX),
 * then pieces in order (bytes copied, or a byte range of a descriptor, which the stream
 * takes ownership of and closes), then end. Pieces are sent as the socket drains; at
 * most a few are read ahead. */
int web_stream_begin(struct web_req *r, int status, const char *content_type, uint64_t length,
		     const char *extra_headers);
int web_stream_bytes(struct web_req *r, const void *data, size_t len);
int web_stream_fd(struct web_req *r, int fd, uint64_t offset, uint64_t length);
void web_stream_end(struct web_req *r);

/* ---- WebSockets ---- */
uint64_t web_ws_id(const struct web_ws *ws);
struct web_ws *web_ws_find(uint64_t id);
const struct web_principal *web_ws_principal(const struct web_ws *ws);
const char *web_ws_client_addr(const struct web_ws *ws);
void web_ws_set_user(struct web_ws *ws, void *user);
void *web_ws_user(const struct web_ws *ws);
/* Queues one message. The queue is bounded by the caller's limits: -ENOBUFS when it
 * would hold more than max_items messages or max_bytes bytes (nothing queued). */
int web_ws_send(struct web_ws *ws, bool binary, const void *data, size_t len, unsigned max_items, size_t max_bytes);
void web_ws_queue_depth(const struct web_ws *ws, unsigned *items, size_t *bytes);
/* Closes with a status code and reason; on_close follows. */
void web_ws_close(struct web_ws *ws, int code, const char *reason);
/* Closes every WebSocket signed in as principal name; returns how many. */
unsigned web_ws_close_principal(const char *name, int code, const char *reason);

/* ---- IPC answers (answers.c) ----
 * A question to recorderd, rtcd or the supervisor (to) carries an id from
 * webd_answer_expect; every QueryReply, MediaPiece or AuthReply with that id goes to cb
 * (f->env, tail and fds as received; descriptors are the callback's to keep or close).
 * The registration ends after a piece with done set (AuthReply: after the one reply), on
 * cancel, after 30 s without an answer, or at once when the link to `to` drops: then cb
 * gets f == NULL once, and webd_answer_lost() tells which of the two it was.
 * webd_answer_expect returns 0 when 4096 questions already wait (answer 503 then). */
typedef void (*webd_answer_cb)(void *arg, struct kp_ipc_frame *f);
uint32_t webd_answer_expect(kp_Peer to, webd_answer_cb cb, void *arg);
void webd_answer_cancel(uint32_t id);
/* In a callback with f == NULL: true when the link dropped, false when time ran out. */
bool webd_answer_lost(void);

/* Frames that are not answers, routed by main.c. */
void webd_live_on_event(struct kp_ipc_frame *f); /* EventCommitted from recorderd */
void webd_rtc_on_signal(struct kp_ipc_frame *f); /* RtcSignal from rtcd */

/* ---- authentication (auth.c), called by the server for every non-public request ---- */
/* Resolves the principal from the Authorization header or the session cookie, checks the
 * route's role and CSRF flags, then calls done(r, 0) or done(r, status) with the request
 * already answered (401, 403). May answer asynchronously (after asking the supervisor). */
void webd_auth_check(struct web_req *r, unsigned route_flags, void (*done)(struct web_req *r, int status));
/* The same for an accepted WebSocket, before on_open; messages that arrive earlier are
 * held (bounded). On failure the server closes it (1008) with done's status. */
void webd_auth_ws(struct web_ws *ws, unsigned route_flags, void (*done)(struct web_ws *ws, int status));
/* The supervisor revoked principal's credentials: forget cached answers for it and close
 * its WebSockets (1008), so neither HTTP nor live video outlives the revocation. */
void webd_auth_revoked(const char *principal);
/* A header of the WebSocket's upgrade request (cookie, authorization, origin, ...). */
const char *web_ws_header(const struct web_ws *ws, const char *name);

#endif
