/* [webhook "NAME"] delivery (docs/decisions/0018): every event revision that passes a
 * webhook's camera and label filters is POSTed to its URL as the event's JSON (the one
 * rendering of common/event_json.c), signed with X-KeepPeek-Signature: sha256=HEX, the
 * HMAC-SHA256 of the body under its secret. libcurl's multi interface runs on webd's
 * loop (curl_uv.h); name resolution is libcurl's, on a thread of its own started
 * confined. libcurl is loaded when the first webhook is configured (curl_lib.h), not at
 * webd's start.
 *
 * Each webhook sends one request at a time, in order, from a queue of at most
 * WH_QUEUE deliveries (the oldest dropped, counted, when full). A delivery that fails
 * (no connection, WH_TIMEOUT_MS without an answer, a status other than 2xx) is tried
 * again after 1 s, doubling up to 30 s, WH_ATTEMPTS times in all, then dropped. */
#include <inttypes.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "curl_lib.h"
#include "curl_uv.h"
#include "kp_limits.h"
#include "log.h"
#include "webhook.h"

#define WH_QUEUE       64
#define WH_ATTEMPTS    5
#define WH_BACKOFF_MS  1000
#define WH_BACKOFF_MAX 30000
#define WH_TIMEOUT_MS  10000

struct delivery {
	char *body;
	size_t len;
	char event_id[65];
	unsigned attempts;
};

struct hook {
	bool used;
	kp_Webhook conf;
	struct delivery q[WH_QUEUE];
	unsigned head, count;
	CURL *easy; /* the request in flight, for q[head] */
	struct curl_slist *headers;
	uv_timer_t retry;
	bool waiting; /* the retry timer runs */
	bool up;      /* the last attempt succeeded */
	uint64_t delivered, failures, dropped;
};

static struct {
	struct curl_uv cu; /* its multi handle once libcurl is loaded and set up */
	bool lib_failed;
	bool ready;
	struct hook hooks[KP_MAX_WEBHOOKS];
} W;

static const struct webd_curl *K; /* libcurl's calls, once loaded */

static void start(struct hook *h);

static void check_done(void);

static void pop(struct hook *h)
{
	free(h->q[h->head].body);
	h->q[h->head].body = NULL;
	h->head = (h->head + 1) % WH_QUEUE;
	h->count--;
}

static void retry_cb(uv_timer_t *t)
{
	struct hook *h = t->data;
	h->waiting = false;
	start(h);
}

static void finished(struct hook *h, CURLcode res)
{
	long status = 0;
	K->easy_getinfo(h->easy, CURLINFO_RESPONSE_CODE, &status);
	K->multi_remove_handle(W.cu.multi, h->easy);
	K->easy_cleanup(h->easy);
	h->easy = NULL;
	K->slist_free_all(h->headers);
	h->headers = NULL;
	struct delivery *d = &h->q[h->head];
	if (res == CURLE_OK && status >= 200 && status < 300) {
		h->delivered++;
		h->up = true;
		pop(h);
		start(h);
		return;
	}
	h->up = false;
	h->failures++;
	if (res != CURLE_OK)
		kp_warn("webhook %s: event %s, attempt %u: %s", h->conf.name, d->event_id, d->attempts,
			K->easy_strerror(res));
	else
		kp_warn("webhook %s: event %s, attempt %u: answered %ld", h->conf.name, d->event_id, d->attempts,
			status);
	if (d->attempts >= WH_ATTEMPTS) {
		kp_warn("webhook %s: event %s dropped after %u attempts", h->conf.name, d->event_id, d->attempts);
		h->dropped++;
		pop(h);
		start(h);
		return;
	}
	uint64_t wait = WH_BACKOFF_MS;
	for (unsigned i = 1; i < d->attempts && wait < WH_BACKOFF_MAX; i++)
		wait *= 2;
	if (wait > WH_BACKOFF_MAX)
		wait = WH_BACKOFF_MAX;
	h->waiting = true;
	int r = uv_timer_start(&h->retry, retry_cb, wait, 0);
	if (r < 0) {
		h->waiting = false;
		kp_err("webhook %s: cannot start the retry timer: %s", h->conf.name, uv_strerror(r));
	}
}

static void check_done(void)
{
	CURLMsg *msg;
	int left;
	while ((msg = K->multi_info_read(W.cu.multi, &left))) {
		if (msg->msg != CURLMSG_DONE)
			continue;
		struct hook *h = NULL;
		K->easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&h);
		if (h)
			finished(h, msg->data.result);
	}
}

static size_t discard(char *p, size_t size, size_t n, void *arg)
{
	(void)p;
	(void)arg;
	return size * n;
}

