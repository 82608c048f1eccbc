/* The configuration barrier (docs/ipc.md, start-up barrier): a worker just started
 * gets WorkerConfig, a CameraConfig per camera (ingestd, recorderd) and ConfigDone, and
 * answers Ready once confined; a reload (SIGHUP, keeppeekctl reload) re-reads the file
 * and sends the next generation to every running worker, and is complete when each has
 * answered Ready with it or exited. A reload during a reload is refused. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "log.h"
#include "supervisor.h"

/* ingestd and recorderd get one CameraConfig per camera before each ConfigDone. */
static int send_cameras(struct proc *p)
{
	struct supervisor *s = p->s;
	if (p->peer != kp_Peer_PEER_INGESTD && p->peer != kp_Peer_PEER_RECORDERD)
		return 0;
	for (unsigned i = 0; i < s->cfg.ncameras; i++) {
		const struct kp_camera_conf *c = &s->cfg.cameras[i];
		kp_Envelope env = kp_Envelope_init_zero;
		env.which_msg = kp_Envelope_camera_config_tag;
		kp_CameraConfig *cc = &env.msg.camera_config;
		cc->generation = s->generation;
		cc->index = i;
		cc->count = s->cfg.ncameras;
		snprintf(cc->name, sizeof cc->name, "%s", c->name);
		snprintf(cc->url, sizeof cc->url, "%s", c->url.val);
		kp_redact_url(c->url.val, cc->url_redacted, sizeof cc->url_redacted);
		snprintf(cc->sub_url, sizeof cc->sub_url, "%s", c->sub_url.val);
		cc->streams = c->streams;
		cc->motion_events = c->motion_events;
		cc->audio = c->audio;
		cc->record = (uint32_t)c->record;
		cc->retention_days = c->retention_days;
		cc->snapshot_interval = c->snapshot_interval;
		cc->rollover_secs = c->rollover_secs;
		cc->rtsp_transport = (uint32_t)c->transport;
		cc->rtp_port_min = c->rtp_port_min;
		cc->rtp_port_max = c->rtp_port_max;
		int r = kp_ipc_send(p->ipc, &env, NULL, 0, NULL, 0);
		if (r < 0)
			return r;
	}
	return 0;
}

/* WorkerConfig; webd's and recorderd's also on a reload ([mqtt], [webhook] and
 * [retention] take effect without a restart). The listening sockets go to webd with its first one only (start): webd
 * keeps serving on them across reloads. */
static int send_worker_config(struct proc *p, bool start)
{
	struct supervisor *s = p->s;
	static kp_Envelope env;
	memset(&env, 0, sizeof env);
	env.which_msg = kp_Envelope_worker_config_tag;
	kp_WorkerConfig *wc = &env.msg.worker_config;
	wc->generation = s->generation;
	snprintf(wc->data_dir, sizeof wc->data_dir, "%s", s->cfg.data_dir.val);
	snprintf(wc->run_dir, sizeof wc->run_dir, "%s", s->cfg.run_dir.val);
	snprintf(wc->www_dir, sizeof wc->www_dir, "%s", s->www_dir);
	snprintf(wc->user, sizeof wc->user, "%s", s->cfg.user.val);
	wc->change_uid = s->change_uid;
	wc->retention_max_days = s->cfg.max_days;
	wc->retention_max_disk_mb = s->cfg.max_disk_mb;
	wc->uid = (uint32_t)p->uid;
	wc->gid = (uint32_t)p->gid;
	int fds[KP_WEB_LISTEN_MAX];
	unsigned nfds = 0;
	if (p->peer == kp_Peer_PEER_WEBD && start)
		nfds = listen_for_webd(s, fds, wc->web_listen, sizeof wc->web_listen);
	else
		snprintf(wc->web_listen, sizeof wc->web_listen, "%s", s->cfg.listen.val);
	snprintf(wc->web_tls_cert, sizeof wc->web_tls_cert, "%s", s->cfg.tls_cert.val);
	snprintf(wc->web_tls_key, sizeof wc->web_tls_key, "%s", s->cfg.tls_key.val);
	wc->rtc_udp_port_min = s->cfg.udp_port_min;
	wc->rtc_udp_port_max = s->cfg.udp_port_max;
	snprintf(wc->rtc_stun_server, sizeof wc->rtc_stun_server, "%s", s->cfg.stun_server.val);
	wc->rtc_max_transcodes = s->cfg.max_transcodes;
	snprintf(wc->rtc_addresses, sizeof wc->rtc_addresses, "%s", s->cfg.rtc_addresses.val);
	if (p->peer == kp_Peer_PEER_WEBD) {
		integrations_config(s, wc);
		integrations_hub_config(s, wc);
	}
	if (p->peer == kp_Peer_PEER_TIER || p->peer == kp_Peer_PEER_RECORDERD)
		tier_config(s, p->peer, wc);
	return kp_ipc_send(p->ipc, &env, NULL, 0, fds, nfds);
}

void configure_send(struct proc *p)
{
	struct supervisor *s = p->s;
	int r = send_worker_config(p, true);
	if (r == 0)
		r = send_cameras(p);
	kp_Envelope done = kp_Envelope_init_zero;
	done.which_msg = kp_Envelope_config_done_tag;
	done.msg.config_done.generation = s->generation;
	if (r == 0)
		r = kp_ipc_send(p->ipc, &done, NULL, 0, NULL, 0);
	if (r < 0)
		kp_err("%s: sending configuration failed: %s", p->name, strerror(-r));
	else if (p->peer == kp_Peer_PEER_WEBD)
		integrations_send_states(s);
}

