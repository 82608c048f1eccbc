/* The API of the HTTP/1.1 + WebSocket + TLS core (webd/http/), which knows nothing of
 * the application above it: the application hands in, at web_server_open, its route
 * tables, its authentication hooks, a fallback for requests no route matches, and an
 * opaque pointer its handlers read back (web_req_app, web_ws_app). A request reaches its
 * route's handler once authenticated and with its whole (bounded) body read; the handler
 * answers at once or later, by the request's id, which stays valid until the answer is
 * sent or the client goes away. WebSocket routes get open, message and close callbacks
 * and a bounded send queue. One server per process, on the caller's libuv loop. */
#ifndef KP_WEB_HTTP_H
#define KP_WEB_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

struct web_req;
struct web_ws;

enum web_method { WEB_GET = 1, WEB_HEAD = 2, WEB_POST = 4, WEB_DELETE = 8 };

/* Route flags the core reads. Every other bit is the application's, handed to its
 * authentication hook with the request. */
#define WEB_PUBLIC 0x01u /* no authentication hook (/healthz, login) */
#define WEB_PREFIX 0x08u /* path matches as a prefix ("/api/v1/events/") */
#define WEB_HEALTH 0x10u /* may take the handler slots kept for health checks (/healthz) */

/* Who a request or WebSocket speaks for, as the authentication hook decided. The core
 * uses it only to tell signed-in from anonymous (handler reserves, per-address caps) and
 * to close WebSockets by name; role is the application's number. */
struct web_principal {
	char name[80];
	int role;
	bool via_token;
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

/* Open WebSockets are counted per WebSocket route, by its index in the table. */
#define WEB_WS_ROUTES_MAX 8

/* Every ceiling the core enforces. */
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

/* The ceilings' names ("connections", "read_timeout", ...), for metrics and log lines. */
extern const char *const web_limit_names[WEB_LIMIT_COUNT];

/* What the core counts; zeroed by web_server_open, read by the application's metrics. */
struct web_counters {
	uint64_t responses[6]; /* by status class: [1] 1xx ... [5] 5xx */
	uint64_t connections_accepted;
	unsigned connections_active;
	unsigned connections_anonymous; /* of those: not yet shown valid credentials */
	unsigned handlers_active;
	uint64_t limit_rejections[WEB_LIMIT_COUNT];
	uint64_t ws_opened;
	unsigned ws_active[WEB_WS_ROUTES_MAX]; /* by index in the WebSocket route table */
	uint64_t bytes_in, bytes_out;
};

extern struct web_counters web_counters;

/* What the application hands to the core. Hooks run on the loop thread. */
struct web_server_def {
	/* Route tables, each ended by an entry with path NULL; the list ends with NULL.
	 * Searched in order: the first route whose path and method match runs. */
	const struct web_route *const *routes;
	/* WebSocket routes (at most WEB_WS_ROUTES_MAX), ended by path NULL; or NULL. */
	const struct web_ws_route *ws_routes;
	/* Resolves the principal of a request to a non-public route (web_req_set_principal)
	 * and calls done(r, 0), or answers the request (401, 403, ...) and calls
	 * done(r, status). May answer later. NULL: every route is public. */
	void (*auth)(struct web_req *r, unsigned route_flags, void (*done)(struct web_req *r, int status));
	/* The same for an accepted WebSocket, before on_open; on a failure the core closes
	 * it (1008) with done's status. NULL: every WebSocket route is public. */
	void (*auth_ws)(struct web_ws *ws, unsigned route_flags, void (*done)(struct web_ws *ws, int status));
	/* GET and HEAD that no route matches (static files), run as a public handler with
	 * no body. NULL: 404. Other methods without a route always get 404. */
	web_handler fallback;
};

/* Listening sockets already bound (keeppeekd's, handed over with the configuration), one
 * per address of the next web_server_open's listen list, in order: that call serves on
 * them instead of binding. The core owns them from here. */
void web_server_adopt(const int *fds, unsigned n);

/* Adopted listeners only: the next web_server_open does not accept on them yet, and
 * connections wait in their backlog until web_server_accept (not refused meanwhile). */
void web_server_defer_accept(void);
/* Starts accepting on deferred listeners; once, later calls do nothing. Returns 0 or a
 * negative errno. */
int web_server_accept(void);

/* Binds every "HOST:PORT" or "[V6]:PORT" of the comma-separated listen list and loads
 * the TLS certificate and key unless both are "" (before confinement), then serves on
 * loop. app is what web_req_app and web_ws_app return. Returns 0 or a negative errno. */
int web_server_open(uv_loop_t *loop, const struct web_server_def *def, void *app, const char *listen,
		    const char *tls_cert, const char *tls_key);
/* The port listener n (in the order of the listen list) is bound to, or a negative
 * errno (for a listen list with port 0). */
int web_server_port(unsigned n);
/* Closes every connection and listener; the loop then has nothing of the server left
 * once it has run the close callbacks (and web_server_open may be called again). */
void web_server_close(void);

/* ---- requests ---- */
void *web_req_app(const struct web_req *r);
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
/* Called by the authentication hook: the request (and its connection, from now on)
 * speaks for p. */
void web_req_set_principal(struct web_req *r, const struct web_principal *p);
const char *web_req_client_addr(const struct web_req *r);
bool web_req_tls(const struct web_req *r);

/* One complete answer; extra_headers is "Name: value\r\n..." or NULL. The request is
 * finished afterwards (its id no longer found). */
void web_reply(struct web_req *r, int status, const char *content_type, const void *body, size_t len,
	       const char *extra_headers);
/* {"error": message, "code": code} with that status. */
void web_reply_error(struct web_req *r, int status, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* The same with extra header lines ("Retry-After: 1\r\n"). */
void web_reply_error_extra(struct web_req *r, int status, const char *code, const char *extra, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

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
void *web_ws_app(const struct web_ws *ws);
uint64_t web_ws_id(const struct web_ws *ws);
struct web_ws *web_ws_find(uint64_t id);
const struct web_principal *web_ws_principal(const struct web_ws *ws);
void web_ws_set_principal(struct web_ws *ws, const struct web_principal *p);
const char *web_ws_client_addr(const struct web_ws *ws);
/* The WebSocket's route path ("/api/v1/live"). */
const char *web_ws_path(const struct web_ws *ws);
/* A header of the WebSocket's upgrade request (cookie, authorization, origin, ...). */
const char *web_ws_header(const struct web_ws *ws, const char *name);
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

#endif
