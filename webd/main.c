/* keeppeek-webd: the HTTP/WebSocket server and browser UI. This file declares the
 * worker (peers, confinement with a read-only www directory, ceilings), hands the HTTP
 * core (http/) the route tables, authentication hooks and static-file fallback with the
 * webd context, opens the listeners and TLS before confinement, and routes IPC frames to
 * the modules: answers to answers.c, committed events to live.c and integrations.c
 * (MQTT, webhooks), camera states to integrations.c, WebRTC signaling to rtc_relay.c. */
#include "hub.h"
#include "kp_limits.h"
#include "log.h"
#include "relay.h"
#include "sandbox.h"
#include "webd.h"
#include "worker.h"

static const struct web_route *const routes[] = {
    webd_core_routes, webd_auth_routes, webd_data_routes, webd_config_routes, webd_users_routes, webd_hub_routes, NULL};

static const struct web_server_def server_def = {
    .routes = routes,
    .ws_routes = webd_ws_routes,
    .auth = webd_auth_check,
    .auth_ws = webd_auth_ws,
    .fallback = webd_static_serve,
};

/* The context the modules are handed (through the core, or as an argument). */
static struct webd webd_ctx = {.rtc_divert = webd_hub_rtc_message, .rtc_divert_end = webd_hub_rtc_end};

/* With keeppeekd's listening sockets, webd accepts once its link to recorderd is up (a
 * request that needs recorderd is then never answered 503 for a link not yet made),
 * at the latest after this long; clients wait in the backlog meanwhile. */
#define WEBD_ACCEPT_WAIT_MS 1000
static uv_timer_t accept_timer;
static bool accept_timer_open;

static void start_accepting(uv_timer_t *t)
{
	(void)t;
	if (web_server_accept() < 0)
		kp_err("webd cannot accept connections on its listeners");
}

static void on_peer_linked(struct kp_worker *w, kp_Peer peer)
{
	(void)w;
	if (peer == kp_Peer_PEER_RECORDERD) {
		uv_timer_stop(&accept_timer);
		start_accepting(NULL);
	}
}

static int before_confine(struct kp_worker *w)
{
	webd_ctx.worker = w;
	const kp_WorkerConfig *cfg = kp_worker_config(w);
	uv_loop_t *loop = kp_worker_loop(w);
	webd_auth_init();
	webd_answers_init(loop);
	webd_live_init(loop);
	webd_integrations_init(loop);
	webd_hub_init(loop);
	webd_static_init(cfg->www_dir);
	const int *fds;
	unsigned nfds = kp_worker_config_fds(w, &fds);
	web_server_adopt(fds, nfds);
	int r = uv_timer_init(loop, &accept_timer);
	if (r < 0)
		return r;
	accept_timer_open = true;
	if (nfds) {
		web_server_defer_accept();
		r = uv_timer_start(&accept_timer, start_accepting, WEBD_ACCEPT_WAIT_MS, 0);
		if (r < 0)
			return r;
	}
	return web_server_open(loop, &server_def, &webd_ctx, cfg->web_listen, cfg->web_tls_cert, cfg->web_tls_key);
}

static void on_peer_frame(struct kp_worker *w, kp_Peer from, struct kp_ipc_frame *f)
{
	(void)w;
	if (webd_answer_frame(f))
		return;
	switch (f->env->which_msg) {
	case kp_Envelope_event_committed_tag:
		webd_live_on_event(f);
		webd_integrations_on_event(f);
		break;
	case kp_Envelope_rtc_signal_tag:
		webd_rtc_on_signal(&webd_ctx, f);
		break;
	case kp_Envelope_rtc_media_tag:
		webd_rtc_on_media(f);
		break;
	default:
		kp_debug("unexpected message %u from %s", (unsigned)f->env->which_msg, kp_peer_name(from));
		break;
	}
}

static void on_supervisor_frame(struct kp_worker *w, struct kp_ipc_frame *f)
{
	(void)w;
	if (webd_answer_frame(f))
		return;
	if (f->env->which_msg == kp_Envelope_auth_revoked_tag)
		webd_auth_revoked(f->env->msg.auth_revoked.principal);
	else if (f->env->which_msg == kp_Envelope_camera_states_tag)
		webd_integrations_on_states(f);
	else
		kp_debug("unexpected message %u from the supervisor", (unsigned)f->env->which_msg);
}

/* Every configuration batch (start and reload): [mqtt], [webhook] and [hub] apply at once. */
static void on_configured(struct kp_worker *w, uint32_t generation)
{
	(void)generation;
	webd_integrations_configure(kp_worker_config(w));
	webd_hub_configure(kp_worker_config(w));
}

static void on_peer_lost(struct kp_worker *w, kp_Peer peer)
{
	(void)w;
	webd_answers_peer_lost(peer);
}

static void on_stop(struct kp_worker *w)
{
	(void)w;
	if (accept_timer_open)
		uv_close((uv_handle_t *)&accept_timer, NULL);
	accept_timer_open = false;
	web_server_close();
	webd_live_stop();
	webd_integrations_close();
	webd_hub_close();
	webd_relay_close();
	webd_answers_close();
}

static const struct kp_worker_def webd = {
    .name = "webd",
    .self = kp_Peer_PEER_WEBD,
    .peers = {kp_Peer_PEER_RECORDERD, kp_Peer_PEER_RTCD},
    .npeers = 2,
    .fs = KP_WORKER_FS_WWW_RO,
    .rlimit_as = 1024ull * KP_MIB,
    /* 256 connections, descriptors of streamed answers, listeners, IPC links. */
    .rlimit_nofile = 4096,
    .syscalls = KP_SYSCALLS_NET,
    .on_peer_frame = on_peer_frame,
    .on_supervisor_frame = on_supervisor_frame,
    .on_before_confine = before_confine,
    .on_configured = on_configured,
    .on_stop = on_stop,
    .on_peer_lost = on_peer_lost,
    .on_peer_linked = on_peer_linked,
};

int main(int argc, char **argv)
{
	return kp_worker_main(&webd, argc, argv);
}
