/* What keeppeekctl can ask the supervisor: status (table or JSON), restart WORKER,
 * reload, config show (redacted) and version, answered here; check, coverage, keyframe,
 * events search and backup (backup.c), relayed to recorderd (which owns the catalog;
 * relay.c) and answered when its RecorderReply pieces are complete. Each answer is text
 * (or the keyframe's bytes) with keeppeekctl's exit code (0 ok, 1 failure, 2 usage). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kp_limits.h"
#include "kp_time.h"
#include "log.h"

#include "auth.h"
#include "kp_build_config.h"
#include "supervisor.h"

static uint64_t rss_bytes(pid_t pid)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/statm", (int)pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return 0;
	unsigned long size = 0, resident = 0;
	int n = fscanf(f, "%lu %lu", &size, &resident);
	fclose(f);
	return n == 2 ? (uint64_t)resident * (uint64_t)sysconf(_SC_PAGESIZE) : 0;
}

static bool link_up(const struct proc *p, kp_Peer peer)
{
	for (pb_size_t i = 0; i < p->health.links_count; i++)
		if (p->health.links[i].peer == peer)
			return p->health.links[i].up;
	return false;
}

static void status(struct supervisor *s, bool json, struct kp_out *o)
{
	uint64_t now = kp_mono_ms();
	if (json)
		kp_out_put(o, "{\"workers\":[");
	else
		kp_out_put(o, "%-10s %8s %-9s %8s %10s %10s  %s\n", "WORKER", "PID", "STATE", "RESTARTS", "RSS",
			   "UPTIME", "LAST-EXIT");
	for (unsigned i = 0; i < KP_NPROCS; i++) {
		const struct proc *p = &s->procs[i];
		uint64_t rss = p->pid > 0 ? rss_bytes(p->pid) : 0;
		uint64_t up = p->state == PROC_RUNNING ? now - p->ready_ms : 0;
		uint64_t backoff =
		    p->state == PROC_BACKOFF && p->backoff_until_ms > now ? p->backoff_until_ms - now : 0;
		if (!json) {
			char rss_s[32], up_s[32];
			snprintf(rss_s, sizeof rss_s, "%.1fM", (double)rss / (1024.0 * 1024.0));
			snprintf(up_s, sizeof up_s, "%llus", (unsigned long long)(up / 1000));
			char state[40];
			if (p->state == PROC_BACKOFF)
				snprintf(state, sizeof state, "backoff(%llums)", (unsigned long long)backoff);
			else
				snprintf(state, sizeof state, "%s", proc_state_name(p->state));
			kp_out_put(o, "%-10s %8d %-9s %8u %10s %10s  %s\n", p->name, (int)p->pid, state, p->restarts,
				   rss_s, up_s, p->last_exit[0] ? p->last_exit : "-");
			continue;
		}
		kp_out_put(o,
			   "%s{\"name\":\"%s\",\"pid\":%d,\"state\":\"%s\",\"restarts\":%u,\"rss_bytes\":%llu,"
			   "\"uptime_ms\":%llu,\"backoff_ms\":%llu,\"consecutive_failures\":%u,\"last_exit\":",
			   i ? "," : "", p->name, (int)p->pid, proc_state_name(p->state), p->restarts,
			   (unsigned long long)rss, (unsigned long long)up, (unsigned long long)backoff,
			   p->quick_failures);
		kp_out_json_string(o, p->last_exit);
		kp_out_put(o, ",\"links\":[");
		unsigned n = 0;
		for (unsigned j = 0; j < KP_NLINKS; j++) {
			const struct link *l = &s->links[j];
			if (l->a != p->peer && l->b != p->peer)
				continue;
			kp_Peer other = l->a == p->peer ? l->b : l->a;
			kp_out_put(o, "%s{\"peer\":\"%s\",\"generation\":%u,\"relinks\":%u,\"state\":\"%s\"}",
				   n++ ? "," : "", kp_peer_name(other), (unsigned)l->generation, l->relinks,
				   p->state == PROC_RUNNING && link_up(p, other) ? "up" : "down");
		}
		kp_out_put(o, "]}");
	}
	if (!json) {
		if (catalog_unusable(s))
			kp_out_put(o, "\nNOT RECORDING: recorderd: %s\n",
				   s->catalog.error[0] ? s->catalog.error : s->catalog.state);
		return;
	}
	/* The catalog as recorderd last reported it; null before it has. */
	kp_out_put(o, "],\"catalog\":");
	if (!s->have_catalog) {
		kp_out_put(o, "null}\n");
		return;
	}
	kp_out_put(o, "{\"state\":");
	kp_out_json_string(o, s->catalog.state);
	kp_out_put(o, ",\"recording\":%s,\"schema_version\":%llu,\"supported_version\":%u,\"error\":",
		   catalog_unusable(s) ? "false" : "true", (unsigned long long)s->catalog.schema_version,
		   (unsigned)s->catalog.supported_version);
	kp_out_json_string(o, s->catalog.error);
	kp_out_put(o, "}}\n");
}

