/* What keeppeek-webd needs for MQTT and webhooks (docs/decisions/0018): the [mqtt] and
 * [webhook "NAME"] keys in its WorkerConfig (the broker's CA file read here, so that a
 * reload needs no path in webd's confined view), and CameraStates, every configured
 * stream with its ingest state, after each configuration batch and on every change. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "kp_limits.h"
#include "log.h"
#include "supervisor.h"

_Static_assert(sizeof(((kp_WorkerConfig *)0)->mqtt_tls_ca_pem.bytes) == KP_MQTT_CA_MAX,
	       "proto/keeppeek.options and kp_limits.h agree on the CA file's bound");
_Static_assert(sizeof(((kp_HubSite *)0)->ca_pem.bytes) == KP_SITE_CA_MAX &&
		   sizeof(((kp_WorkerConfig *)0)->hub_sites) / sizeof(kp_HubSite) == KP_MAX_SITES,
	       "proto/keeppeek.options and kp_limits.h agree on the hub's bounds");

/* The configuration checked the file; one changed since is refused here, and webd is
 * then told no host, so it does not fall back to the system's CA store. */
static void read_ca(const char *path, kp_WorkerConfig *wc)
{
	FILE *f = fopen(path, "re");
	if (!f) {
		kp_err("[mqtt] ca_file %s: cannot open: %s; webd will not connect", path, strerror(errno));
		wc->mqtt_host[0] = '\0';
		return;
	}
	size_t n = fread(wc->mqtt_tls_ca_pem.bytes, 1, sizeof wc->mqtt_tls_ca_pem.bytes, f);
	int more = fgetc(f);
	bool err = ferror(f);
	fclose(f);
	if (err || more != EOF) {
		kp_err("[mqtt] ca_file %s: %s; webd will not connect", path,
		       err ? "read error" : "larger than 16384 bytes");
		wc->mqtt_host[0] = '\0';
		return;
	}
	wc->mqtt_tls_ca_pem.size = (pb_size_t)n;
}

void integrations_config(const struct supervisor *s, kp_WorkerConfig *wc)
{
	const struct kp_config *c = &s->cfg;
	snprintf(wc->mqtt_host, sizeof wc->mqtt_host, "%s", c->mqtt_host.val);
	wc->mqtt_port = c->mqtt_port;
	wc->mqtt_tls = c->mqtt_tls;
	if (c->mqtt_host.val[0] && c->mqtt_tls && c->mqtt_ca_file.val[0])
		read_ca(c->mqtt_ca_file.val, wc);
	snprintf(wc->mqtt_user, sizeof wc->mqtt_user, "%s", c->mqtt_user.val);
	snprintf(wc->mqtt_password, sizeof wc->mqtt_password, "%s", c->mqtt_password.val);
	snprintf(wc->mqtt_client_id, sizeof wc->mqtt_client_id, "%s", c->mqtt_client_id.val);
	snprintf(wc->mqtt_topic_prefix, sizeof wc->mqtt_topic_prefix, "%s", c->mqtt_topic_prefix.val);
	wc->mqtt_qos = c->mqtt_qos;
	snprintf(wc->mqtt_discovery_prefix, sizeof wc->mqtt_discovery_prefix, "%s", c->mqtt_discovery_prefix.val);
	wc->mqtt_active_secs = c->mqtt_active_secs;
	wc->webhooks_count = 0;
	for (unsigned i = 0; i < c->nwebhooks && i < sizeof wc->webhooks / sizeof wc->webhooks[0]; i++) {
		const struct kp_webhook_conf *h = &c->webhooks[i];
		kp_Webhook *o = &wc->webhooks[wc->webhooks_count++];
		snprintf(o->name, sizeof o->name, "%s", h->name);
		snprintf(o->url, sizeof o->url, "%s", h->url.val);
		snprintf(o->cameras, sizeof o->cameras, "%s", h->cameras.val);
		snprintf(o->labels, sizeof o->labels, "%s", h->labels.val);
		snprintf(o->secret, sizeof o->secret, "%s", h->secret.val);
	}
}

/* A site's CA file, checked by the configuration; one that changed since leaves the
 * site without a token, so that webd marks it misconfigured instead of trusting the
 * system's CA store. */
static void read_site_ca(const char *path, kp_HubSite *o)
{
	FILE *f = fopen(path, "re");
	if (!f) {
		kp_err("[site \"%s\"] ca_file %s: cannot open: %s; webd will not ask it", o->name, path,
		       strerror(errno));
		o->token[0] = '\0';
		return;
	}
	size_t n = fread(o->ca_pem.bytes, 1, sizeof o->ca_pem.bytes, f);
	int more = fgetc(f);
	bool err = ferror(f);
	fclose(f);
	if (err || more != EOF) {
		kp_err("[site \"%s\"] ca_file %s: %s; webd will not ask it", o->name, path,
		       err ? "read error" : "larger than 1536 bytes");
		o->token[0] = '\0';
		return;
	}
	o->ca_pem.size = (pb_size_t)n;
}

void integrations_hub_config(const struct supervisor *s, kp_WorkerConfig *wc)
{
	const struct kp_config *c = &s->cfg;
	wc->hub_enabled = c->hub_enabled;
	wc->hub_timeout_ms = c->hub_timeout_ms;
	wc->hub_sites_count = 0;
	for (unsigned i = 0; c->hub_enabled && i < c->nsites && i < KP_MAX_SITES; i++) {
		const struct kp_site_conf *st = &c->sites[i];
		kp_HubSite *o = &wc->hub_sites[wc->hub_sites_count++];
		snprintf(o->name, sizeof o->name, "%s", st->name);
		snprintf(o->url, sizeof o->url, "%s", st->url.val);
		snprintf(o->token, sizeof o->token, "%s", st->token.val);
		if (st->ca_file.val[0])
			read_site_ca(st->ca_file.val, o);
	}
}

static const char *state_of(const struct supervisor *s, const char *camera, uint32_t stream)
{
	for (unsigned i = 0; i < s->ncamera_rows; i++) {
		const struct camera_row *r = &s->camera_rows[i];
		if (r->stream == stream && r->have_state && !strcmp(r->camera, camera))
			return r->state.state;
	}
	return "connecting";
}

void integrations_send_states(struct supervisor *s)
{
	struct proc *webd = NULL;
	for (unsigned i = 0; i < KP_NPROCS; i++)
		if (s->procs[i].peer == kp_Peer_PEER_WEBD && s->procs[i].ipc)
			webd = &s->procs[i];
	if (!webd)
		return;
	static kp_Envelope env;
	memset(&env, 0, sizeof env);
	env.which_msg = kp_Envelope_camera_states_tag;
	kp_CameraStates *cs = &env.msg.camera_states;
	const pb_size_t max = sizeof cs->streams / sizeof cs->streams[0];
	for (unsigned i = 0; i < s->cfg.ncameras; i++) {
		const struct kp_camera_conf *c = &s->cfg.cameras[i];
		for (uint32_t k = 0; k < 2; k++) {
			if (!(c->streams & (1u << k)) || cs->streams_count >= max)
				continue;
			kp_CameraStreamState *st = &cs->streams[cs->streams_count++];
			snprintf(st->camera, sizeof st->camera, "%s", c->name);
			st->stream = k;
			snprintf(st->state, sizeof st->state, "%s", state_of(s, c->name, k));
		}
	}
	int r = kp_ipc_send(webd->ipc, &env, NULL, 0, NULL, 0);
	if (r < 0)
		kp_warn("camera states to webd not sent: %s", strerror(-r));
}