/* "sha256=" and the hex HMAC-SHA256 of body under secret. */
static int sign(const char *secret, const char *body, size_t len, char *out, size_t cap)
{
	unsigned char mac[EVP_MAX_MD_SIZE];
	unsigned n = 0;
	if (!HMAC(EVP_sha256(), secret, (int)strlen(secret), (const unsigned char *)body, len, mac, &n))
		return -1;
	int o = snprintf(out, cap, "X-KeepPeek-Signature: sha256=");
	for (unsigned i = 0; i < n && (size_t)o + 3 <= cap; i++)
		o += snprintf(out + o, cap - (size_t)o, "%02x", mac[i]);
	return 0;
}

/* The next request of h, unless one is in flight or a retry waits. */
static void start(struct hook *h)
{
	if (!h->used || h->easy || h->waiting || !h->count)
		return;
	struct delivery *d = &h->q[h->head];
	d->attempts++;
	char sig[128], id[100];
	snprintf(id, sizeof id, "X-KeepPeek-Event: %s", d->event_id);
	struct curl_slist *hd = K->slist_append(NULL, "Content-Type: application/json");
	struct curl_slist *t = hd ? K->slist_append(hd, id) : NULL;
	hd = t ? t : hd;
	if (t && h->conf.secret[0]) {
		t = sign(h->conf.secret, d->body, d->len, sig, sizeof sig) == 0 ? K->slist_append(hd, sig) : NULL;
		hd = t ? t : hd;
	}
	CURL *e = t ? K->easy_init() : NULL;
	if (!e) {
		K->slist_free_all(hd);
		kp_err("webhook %s: cannot prepare a request for event %s; dropped", h->conf.name, d->event_id);
		h->dropped++;
		pop(h);
		return;
	}
	K->easy_setopt(e, CURLOPT_URL, h->conf.url);
	K->easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
	K->easy_setopt(e, CURLOPT_POST, 1L);
	K->easy_setopt(e, CURLOPT_POSTFIELDS, d->body);
	K->easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)d->len);
	K->easy_setopt(e, CURLOPT_HTTPHEADER, hd);
	K->easy_setopt(e, CURLOPT_USERAGENT, "KeepPeek");
	K->easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)WH_TIMEOUT_MS);
	K->easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	K->easy_setopt(e, CURLOPT_WRITEFUNCTION, discard);
	K->easy_setopt(e, CURLOPT_PRIVATE, (char *)h);
	h->easy = e;
	h->headers = hd;
	CURLMcode mc = K->multi_add_handle(W.cu.multi, e);
	if (mc != CURLM_OK) {
		kp_err("webhook %s: cannot start a request: %s", h->conf.name, K->multi_strerror(mc));
		finished(h, CURLE_FAILED_INIT);
	}
}

/* Whether s is one of the comma-separated words of list (empty list: any). */
static bool in_list(const char *list, const char *s)
{
	size_t n = strlen(s);
	for (const char *p = list; *p;) {
		p += strspn(p, " ,");
		size_t w = strcspn(p, ",");
		size_t e = w;
		while (e && p[e - 1] == ' ')
			e--;
		if (e == n && !strncmp(p, s, n))
			return true;
		p += w;
	}
	return false;
}

static bool wants(const kp_Webhook *c, const kp_EventRecord *e)
{
	if (c->cameras[0] && !in_list(c->cameras, e->camera))
		return false;
	if (!c->labels[0])
		return true;
	for (pb_size_t i = 0; i < e->labels_count; i++)
		if (in_list(c->labels, e->labels[i].name))
			return true;
	return false;
}

bool webd_webhooks_want(const kp_EventRecord *e)
{
	for (unsigned i = 0; i < KP_MAX_WEBHOOKS; i++)
		if (W.hooks[i].used && wants(&W.hooks[i].conf, e))
			return true;
	return false;
}

void webd_webhooks_on_event(const kp_EventRecord *e, const char *json, size_t len)
{
	for (unsigned i = 0; i < KP_MAX_WEBHOOKS; i++) {
		struct hook *h = &W.hooks[i];
		if (!h->used || !wants(&h->conf, e))
			continue;
		if (h->count >= WH_QUEUE) {
			/* The oldest waiting, not the one in flight or retried. */
			if (h->easy || h->waiting) {
				unsigned second = (h->head + 1) % WH_QUEUE;
				free(h->q[second].body);
				for (unsigned k = 1; k + 1 < h->count; k++)
					h->q[(h->head + k) % WH_QUEUE] = h->q[(h->head + k + 1) % WH_QUEUE];
				h->count--;
			} else {
				pop(h);
			}
			h->dropped++;
		}
		struct delivery *d = &h->q[(h->head + h->count) % WH_QUEUE];
		memset(d, 0, sizeof *d);
		d->body = malloc(len + 1);
		if (!d->body) {
			h->dropped++;
			kp_err("webhook %s: out of memory for event %s; dropped", h->conf.name, e->event_id);
			continue;
		}
		memcpy(d->body, json, len);
		d->body[len] = '\0';
		d->len = len;
		snprintf(d->event_id, sizeof d->event_id, "%s", e->event_id);
		h->count++;
		start(h);
	}
}