static int relay(struct supervisor *s, kp_Envelope *env, uint32_t *id, uint64_t ticket, struct kp_out *o)
{
	return control_relay(s, env, id, ticket, o, -1, NULL);
}

static int parse_ms(const char *v, int64_t *ret)
{
	char *end;
	errno = 0;
	long long n = strtoll(v, &end, 10);
	if (!v[0] || *end || errno)
		return -EINVAL;
	*ret = n;
	return 0;
}

static int parse_stream(const char *v, uint32_t *ret)
{
	if (!strcmp(v, "main"))
		*ret = 0;
	else if (!strcmp(v, "sub"))
		*ret = 1;
	else
		return -EINVAL;
	return 0;
}

/* check [--repair | --rebuild] */
static int check(struct supervisor *s, const kp_ControlRequest *req, uint64_t ticket, struct kp_out *o)
{
	kp_Envelope env = kp_Envelope_init_zero;
	env.which_msg = kp_Envelope_check_request_tag;
	kp_CheckRequest *q = &env.msg.check_request;
	q->json = req->json;
	if (req->args_count > 1 ||
	    (req->args_count == 1 && strcmp(req->args[0], "--repair") && strcmp(req->args[0], "--rebuild"))) {
		kp_out_put(o, "usage: check [--repair | --rebuild] [--json]\n");
		return 2;
	}
	q->repair = req->args_count == 1 && !strcmp(req->args[0], "--repair");
	q->rebuild = req->args_count == 1 && !strcmp(req->args[0], "--rebuild");
	return relay(s, &env, &q->id, ticket, o);
}

/* coverage CAMERA STREAM [--from MS] [--to MS] [--bucket MS] */
static int coverage(struct supervisor *s, const kp_ControlRequest *req, uint64_t ticket, struct kp_out *o)
{
	kp_Envelope env = kp_Envelope_init_zero;
	env.which_msg = kp_Envelope_coverage_request_tag;
	kp_CoverageRequest *q = &env.msg.coverage_request;
	q->json = req->json;
	q->to_ms = kp_wall_ms();
	q->bucket_ms = 6 * 3600 * 1000ll;
	int bad = req->args_count < 2 || (req->args_count % 2) || parse_stream(req->args[1], &q->stream) < 0 ||
		  strlen(req->args[0]) >= sizeof q->camera;
	int have_from = 0;
	for (pb_size_t i = 2; !bad && i + 1 < req->args_count; i += 2) {
		const char *k = req->args[i];
		int64_t v = 0;
		bad = parse_ms(req->args[i + 1], &v) < 0;
		if (!strcmp(k, "--from")) {
			q->from_ms = v;
			have_from = 1;
		} else if (!strcmp(k, "--to"))
			q->to_ms = v;
		else if (!strcmp(k, "--bucket"))
			q->bucket_ms = v;
		else
			bad = 1;
	}
	if (bad) {
		kp_out_put(o, "usage: coverage CAMERA main|sub [--from MS] [--to MS] [--bucket MS] [--json]\n");
		return 2;
	}
	if (!have_from)
		q->from_ms = q->to_ms - 24 * 3600 * 1000ll;
	snprintf(q->camera, sizeof q->camera, "%s", req->args[0]);
	return relay(s, &env, &q->id, ticket, o);
}