static void reload_complete(struct supervisor *s)
{
	kp_info("reload to generation %u complete", (unsigned)s->generation);
	unsigned queued = s->reload_queued;
	s->reload_queued = 0;
	char msg[4096];
	if (!queued || supervisor_reload_some(s, queued, msg, sizeof msg) < 0)
		service_reloaded(s);
}

void configure_ready(struct proc *p, bool started, uint32_t generation)
{
	struct supervisor *s = p->s;
	if (started) {
		p->config_generation = generation;
		return;
	}
	if (p->state != PROC_RUNNING || generation != s->generation || p->config_generation == s->generation)
		return;
	p->config_generation = s->generation;
	if (s->reload_waiting && --s->reload_waiting == 0)
		reload_complete(s);
}

void configure_exited(struct proc *p)
{
	struct supervisor *s = p->s;
	if (p->ready_ms && p->config_generation != s->generation && s->reload_waiting && --s->reload_waiting == 0)
		reload_complete(s);
}

/* [rtc] is read by rtcd before its confinement (its sockets and STUN server are prepared
 * then): a change reaches it when it restarts. */
static bool rtc_changed(const struct kp_config *cur, const struct kp_config *next)
{
	return cur->udp_port_min != next->udp_port_min || cur->udp_port_max != next->udp_port_max ||
	       strcmp(cur->stun_server.val, next->stun_server.val) != 0 ||
	       strcmp(cur->rtc_addresses.val, next->rtc_addresses.val) != 0 ||
	       cur->max_transcodes != next->max_transcodes;
}

static bool reads_config_on_reload(const struct proc *p)
{
	return p->peer == kp_Peer_PEER_WEBD || p->peer == kp_Peer_PEER_RECORDERD;
}

int supervisor_reload(struct supervisor *s, char *msg, size_t len)
{
	return supervisor_reload_some(s, ~0u, msg, len);
}

int supervisor_reload_some(struct supervisor *s, unsigned peers, char *msg, size_t len)
{
	if (s->stopping) {
		snprintf(msg, len, "reload refused: stopping\n");
		return -ESHUTDOWN;
	}
	bool rtc_later = false;
	static struct kp_config next;
	if (!s->demo) {
		static struct kp_config_errors errs;
		int r = kp_config_load_file(s->config_path, &next, &errs);
		if (r < 0) {
			snprintf(msg, len, "reload refused: configuration is invalid; keeping the running one\n%s",
				 errs.text);
			kp_err("reload refused: %s is invalid: %.*s", s->config_path, (int)strcspn(errs.text, "\n"),
			       errs.text);
			return r;
		}
	}
	if (s->reload_waiting) {
		/* The file is valid now; it is read again when the queued reload runs. */
		s->reload_queued |= peers;
		snprintf(msg, len,
			 "reload queued: it runs when generation %u completes (%u workers have not answered)\n",
			 (unsigned)s->generation, s->reload_waiting);
		kp_info("reload queued behind generation %u (%u workers have not answered)", (unsigned)s->generation,
			s->reload_waiting);
		return 0;
	}
	if (!s->demo) {
		if (strcmp(next.data_dir.val, s->cfg.data_dir.val) || strcmp(next.run_dir.val, s->cfg.run_dir.val) ||
		    strcmp(next.user.val, s->cfg.user.val))
			kp_warn("reload: data_dir, run_dir and user take effect only after a restart of keeppeekd");
		snprintf(next.data_dir.val, sizeof next.data_dir.val, "%s", s->cfg.data_dir.val);
		snprintf(next.run_dir.val, sizeof next.run_dir.val, "%s", s->cfg.run_dir.val);
		snprintf(next.user.val, sizeof next.user.val, "%s", s->cfg.user.val);
		tier_keep(&s->cfg, &next);
		rtc_later = rtc_changed(&s->cfg, &next);
		if (rtc_later)
			kp_warn("reload: [rtc] takes effect when rtcd restarts (keeppeekctl restart rtcd; it ends the "
				"live views)");
		s->cfg = next;
	}
	s->generation++;
	for (unsigned i = 0; i < KP_NPROCS; i++) {
		struct proc *p = &s->procs[i];
		if (p->state != PROC_RUNNING || !p->ipc)
			continue;
		if (!(peers & (1u << p->peer))) {
			p->config_generation = s->generation; /* it reads nothing that changed */
			continue;
		}
		kp_Envelope env = kp_Envelope_init_zero;
		env.which_msg = kp_Envelope_reload_tag;
		env.msg.reload.generation = s->generation;
		kp_Envelope done = kp_Envelope_init_zero;
		done.which_msg = kp_Envelope_config_done_tag;
		done.msg.config_done.generation = s->generation;
		if (kp_ipc_send(p->ipc, &env, NULL, 0, NULL, 0) == 0 &&
		    (!reads_config_on_reload(p) || send_worker_config(p, false) == 0) && send_cameras(p) == 0 &&
		    kp_ipc_send(p->ipc, &done, NULL, 0, NULL, 0) == 0)
			s->reload_waiting++;
	}
	integrations_send_states(s);
	kp_info("reload to generation %u sent to %u workers", (unsigned)s->generation, s->reload_waiting);
	service_reloading(s);
	if (!s->reload_waiting)
		service_reloaded(s);
	snprintf(msg, len, "reload to generation %u sent to %u workers\n%s", (unsigned)s->generation, s->reload_waiting,
		 rtc_later
		     ? "[rtc] takes effect when rtcd restarts: keeppeekctl restart rtcd (it ends the live views)\n"
		     : "");
	return 0;
}