static void hook_clear(struct hook *h)
{
	if (h->easy) {
		K->multi_remove_handle(W.cu.multi, h->easy);
		K->easy_cleanup(h->easy);
		h->easy = NULL;
		K->slist_free_all(h->headers);
		h->headers = NULL;
	}
	uv_timer_stop(&h->retry);
	h->waiting = false;
	while (h->count)
		pop(h);
	h->used = false;
}

void webd_webhooks_init(uv_loop_t *loop)
{
	W.cu.loop = loop;
	if (uv_timer_init(loop, &W.cu.timer) < 0) {
		kp_err("webhook: cannot create the request timer; no webhooks");
		return;
	}
	for (unsigned i = 0; i < KP_MAX_WEBHOOKS; i++) {
		if (uv_timer_init(loop, &W.hooks[i].retry) < 0) {
			kp_err("webhook: cannot create a retry timer; no webhooks");
			return;
		}
		W.hooks[i].retry.data = &W.hooks[i];
	}
	W.ready = true;
}

/* libcurl loaded and its multi handle on the loop, at the first configured webhook; a
 * failure is said once and leaves webhooks off. */
static bool lib_up(void)
{
	if (W.cu.multi)
		return true;
	if (W.lib_failed)
		return false;
	W.lib_failed = true;
	char why[256] = "";
	K = webd_curl(why, sizeof why);
	if (!K) {
		kp_err("webhook: libcurl cannot be loaded: %s; no webhooks", why);
		return false;
	}
	if (K->global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		kp_err("webhook: libcurl cannot start; no webhooks");
		return false;
	}
	W.cu.multi = K->multi_init();
	if (!W.cu.multi) {
		kp_err("webhook: cannot set up libcurl on the loop; no webhooks");
		return false;
	}
	W.cu.k = K;
	W.cu.who = "webhook";
	W.cu.done = check_done;
	curl_uv_drive(&W.cu);
	W.lib_failed = false;
	return true;
}

static bool same_conf(const kp_Webhook *a, const kp_Webhook *b)
{
	return !strcmp(a->name, b->name) && !strcmp(a->url, b->url) && !strcmp(a->cameras, b->cameras) &&
	       !strcmp(a->labels, b->labels) && !strcmp(a->secret, b->secret);
}

void webd_webhooks_configure(const kp_WorkerConfig *cfg)
{
	if (!W.ready || (cfg->webhooks_count && !lib_up()))
		return;
	for (unsigned i = 0; i < KP_MAX_WEBHOOKS; i++) {
		struct hook *h = &W.hooks[i];
		bool want = i < cfg->webhooks_count;
		if (want && h->used && same_conf(&h->conf, &cfg->webhooks[i]))
			continue;
		if (h->used)
			hook_clear(h);
		if (!want)
			continue;
		h->conf = cfg->webhooks[i];
		h->used = true;
		h->up = false;
		kp_info("webhook %s: events go to %s", h->conf.name, h->conf.url);
	}
}

void webd_webhooks_close(void)
{
	if (!W.ready)
		return;
	for (unsigned i = 0; i < KP_MAX_WEBHOOKS; i++) {
		if (W.hooks[i].used)
			hook_clear(&W.hooks[i]);
		uv_close((uv_handle_t *)&W.hooks[i].retry, NULL);
	}
	uv_close((uv_handle_t *)&W.cu.timer, NULL);
	if (W.cu.multi)
		K->multi_cleanup(W.cu.multi);
	W.cu.multi = NULL;
	W.ready = false;
}

void webd_webhooks_metrics(char *buf, size_t len)
{
	size_t o = 0;
	static const char *const fam[][2] = {
	    {"keeppeek_webd_webhook_up", "gauge"},
	    {"keeppeek_webd_webhook_delivered_total", "counter"},
	    {"keeppeek_webd_webhook_failures_total", "counter"},
	    {"keeppeek_webd_webhook_dropped_total", "counter"},
	    {"keeppeek_webd_webhook_queue_depth", "gauge"},
	};
	buf[0] = '\0';
	for (unsigned f = 0; f < 5; f++) {
		int n = snprintf(buf + o, len - o, "# TYPE %s %s\n", fam[f][0], fam[f][1]);
		if (n < 0 || (size_t)n >= len - o)
			return;
		o += (size_t)n;
		for (unsigned i = 0; i < KP_MAX_WEBHOOKS; i++) {
			const struct hook *h = &W.hooks[i];
			if (!h->used)
				continue;
			uint64_t v = f == 0   ? h->up
				     : f == 1 ? h->delivered
				     : f == 2 ? h->failures
				     : f == 3 ? h->dropped
					      : h->count;
			n = snprintf(buf + o, len - o, "%s{webhook=\"%s\"} %" PRIu64 "\n", fam[f][0], h->conf.name, v);
			if (n < 0 || (size_t)n >= len - o)
				return;
			o += (size_t)n;
		}
	}
}
