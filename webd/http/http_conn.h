/* The connection, request and WebSocket structures shared by the HTTP core's files
 * (not by the application, which uses http.h): http_server.c (listener, connections,
 * ceilings, dispatch), http_reply.c (answers and streamed answers), http_ws.c
 * (WebSockets), http_tls.c (TLS on memory BIOs). */
#ifndef KP_WEB_HTTP_CONN_H
#define KP_WEB_HTTP_CONN_H

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "http.h"
#include "http_parse.h"
#include "web_limits.h"

enum conn_state {
	CONN_HEAD,    /* reading a request head (read deadline running) */
	CONN_AUTH,    /* waiting for the authentication hook */
	CONN_BODY,    /* reading the request body */
	CONN_HANDLER, /* the route answers (now or later) */
	CONN_WS,      /* a WebSocket */
	CONN_ENDING,  /* answer queued, then shutdown */
	CONN_DRAIN,   /* shut down for writing; reading and discarding before close */
};

struct piece {
	struct piece *next;
	int fd; /* -1: bytes */
	uint64_t off, len;
	uint8_t bytes[];
};

struct web_req {
	struct conn *c;
	uint64_t id;
	enum web_method method;
	char *store; /* path, query, header names and values, NUL-terminated */
	const char *path, *query;
	const char *hname[KP_HTTP_MAX_HEADERS], *hval[KP_HTTP_MAX_HEADERS];
	unsigned nheaders;
	unsigned minor;
	bool keep_alive;
	uint8_t *body;
	size_t body_len, body_need;
	uint64_t body_start_ms;
	const struct web_route *route;
	struct web_principal principal;
	bool have_principal;
	bool counted; /* holds one of the KP_HTTP_MAX_HANDLERS slots */
	size_t body_reserved;
	/* streamed answer */
	bool streaming, chunked, ended;
	struct piece *ph, *pt;
	unsigned npieces;
};

struct web_ws {
	struct conn *c;
	uint64_t id;
	struct web_req *up; /* the upgrade request: headers, principal */
	const struct web_ws_route *route;
	void *user;
	bool authed, opened, closing;
	unsigned q_items;
	size_t q_bytes;
	uint8_t *msg;
	size_t msg_len;
	int msg_op; /* 0: none in progress */
};

/* The unit the per-address cap counts: an IPv4 address (also IPv4-mapped IPv6) or the
 * first 64 bits of an IPv6 address. */
struct addr_key {
	uint8_t family; /* 4, 6, or 0 when unknown */
	uint8_t b[8];
};

struct conn {
	uv_tcp_t tcp;
	uv_shutdown_t shut;
	struct conn *prev, *next;
	uint64_t id;
	char addr[64];
	struct addr_key key;
	bool trusted;      /* a request on it was authenticated: never evicted, not capped */
	bool head_started; /* the request head's deadline (WEB_HEAD_SECS) is running */
	uint64_t since_ms; /* when the connection began waiting for its current request */
	char *in;
	size_t in_len;
	struct http_head ph;
	enum conn_state state;
	uint64_t read_deadline_ms;  /* 0: none */
	uint64_t write_progress_ms; /* last time pending output moved */
	size_t out_pending;
	struct web_req *req;
	struct web_ws *ws;
	bool reading, closing, in_process;
	bool failed; /* a write failed: closed by the next sweep, writes refused */
	void *tls;   /* SSL *, NULL on plain connections */
	uint8_t *tls_scratch;
};

extern struct conn *conn_list;
/* What the application handed to web_server_open. */
extern const struct web_server_def *web_def;
extern void *web_app;

/* Queues bytes for the client (encrypted when TLS); ws: decrement that ws's queue on
 * completion. Returns 0 or a negative errno (the connection is then being closed). */
int conn_send(struct conn *c, const void *data, size_t len, struct web_ws *ws);
void conn_close(struct conn *c);
/* After everything queued is written: shut down, drain briefly, close. */
void conn_end(struct conn *c);
/* Continues parsing/dispatching buffered input and resumes reading when appropriate. */
void conn_process(struct conn *c);
void conn_count_status(int status);
/* Counts a refusal or cut of that ceiling and logs it, at most one line per ceiling every
 * WEB_LOG_INTERVAL_MS (the line says how many were not logged since the last). */
void web_limit_hit(enum web_limit l, const char *addr, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Gives back the request's handler slot and body memory. */
void conn_release_body(struct web_req *r);

/* http_reply.c */
void req_free(struct web_req *r);
void req_finish(struct web_req *r);
void stream_pump(struct web_req *r);
/* An answer straight from the server (no route), then close: 400, 413, 431, 503, ... */
void conn_reply_error_close(struct conn *c, int status, const char *code, const char *msg, const char *extra);
const char *http_status_text(int status);

/* http_ws.c */
bool ws_is_upgrade(const struct web_req *r);
void ws_start(struct conn *c, struct web_req *r, const struct web_ws_route *route);
/* Parses buffered frames; returns when more input is needed or the ws stops reading. */
void ws_input(struct conn *c);
void ws_free(struct web_ws *ws);

/* http_tls.c */
int tls_open(const char *cert, const char *key);
void tls_close(void);
bool tls_enabled(void);
int tls_conn_init(struct conn *c);
void tls_conn_free(struct conn *c);
/* Ciphertext in: decrypts into c->in as far as it has room; -errno on a TLS failure. */
int tls_input(struct conn *c, const uint8_t *data, size_t len);
/* Decrypts more of what is already buffered (after c->in was consumed). */
int tls_drain(struct conn *c);
int tls_send(struct conn *c, const void *data, size_t len, struct web_ws *ws);
/* Raw write (ciphertext on TLS connections); ws_len: the plaintext bytes of ws's queue
 * this write completes (http_server.c). */
int conn_write_raw(struct conn *c, const void *data, size_t len, struct web_ws *ws, size_t ws_len);

#endif
