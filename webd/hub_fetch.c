/* A hub's requests to its sites (hub_fetch.h): libcurl's multi interface on webd's loop
 * (curl_uv.h), with a multi handle of its own so that neither it nor the webhooks wait
 * for the other's requests. Redirects are not followed (a
 * site that redirects answers its 3xx), only http and https are allowed, and the
 * token travels in an Authorization header the site's webd reads. */
#include "hub_fetch.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "curl_lib.h"
#include "curl_uv.h"
#include "kp_time.h"
#include "log.h"

struct hub_get {
	CURL *easy;
	struct curl_slist *headers;
	unsigned *inflight;
	hub_get_cb cb;
	void *arg;
	char *buf;
	size_t len, cap, max;
	bool too_large;
	uint64_t started_ms;
	hub_conn_cb conn_cb; /* a connection only (hub_conn_start) */
};

static struct {
	struct curl_uv cu;
	bool failed;
	char why[256];
	bool timer_open;
} F;

static const struct webd_curl *K;

static void check_done(void);

static void get_free(struct hub_get *g)
{
	if (g->easy) {
		K->multi_remove_handle(F.cu.multi, g->easy);
		K->easy_cleanup(g->easy);
	}
	K->slist_free_all(g->headers);
	if (g->inflight && *g->inflight)
		(*g->inflight)--;
	free(g->buf);
	free(g);
}

static void check_done(void)
{
	CURLMsg *msg;
	int left;
	while ((msg = K->multi_info_read(F.cu.multi, &left))) {
		if (msg->msg != CURLMSG_DONE)
			continue;
		struct hub_get *g = NULL;
		K->easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&g);
		if (!g)
			continue;
		CURLcode res = msg->data.result;
		if (g->conn_cb) {
			curl_socket_t fd = CURL_SOCKET_BAD;
			if (res == CURLE_OK)
				K->easy_getinfo(g->easy, CURLINFO_ACTIVESOCKET, &fd);
			CURL *e = g->easy;
			if (res == CURLE_OK && fd != CURL_SOCKET_BAD) {
				K->easy_setopt(e, CURLOPT_PRIVATE, NULL);
				g->easy = NULL; /* the caller's now: hub_conn_close */
				g->conn_cb(g->arg, (struct hub_conn *)e, (int)fd, NULL);
			} else {
				g->conn_cb(g->arg, NULL, -1,
					   res == CURLE_OPERATION_TIMEDOUT ? "timed out"
					   : res != CURLE_OK               ? K->easy_strerror(res)
									   : "no socket");
			}
			get_free(g);
			continue;
		}
		long status = 0;
		K->easy_getinfo(g->easy, CURLINFO_RESPONSE_CODE, &status);
		uint64_t now = kp_mono_ms();
		uint64_t ms = now > g->started_ms ? now - g->started_ms : 0;
		const char *why = NULL;
		if (g->too_large)
			why = "answer too large";
		else if (res == CURLE_OPERATION_TIMEDOUT)
			why = "timed out";
		else if (res != CURLE_OK)
			why = K->easy_strerror(res);
		g->cb(g->arg, why ? 0 : status, why, g->buf ? g->buf : "", why ? 0 : g->len, ms);
		get_free(g);
	}
}

static size_t on_data(char *p, size_t size, size_t n, void *arg)
{
	struct hub_get *g = arg;
	size_t add = size * n; /* libcurl's pieces are at most CURL_MAX_WRITE_SIZE */
	if (add > g->max - g->len) {
		g->too_large = true;
		return 0;
	}
	if (g->len + add + 1 > g->cap) {
		size_t cap = g->cap ? g->cap : 16384;
		while (cap < g->len + add + 1)
			cap *= 2;
		if (cap > g->max + 1)
			cap = g->max + 1;
		char *nb = realloc(g->buf, cap);
		if (!nb)
			return 0;
		g->buf = nb;
		g->cap = cap;
	}
	memcpy(g->buf + g->len, p, add);
	g->len += add;
	g->buf[g->len] = '\0';
	return add;
}

