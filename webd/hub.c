/* A hub's sites and the fan-out of a request to them (hub.h). A site's state is what its
 * last answer said; every request to it is counted with its latency, every failure
 * (no answer, an HTTP error, an answer that could not be read) as a failure. Sites
 * are asked in parallel, each under [hub] timeout_ms, so a dead site costs a page at
 * most that long and never more than its own slot. */
#include "hub.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hub_fetch.h"
#include "hub_ws.h"
#include "json.h"
#include "kp_time.h"
#include "log.h"

struct site {
	kp_HubSite conf;
	enum hub_state state;
	char error[160];
	uint64_t latency_ms; /* of the last answer */
	int64_t checked_ms;  /* wall time of the last answer or failure; 0: never */
	uint64_t requests, failures, latency_sum_ms;
	unsigned inflight;
};

static struct {
	bool enabled;
	unsigned timeout_ms;
	unsigned n;
	struct site s[KP_MAX_SITES];
} H;

static const char *const state_names[] = {"unknown", "up", "down", "refused", "bad_answer"};

void webd_hub_init(uv_loop_t *loop)
{
	hub_fetch_init(loop);
	hub_ws_init(loop);
}

struct hub_ws *webd_hub_link_open(unsigned i, const struct hub_ws_ops *ops, void *arg, char *why, size_t why_len)
{
	if (i >= webd_hub_nsites() || !H.s[i].conf.token[0]) {
		snprintf(why, why_len, "no such site, or no usable token");
		return NULL;
	}
	return hub_ws_open(&H.s[i].conf, &H.s[i].inflight, H.timeout_ms, ops, arg, why, why_len);
}

void webd_hub_configure(const kp_WorkerConfig *cfg)
{
	bool changed = H.enabled != cfg->hub_enabled || H.n != cfg->hub_sites_count;
	for (unsigned i = 0; !changed && i < H.n; i++)
		changed = memcmp(&H.s[i].conf, &cfg->hub_sites[i], sizeof(kp_HubSite)) != 0;
	H.enabled = cfg->hub_enabled;
	H.timeout_ms = cfg->hub_timeout_ms ? cfg->hub_timeout_ms : 3000;
	if (!changed)
		return;
	/* Requests in flight keep their slot's counter (hub_fetch.h); states start again. */
	unsigned n = cfg->hub_sites_count < KP_MAX_SITES ? cfg->hub_sites_count : KP_MAX_SITES;
	for (unsigned i = 0; i < n; i++) {
		struct site *s = &H.s[i];
		unsigned inflight = s->inflight;
		memset(s, 0, sizeof *s);
		s->conf = cfg->hub_sites[i];
		s->inflight = inflight;
		if (!s->conf.token[0]) {
			s->state = HUB_REFUSED;
			snprintf(s->error, sizeof s->error, "no usable token or CA file (see keeppeekd's log)");
		}
		kp_info("hub: site %s at %s", s->conf.name, s->conf.url);
	}
	H.n = n;
}

void webd_hub_close(void)
{
	hub_fetch_close();
}

bool webd_hub_enabled(void)
{
	return H.enabled && H.n > 0;
}

unsigned webd_hub_nsites(void)
{
	return webd_hub_enabled() ? H.n : 0;
}

const char *webd_hub_site_name(unsigned i)
{
	return i < H.n ? H.s[i].conf.name : "";
}

int webd_hub_site_find(const char *name)
{
	for (unsigned i = 0; i < webd_hub_nsites(); i++)
		if (!strcmp(H.s[i].conf.name, name))
			return (int)i;
	return -1;
}

void hub_site_verdict(unsigned i, const struct hub_answer *a, bool ok)
{
	if (i >= H.n || !a->asked)
		return;
	struct site *s = &H.s[i];
	s->checked_ms = kp_wall_ms();
	s->requests++;
	s->latency_ms = a->ms;
	s->latency_sum_ms += a->ms;
	if (a->why) {
		s->state = HUB_DOWN;
		snprintf(s->error, sizeof s->error, "%s", a->why);
	} else if (a->status == 401 || a->status == 403) {
		s->state = HUB_REFUSED;
		snprintf(s->error, sizeof s->error, "the site refused the token (HTTP %ld)", a->status);
	} else if (a->status != 200) {
		s->state = HUB_DOWN;
		snprintf(s->error, sizeof s->error, "the site answered HTTP %ld", a->status);
	} else if (!ok) {
		s->state = HUB_BAD_ANSWER;
		snprintf(s->error, sizeof s->error, "the site's answer could not be read");
	} else {
		s->state = HUB_UP;
		s->error[0] = '\0';
		return;
	}
	s->failures++;
	kp_warn("hub: site %s: %s", s->conf.name, s->error);
}

