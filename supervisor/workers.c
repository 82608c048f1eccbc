/* The process table: KeepPeek's four workers, the transcoder started on demand and tierd where [tier] is set, each with
 * the dispatch of what it may send the supervisor (the IPC table in common/ipc_frame.c has already refused the rest),
 * and the engine's hooks that speak to a worker: its configuration when it has started, a health request, Shutdown.
 * Adding a worker is a row here, a row of the link mesh (links.c) and its rows in the IPC table. */
#include <stdio.h>
#include <string.h>

#include "auth.h"
#include "log.h"
#include "supervisor.h"

/* What every worker sends: Ready, health replies, lost links. */
static bool common_frame(struct proc *p, const kp_Envelope *env)
{
	struct supervisor *s = p->s;
	switch (env->which_msg) {
	case kp_Envelope_ready_tag: {
		proc_heard(p);
		bool started = proc_ready(p);
		configure_ready(p, started, env->msg.ready.generation);
		if (started) {
			links_on_ready(s, p);
			service_worker_ready(s);
		}
		return true;
	}
	case kp_Envelope_health_reply_tag:
		proc_heard(p);
		p->health = env->msg.health_reply;
		if (p->def->first)
			service_heard(s);
		return true;
	case kp_Envelope_link_lost_tag:
		links_on_lost(s, p, &env->msg.link_lost);
		return true;
	default:
		return false;
	}
}

static void ingestd_dispatch(struct proc *p, struct kp_ipc_frame *f)
{
	if (common_frame(p, f->env))
		return;
	if (f->env->which_msg == kp_Envelope_stream_state_tag)
		cameras_on_state(p->s, &f->env->msg.stream_state);
	else if (f->env->which_msg == kp_Envelope_discover_found_tag)
		discover_on_found(p->s, &f->env->msg.discover_found);
	else if (f->env->which_msg == kp_Envelope_camera_test_result_tag)
		camera_test_on_result(p->s, &f->env->msg.camera_test_result);
}

static void recorderd_dispatch(struct proc *p, struct kp_ipc_frame *f)
{
	struct supervisor *s = p->s;
	const kp_Envelope *env = f->env;
	if (common_frame(p, env))
		return;
	switch (env->which_msg) {
	case kp_Envelope_stream_received_tag:
		cameras_on_received(s, &env->msg.stream_received);
		break;
	case kp_Envelope_recording_status_tag:
		cameras_on_recording(s, &env->msg.recording_status);
		break;
	case kp_Envelope_catalog_status_tag:
		catalog_status_on(s, &env->msg.catalog_status);
		break;
	case kp_Envelope_transcoder_demand_tag:
		transcoder_demand(s, p->peer, env->msg.transcoder_demand.jobs);
		break;
	case kp_Envelope_recorder_reply_tag:
		control_relay_reply(s, &env->msg.recorder_reply, f->tail, f->tail_len);
		break;
	default:
		break;
	}
}

static void webd_dispatch(struct proc *p, struct kp_ipc_frame *f)
{
	const kp_Envelope *env = f->env;
	if (common_frame(p, env))
		return;
	if (env->which_msg == kp_Envelope_topic_query_tag)
		topics_answer(p->s, p, &env->msg.topic_query);
	else if (env->which_msg == kp_Envelope_auth_request_tag)
		auth_on_request(p->s, p, &env->msg.auth_request);
	else if (env->which_msg == kp_Envelope_config_ask_tag)
		config_ask_answer(p->s, p, &env->msg.config_ask, f->tail, f->tail_len);
}

static void rtcd_dispatch(struct proc *p, struct kp_ipc_frame *f)
{
	if (common_frame(p, f->env))
		return;
	if (f->env->which_msg == kp_Envelope_transcoder_demand_tag)
		transcoder_demand(p->s, p->peer, f->env->msg.transcoder_demand.jobs);
}

static void transcoder_dispatch(struct proc *p, struct kp_ipc_frame *f)
{
	common_frame(p, f->env);
}

static void tier_dispatch(struct proc *p, struct kp_ipc_frame *f)
{
	common_frame(p, f->env);
}

/* tierd runs only where [tier] names a store (decision 0035). */
static bool tier_wanted(const struct supervisor *s)
{
	return s->cfg.tier_endpoint.val[0] != '\0';
}

const struct proc_def workers_table[KP_NPROCS] = {
    {"ingestd", kp_Peer_PEER_INGESTD, true, false, false, NULL, ingestd_dispatch},
    {"recorderd", kp_Peer_PEER_RECORDERD, false, false, true, NULL, recorderd_dispatch},
    {"webd", kp_Peer_PEER_WEBD, true, false, true, NULL, webd_dispatch},
    {"rtcd", kp_Peer_PEER_RTCD, true, false, false, NULL, rtcd_dispatch},
    /* Started while rtcd or recorderd has transcode jobs (transcoder.c). */
    {"transcoder", kp_Peer_PEER_TRANSCODER, true, true, false, NULL, transcoder_dispatch},
    /* Started with the rest when [tier] has an endpoint. */
    {"tierd", kp_Peer_PEER_TIER, true, true, false, tier_wanted, tier_dispatch},
};

void workers_spawned(struct proc *p)
{
	if (p->peer == kp_Peer_PEER_RECORDERD)
		catalog_status_forget(p->s);
	configure_send(p);
}

void workers_exited(struct proc *p)
{
	configure_exited(p);
	if (p->peer == kp_Peer_PEER_RECORDERD)
		control_relay_lost(p->s);
	if (p->peer == kp_Peer_PEER_RTCD || p->peer == kp_Peer_PEER_RECORDERD)
		transcoder_demand(p->s, p->peer, 0); /* its jobs ended with it */
}

void workers_ping(struct proc *p)
{
	kp_Envelope env = kp_Envelope_init_zero;
	env.which_msg = kp_Envelope_health_request_tag;
	env.msg.health_request.seq = ++p->health_seq;
	int r = kp_ipc_send(p->ipc, &env, NULL, 0, NULL, 0);
	if (r < 0)
		kp_debug("%s: health request not sent: %s", p->name, strerror(-r));
}

int workers_ask_stop(struct proc *p)
{
	kp_Envelope env = kp_Envelope_init_zero;
	env.which_msg = kp_Envelope_shutdown_tag;
	snprintf(env.msg.shutdown.reason, sizeof env.msg.shutdown.reason, "supervisor is stopping");
	return kp_ipc_send(p->ipc, &env, NULL, 0, NULL, 0);
}