/* keyframe CAMERA STREAM TIME_MS */
static int keyframe(struct supervisor *s, const kp_ControlRequest *req, uint64_t ticket, struct kp_out *o)
{
	kp_Envelope env = kp_Envelope_init_zero;
	env.which_msg = kp_Envelope_keyframe_request_tag;
	kp_KeyframeRequest *q = &env.msg.keyframe_request;
	if (req->args_count != 3 || strlen(req->args[0]) >= sizeof q->camera ||
	    parse_stream(req->args[1], &q->stream) < 0 || parse_ms(req->args[2], &q->time_ms) < 0) {
		kp_out_put(o, "usage: keyframe CAMERA main|sub TIME_MS\n");
		return 2;
	}
	snprintf(q->camera, sizeof q->camera, "%s", req->args[0]);
	return relay(s, &env, &q->id, ticket, o);
}

/* events-search CAMERA FROM_MS TO_MS LABEL LIMIT CURSOR TERMS: keeppeekctl parsed the
 * options and times; empty strings are filters not given. recorderd answers with the
 * search's JSON. */
static int events_search(struct supervisor *s, const kp_ControlRequest *req, uint64_t ticket, struct kp_out *o)
{
	kp_Envelope env = kp_Envelope_init_zero;
	env.which_msg = kp_Envelope_event_search_tag;
	kp_EventSearch *q = &env.msg.event_search;
	int64_t limit = 0;
	const char(*a)[sizeof req->args[0]] = req->args;
	int bad = req->args_count != 7 || strlen(a[0]) >= sizeof q->camera || strlen(a[3]) >= sizeof q->label ||
		  strlen(a[5]) >= sizeof q->cursor || strlen(a[6]) >= sizeof q->q;
	bad = bad || (a[1][0] && parse_ms(a[1], &q->from_ms) < 0) || (a[2][0] && parse_ms(a[2], &q->to_ms) < 0) ||
	      (a[4][0] && (parse_ms(a[4], &limit) < 0 || limit < 1 || limit > UINT32_MAX));
	if (bad) {
		kp_out_put(o, "usage: events-search CAMERA FROM_MS TO_MS LABEL LIMIT CURSOR TERMS (empty: any)\n");
		return 2;
	}
	q->limit = (uint32_t)limit;
	snprintf(q->camera, sizeof q->camera, "%s", a[0]);
	snprintf(q->label, sizeof q->label, "%s", a[3]);
	snprintf(q->cursor, sizeof q->cursor, "%s", a[5]);
	snprintf(q->q, sizeof q->q, "%s", a[6]);
	return relay(s, &env, &q->id, ticket, o);
}

/* tier-status: recorderd keeps the tier journal and its counts. */
static int tier_status(struct supervisor *s, const kp_ControlRequest *req, uint64_t ticket, struct kp_out *o)
{
	kp_Envelope env = kp_Envelope_init_zero;
	env.which_msg = kp_Envelope_tier_status_request_tag;
	env.msg.tier_status_request.json = req->json;
	if (req->args_count) {
		kp_out_put(o, "usage: tier status [--json]\n");
		return 2;
	}
	return relay(s, &env, &env.msg.tier_status_request.id, ticket, o);
}