void hub_site_json(unsigned i, struct json_w *w)
{
	const struct site *s = &H.s[i];
	jw_obj(w);
	jw_key(w, "name");
	jw_str(w, s->conf.name);
	jw_key(w, "state");
	jw_str(w, state_names[s->state]);
	jw_key(w, "error");
	if (s->error[0])
		jw_str(w, s->error);
	else
		jw_null(w);
	jw_key(w, "latency_ms");
	jw_int(w, (int64_t)s->latency_ms);
	jw_key(w, "checked_ms");
	jw_int(w, s->checked_ms);
	jw_obj_end(w);
}

static void fan_free(struct hub_fan *f)
{
	for (unsigned i = 0; i < KP_MAX_SITES; i++) {
		hub_get_cancel(f->gets[i]);
		free(f->a[i].body);
	}
	free(f);
}

static void fan_finish(struct hub_fan *f)
{
	struct web_req *r = web_req_find(f->req);
	if (r)
		f->done(r, f);
	fan_free(f);
}

struct fan_slot {
	struct hub_fan *fan;
	unsigned i;
};

static void on_answer(void *arg, long status, const char *why, const char *body, size_t len, uint64_t ms)
{
	struct fan_slot *slot = arg;
	struct hub_fan *fan = slot->fan;
	unsigned i = slot->i;
	free(slot);
	struct hub_answer *a = &fan->a[i];
	fan->gets[i] = NULL;
	a->status = status;
	a->why = why;
	a->ms = ms;
	if (!why && status == 200) {
		a->body = malloc(len + 1);
		if (a->body) {
			memcpy(a->body, body, len);
			a->body[len] = '\0';
			a->len = len;
		} else {
			a->why = "out of memory";
		}
	}
	if (--fan->pending == 0)
		fan_finish(fan);
}

void hub_fan_start(struct web_req *r, size_t max_bytes, unsigned min_timeout_ms,
		   int (*path)(unsigned i, char *buf, size_t cap, const void *ctx), const void *ctx, size_t ctx_len,
		   void (*done)(struct web_req *r, struct hub_fan *f))
{
	struct hub_fan *f = ctx_len <= HUB_FAN_CTX ? calloc(1, sizeof *f) : NULL;
	if (!f) {
		kp_err("hub: no memory for a request's fan-out (%zu bytes of parameters)", ctx_len);
		web_reply_error(r, 503, "unavailable", "out of memory");
		return;
	}
	f->req = web_req_id(r);
	f->done = done;
	if (ctx_len)
		memcpy(f->ctx, ctx, ctx_len);
	f->pending = 1; /* held until every site is started */
	for (unsigned i = 0; i < webd_hub_nsites(); i++) {
		char p[1536];
		if (H.s[i].state == HUB_REFUSED && !H.s[i].conf.token[0])
			continue;
		if (path(i, p, sizeof p, f->ctx) != 1)
			continue;
		struct fan_slot *slot = malloc(sizeof *slot);
		char why[256];
		f->a[i].asked = true;
		if (!slot) {
			f->a[i].why = "out of memory";
			continue;
		}
		*slot = (struct fan_slot){f, i};
		f->pending++;
		unsigned timeout = H.timeout_ms > min_timeout_ms ? H.timeout_ms : min_timeout_ms;
		f->gets[i] = hub_get_start(&H.s[i].conf, &H.s[i].inflight, p, timeout, max_bytes, on_answer, slot, why,
					   sizeof why);
		if (!f->gets[i]) {
			f->pending--;
			free(slot);
			kp_warn("hub: site %s: %s", H.s[i].conf.name, why);
			f->a[i].why = "cannot ask the site now (too many requests waiting, or no HTTP client)";
		}
	}
	if (--f->pending == 0)
		fan_finish(f);
}

void webd_hub_metrics(char *buf, size_t len)
{
	size_t o = 0;
	static const char *const fam[][2] = {
	    {"keeppeek_webd_hub_site_up", "gauge"},
	    {"keeppeek_webd_hub_site_requests_total", "counter"},
	    {"keeppeek_webd_hub_site_failures_total", "counter"},
	    {"keeppeek_webd_hub_site_latency_ms", "gauge"},
	    {"keeppeek_webd_hub_site_latency_ms_sum", "counter"},
	    {"keeppeek_webd_hub_site_inflight", "gauge"},
	};
	buf[0] = '\0';
	if (!webd_hub_enabled())
		return;
	for (unsigned f = 0; f < 6; f++) {
		int n = snprintf(buf + o, len - o, "# TYPE %s %s\n", fam[f][0], fam[f][1]);
		if (n < 0 || (size_t)n >= len - o)
			return;
		o += (size_t)n;
		for (unsigned i = 0; i < H.n; i++) {
			const struct site *s = &H.s[i];
			uint64_t v = f == 0   ? s->state == HUB_UP
				     : f == 1 ? s->requests
				     : f == 2 ? s->failures
				     : f == 3 ? s->latency_ms
				     : f == 4 ? s->latency_sum_ms
					      : s->inflight;
			n = snprintf(buf + o, len - o, "%s{site=\"%s\"} %" PRIu64 "\n", fam[f][0], s->conf.name, v);
			if (n < 0 || (size_t)n >= len - o)
				return;
			o += (size_t)n;
		}
	}
}