static bool lib_up(char *why, size_t why_len)
{
	if (F.cu.multi)
		return true;
	if (F.failed) {
		snprintf(why, why_len, "%s", F.why);
		return false;
	}
	F.failed = true;
	char lwhy[200] = "";
	K = webd_curl(lwhy, sizeof lwhy);
	if (!K)
		snprintf(F.why, sizeof F.why, "libcurl cannot be loaded: %s", lwhy);
	else if (K->global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
		snprintf(F.why, sizeof F.why, "libcurl cannot start");
	else if (!(F.cu.multi = K->multi_init()))
		snprintf(F.why, sizeof F.why, "libcurl cannot make a multi handle");
	if (!F.cu.multi) {
		kp_err("hub: %s; no site can be asked", F.why);
		snprintf(why, why_len, "%s", F.why);
		return false;
	}
	F.cu.k = K;
	F.cu.who = "hub";
	F.cu.done = check_done;
	curl_uv_drive(&F.cu);
	F.failed = false;
	return true;
}

void hub_fetch_init(uv_loop_t *loop)
{
	F.cu.loop = loop;
	if (uv_timer_init(loop, &F.cu.timer) == 0)
		F.timer_open = true;
	else
		kp_err("hub: cannot create the request timer; no site can be asked");
}

/* Whether another request may start for a site with *inflight in flight; else why. */
static bool may_start(const unsigned *inflight, char *why, size_t why_len)
{
	if (!F.timer_open) {
		snprintf(why, why_len, "no request timer");
		return false;
	}
	if (!lib_up(why, why_len))
		return false;
	if (*inflight >= HUB_SITE_INFLIGHT) {
		snprintf(why, why_len, "%d requests already wait for this site", HUB_SITE_INFLIGHT);
		return false;
	}
	return true;
}

/* The site's CA, then g's transfer on the multi handle, counted in *inflight; NULL (g
 * freed) when libcurl refuses it. */
static struct hub_get *add_transfer(struct hub_get *g, const kp_HubSite *site, unsigned *inflight, const char *what,
				    char *why, size_t why_len)
{
	CURL *e = g->easy;
	if (site->ca_pem.size) {
		struct curl_blob blob = {
		    .data = (void *)site->ca_pem.bytes, .len = site->ca_pem.size, .flags = CURL_BLOB_COPY};
		K->easy_setopt(e, CURLOPT_CAINFO_BLOB, &blob);
	}
	CURLMcode mc = K->multi_add_handle(F.cu.multi, e);
	if (mc != CURLM_OK) {
		snprintf(why, why_len, "cannot start a %s: %s", what, K->multi_strerror(mc));
		K->easy_cleanup(e);
		g->easy = NULL;
		get_free(g);
		return NULL;
	}
	g->inflight = inflight;
	(*inflight)++;
	return g;
}

struct hub_get *hub_get_start(const kp_HubSite *site, unsigned *inflight, const char *path, unsigned timeout_ms,
			      size_t max_bytes, hub_get_cb cb, void *arg, char *why, size_t why_len)
{
	if (!may_start(inflight, why, why_len))
		return NULL;
	char url[2048], auth[300];
	size_t base = strlen(site->url);
	while (base && site->url[base - 1] == '/')
		base--;
	int n = snprintf(url, sizeof url, "%.*s%s", (int)base, site->url, path);
	int m = snprintf(auth, sizeof auth, "Authorization: Bearer %s", site->token);
	struct hub_get *g = calloc(1, sizeof *g);
	if (n < 0 || (size_t)n >= sizeof url || m < 0 || (size_t)m >= sizeof auth || !g) {
		snprintf(why, why_len, "%s", g ? "request URL too long" : "out of memory");
		free(g);
		return NULL;
	}
	g->headers = K->slist_append(NULL, auth);
	g->easy = g->headers ? K->easy_init() : NULL;
	if (!g->easy) {
		snprintf(why, why_len, "cannot prepare a request");
		K->slist_free_all(g->headers);
		free(g);
		return NULL;
	}
	g->cb = cb;
	g->arg = arg;
	g->max = max_bytes;
	g->started_ms = kp_mono_ms();
	CURL *e = g->easy;
	K->easy_setopt(e, CURLOPT_URL, url);
	K->easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
	K->easy_setopt(e, CURLOPT_HTTPHEADER, g->headers);
	K->easy_setopt(e, CURLOPT_USERAGENT, "KeepPeek-hub");
	K->easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)timeout_ms);
	K->easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, (long)timeout_ms);
	K->easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	K->easy_setopt(e, CURLOPT_WRITEFUNCTION, on_data);
	K->easy_setopt(e, CURLOPT_WRITEDATA, g);
	K->easy_setopt(e, CURLOPT_PRIVATE, (char *)g);
	return add_transfer(g, site, inflight, "request", why, why_len);
}

struct hub_get *hub_conn_start(const kp_HubSite *site, unsigned *inflight, unsigned timeout_ms, hub_conn_cb cb,
			       void *arg, char *why, size_t why_len)
{
	if (!may_start(inflight, why, why_len))
		return NULL;
	struct hub_get *g = calloc(1, sizeof *g);
	CURL *e = g ? K->easy_init() : NULL;
	if (!e) {
		snprintf(why, why_len, "out of memory");
		free(g);
		return NULL;
	}
	g->easy = e;
	g->conn_cb = cb;
	g->arg = arg;
	g->started_ms = kp_mono_ms();
	K->easy_setopt(e, CURLOPT_URL, site->url);
	K->easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
	K->easy_setopt(e, CURLOPT_CONNECT_ONLY, 1L);
	K->easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, (long)timeout_ms);
	K->easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)timeout_ms);
	K->easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	K->easy_setopt(e, CURLOPT_PRIVATE, (char *)g);
	return add_transfer(g, site, inflight, "connection", why, why_len);
}

ssize_t hub_conn_send(struct hub_conn *c, const void *p, size_t n)
{
	size_t done = 0;
	CURLcode r = K->easy_send((CURL *)c, p, n, &done);
	if (r == CURLE_AGAIN)
		return -EAGAIN;
	return r == CURLE_OK ? (ssize_t)done : -EIO;
}

ssize_t hub_conn_recv(struct hub_conn *c, void *p, size_t n)
{
	size_t done = 0;
	CURLcode r = K->easy_recv((CURL *)c, p, n, &done);
	if (r == CURLE_AGAIN)
		return -EAGAIN;
	return r == CURLE_OK ? (ssize_t)done : -EIO;
}

void hub_conn_close(struct hub_conn *c)
{
	if (!c)
		return;
	K->multi_remove_handle(F.cu.multi, (CURL *)c);
	K->easy_cleanup((CURL *)c);
}

void hub_get_cancel(struct hub_get *g)
{
	if (g)
		get_free(g);
}

void hub_fetch_close(void)
{
	if (F.timer_open)
		uv_close((uv_handle_t *)&F.cu.timer, NULL);
	F.timer_open = false;
	if (F.cu.multi)
		K->multi_cleanup(F.cu.multi);
	F.cu.multi = NULL;
}
