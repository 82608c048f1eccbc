/* The application on top of the HTTP core (http/http.h): KeepPeek's routes, WebSockets,
 * authentication, IPC answers and static files, and the context they share. main.c
 * hands a struct webd to the core at start; handlers read it back with web_req_app or
 * web_ws_app, and IPC frames reach the modules with it. */
#ifndef KP_WEBD_H
#define KP_WEBD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "http.h"
#include "keeppeek.pb.h"
#include "kp_limits.h"
#include "worker.h"

/* What webd's modules share: the worker, for IPC and its loop; and a hub's routing of
 * site cameras' signaling (hub_rtc.c), which rtc_relay.c asks first about each
 * browser message (true: taken) and tells when the WebSocket ends (NULL: none). */
struct webd {
	struct kp_worker *worker;
	bool (*rtc_divert)(struct web_ws *ws, void **state, const uint8_t *data, size_t len);
	void (*rtc_divert_end)(void *state);
};

/* Route flags of the application (the core passes them to webd_auth_check). */
#define WEB_ADMIN   0x02u /* role admin required (403 otherwise) */
#define WEB_CHANGES 0x04u /* changes state: cross-site requests refused (CSRF) */
/* Publishes events: roles publisher and admin. Any other route needing a principal is
 * for viewers and admins. */
#define WEB_PUBLISH 0x20u

/* Route tables of the modules, each ended by an entry with path NULL. */
extern const struct web_route webd_core_routes[];   /* /healthz, /metrics, cameras (routes_core.c) */
extern const struct web_route webd_auth_routes[];   /* login, logout, session (auth.c) */
extern const struct web_route webd_data_routes[];   /* events, coverage, export, delete */
extern const struct web_route webd_config_routes[]; /* configuration (routes_config.c) */
extern const struct web_route webd_users_routes[];  /* users and API tokens (routes_users.c) */
extern const struct web_route webd_hub_routes[];    /* a hub's merged views (routes_hub.c) */
extern const struct web_ws_route webd_ws_routes[];  /* live and rtc, in enum webd_ws order */
enum webd_ws { WEBD_WS_LIVE, WEBD_WS_RTC };

/* A question env to the supervisor (its id set through id_field, tail as its raw tail)
 * whose QueryReply pieces become the answer to r; with json_errors a status of 400 or
 * more is answered as {"error": code, "message": the tail} (routes_core.c). */
void webd_ask_supervisor(struct web_req *r, kp_Envelope *env, uint32_t *id_field, const void *tail, size_t len,
			 bool json_errors);

/* /api/v1/live: live event fan-out (live.c), its delivery timer on loop (closed by
 * webd_live_stop, after the server closed the WebSockets). */
void webd_live_init(uv_loop_t *loop);
void webd_live_stop(void);
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

/* ---- IPC answers (answers.c) ----
 * A question to recorderd, rtcd or the supervisor (to) carries an id from
 * webd_answer_expect; every QueryReply, CatalogReply, MediaPiece or AuthReply with that
 * id goes to cb
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
/* Frames from the supervisor or a peer that may be answers; 1 when taken. */
int webd_answer_frame(struct kp_ipc_frame *f);
void webd_answers_init(uv_loop_t *loop);
/* The link to peer dropped: every question waiting for it ends now (f == NULL). */
void webd_answers_peer_lost(kp_Peer peer);
void webd_answers_close(void);

/* MQTT and webhooks (integrations.c, mqtt*.c, webhook.c; docs/decisions/0018): started
 * before confinement (nothing connects yet), configured with every WorkerConfig
 * (on_configured), fed each EventCommitted and the supervisor's CameraStates. */
void webd_integrations_init(uv_loop_t *loop);
void webd_integrations_configure(const kp_WorkerConfig *cfg);
void webd_integrations_on_event(struct kp_ipc_frame *f);
void webd_integrations_on_states(struct kp_ipc_frame *f);
void webd_integrations_close(void);
/* Prometheus text of MQTT and the webhooks into buf, NUL-terminated. */
void webd_integrations_metrics(char *buf, size_t len);

/* Frames that are not answers, routed by main.c. */
void webd_live_on_event(struct kp_ipc_frame *f);                 /* EventCommitted from recorderd */
void webd_rtc_on_signal(struct webd *d, struct kp_ipc_frame *f); /* RtcSignal from rtcd */
void webd_rtc_on_media(struct kp_ipc_frame *f);                  /* RtcMedia from rtcd (MSE) */
/* Messages queued towards one browser: answers, states every 500 ms per session, and
 * MSE pieces, which may fill the queue only up to their own smaller bound so that text
 * always has room (RELAY_QUEUE_BYTES - RELAY_MSE_BYTES). */
#define RELAY_QUEUE_ITEMS 256
#define RELAY_QUEUE_BYTES (6 * KP_MIB)
#define RELAY_MSE_ITEMS   192
#define RELAY_MSE_BYTES   (4 * KP_MIB)
/* MSE pieces forwarded to browsers and dropped (slow WebSocket: to the next keyframe). */
struct webd_mse_metrics {
	uint64_t pieces, bytes, dropped;
};
extern struct webd_mse_metrics webd_mse_metrics;
void webd_rtc_metrics(char *buf, size_t len);

/* ---- authentication (auth.c): the core's hooks for every non-public request ---- */
/* Before confinement: OpenSSL's library context (its configuration file, the SHA-256
 * fetch) set up now, in parallel with recorderd's start, not at the first request. */
void webd_auth_init(void);
/* Resolves the principal from the Authorization header or the session cookie, checks the
 * route's role and CSRF flags, then calls done(r, 0) or done(r, status) with the request
 * already answered (401, 403). May answer asynchronously (after asking the supervisor). */
void webd_auth_check(struct web_req *r, unsigned route_flags, void (*done)(struct web_req *r, int status));
/* The same for an accepted WebSocket, before on_open; messages that arrive earlier are
 * held (bounded). On failure the core closes it (1008) with done's status. */
void webd_auth_ws(struct web_ws *ws, unsigned route_flags, void (*done)(struct web_ws *ws, int status));
/* The supervisor revoked principal's credentials: forget cached answers for it and close
 * its WebSockets (1008), so neither HTTP nor live video outlives the revocation. */
void webd_auth_revoked(const char *principal);

/* ---- static files (static_files.c): the core's fallback for GET/HEAD without a route,
 * a file under www_dir (index.html for directories); 404 under /api/. ---- */
void webd_static_init(const char *www_dir);
void webd_static_serve(struct web_req *r);

#endif