int control_run(struct supervisor *s, const kp_ControlRequest *req, const struct control_extra *x, char *buf,
		size_t len, uint64_t ticket)
{
	struct kp_out o = {.buf = buf, .len = len};
	buf[0] = '\0';
	if (!strcmp(req->command, "backup"))
		return backup_start(s, req, x, ticket, &o);
	if (!strcmp(req->command, "config-apply"))
		return config_apply_command(s, req, x, &o);
	if (x->nfds) {
		kp_out_put(&o, "'%s' takes no descriptor\n", req->command);
		return 2;
	}
	if (!strcmp(req->command, "check"))
		return check(s, req, ticket, &o);
	if (!strcmp(req->command, "coverage"))
		return coverage(s, req, ticket, &o);
	if (!strcmp(req->command, "keyframe"))
		return keyframe(s, req, ticket, &o);
	if (!strcmp(req->command, "events-search"))
		return events_search(s, req, ticket, &o);
	if (!strcmp(req->command, "tier-status"))
		return tier_status(s, req, ticket, &o);
	if (!strncmp(req->command, "user-", 5) || !strncmp(req->command, "token-", 6)) {
		const struct auth_asker asker = {.ticket = ticket};
		return auth_control(s, req, &o, &asker);
	}
	if (!strcmp(req->command, "status") && req->args_count == 0) {
		status(s, req->json, &o);
		return 0;
	}
	if (!strcmp(req->command, "cameras") && req->args_count == 0) {
		cameras_render(s, req->json, &o);
		return 0;
	}
	if (!strcmp(req->command, "restart") && req->args_count == 1) {
		struct proc *p = proc_by_name(s, req->args[0]);
		if (!p) {
			kp_out_put(&o, "unknown worker '%s' (ingestd, recorderd, webd, rtcd, transcoder, tierd)\n",
				   req->args[0]);
			return 2;
		}
		if (p->peer == kp_Peer_PEER_TRANSCODER && !proc_expected(p)) {
			/* Not running: started, and stopped after the linger unless rtcd has jobs. */
			int r = transcoder_start(s);
			if (r < 0) {
				kp_out_put(&o, "starting %s failed: %s\n", p->name, uv_strerror(r));
				return 1;
			}
			kp_out_put(&o, "starting %s (stopped again %d ms after rtcd's last job)\n", p->name,
				   KP_TRANSCODER_LINGER_MS);
			return 0;
		}
		int r = proc_restart(p);
		if (r == -EPERM) {
			kp_out_put(
			    &o, "restart %s failed: keeppeekd may not signal it (%s): it lacks CAP_KILL; see its log\n",
			    p->name, strerror(-r));
			return 1;
		}
		if (r < 0) {
			kp_out_put(&o, "restart %s failed: %s\n", p->name, strerror(-r));
			return 1;
		}
		kp_out_put(&o, "restarting %s\n", p->name);
		return 0;
	}
	if (!strcmp(req->command, "reload") && req->args_count == 0) {
		char msg[4096];
		int r = supervisor_reload(s, msg, sizeof msg);
		kp_out_put(&o, "%s", msg);
		return r < 0 ? 1 : 0;
	}
	if (!strcmp(req->command, "discover") && req->args_count == 0) {
		char err[160];
		if (discover_start(s, ticket, NULL, 0, req->json, err, sizeof err) < 0) {
			kp_out_put(&o, "%s\n", err);
			return 1;
		}
		return CONTROL_PENDING;
	}
	if (!strcmp(req->command, "camera-test") && req->args_count == 1) {
		char err[300];
		if (camera_test_start(s, req->args[0], ticket, NULL, 0, req->json, err, sizeof err) < 0) {
			kp_out_put(&o, "%s\n", err);
			return 1;
		}
		return CONTROL_PENDING;
	}
	if (!strcmp(req->command, "config-plan"))
		return config_plan_command(s, req, &o);
	if (!strcmp(req->command, "config-show") && req->args_count == 0) {
		int n = kp_config_render(&s->cfg, o.buf, o.len);
		if (n < 0) {
			kp_out_put(&o, "configuration too large to show\n");
			return 1;
		}
		return 0;
	}
	if (!strcmp(req->command, "version") && req->args_count == 0) {
		if (req->json)
			kp_out_put(&o, "{\"version\":\"%s\"}\n", KP_VERSION);
		else
			kp_out_put(&o, "keeppeekd %s\n", KP_VERSION);
		return 0;
	}
	kp_out_put(&o, "unknown command '%s'\n", req->command);
	return 2;
}
