/* The hub's routes (docs/decisions/0033, keeppeek-api(7)): /api/v1/hub/sites, cameras,
 * coverage and events, each answered from every site at once (hub.c) and merged
 * (hub_merge.c), with every site's state in "sites"; and an event's pictures, and a
 * site camera's timeline preview, from the site that holds them. A webd that is not a hub answers them 404 "not_hub".
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hub.h"
#include "hub_merge.h"
#include "json.h"
#include "kp_checked.h"
#include "log.h"
#include "params.h"
#include "webd.h"

/* Bounds on one site's answer. */
#define HUB_LIST_BYTES    (1 * KP_MIB) /* cameras, coverage */
#define HUB_EVENTS_BYTES  (4 * KP_MIB) /* a page of up to 500 events */
#define HUB_PICTURE_BYTES (8 * KP_MIB) /* an event's JPEG */
/* A picture the site may have to make first (its transcoder, started on demand, decodes
 * a keyframe): at least this long, whatever [hub] timeout_ms says. */
#define HUB_PICTURE_TIMEOUT_MS 10000

static bool hub_or_404(struct web_req *r)
{
	if (webd_hub_enabled())
		return true;
	web_reply_error(r, 404, "not_hub", "this server is not a hub ([hub] enabled = no)");
	return false;
}

/* The answer of w (every site's state appended as "sites"), or a 500 when it overflowed. */
static void reply_json(struct web_req *r, struct json_w *w)
{
	jw_key(w, "sites");
	jw_arr(w);
	for (unsigned i = 0; i < webd_hub_nsites(); i++)
		hub_site_json(i, w);
	jw_arr_end(w);
	jw_obj_end(w);
	size_t len;
	if (jw_finish(w, &len) < 0) {
		web_reply_error(r, 500, "too_large", "the merged answer is larger than its buffer");
		return;
	}
	web_reply(r, 200, "application/json", w->buf, len, NULL);
}

static char *answer_buf(size_t cap)
{
	return malloc(cap);
}

/* ---- sites ---- */

/* Any server answers this one: {"hub": false, "sites": []} when it is not a hub, so
 * that a page asks without an error first. */
static void route_sites(struct web_req *r)
{
	char buf[8192];
	struct json_w w;
	jw_init(&w, buf, sizeof buf);
	jw_obj(&w);
	jw_key(&w, "hub");
	jw_bool(&w, webd_hub_enabled());
	reply_json(r, &w);
}

/* ---- cameras ---- */

static int cameras_path(unsigned i, char *buf, size_t cap, const void *ctx)
{
	(void)i;
	(void)ctx;
	snprintf(buf, cap, "/api/v1/cameras");
	return 1;
}

#define MERGED_CAP (KP_MAX_SITES * HUB_LIST_BYTES + 64 * 1024)

static void cameras_done(struct web_req *r, struct hub_fan *f)
{
	char *buf = answer_buf(MERGED_CAP);
	if (!buf) {
		web_reply_error(r, 503, "unavailable", "out of memory");
		return;
	}
	struct json_w w;
	jw_init(&w, buf, MERGED_CAP);
	jw_obj(&w);
	jw_key(&w, "cameras");
	jw_arr(&w);
	for (unsigned i = 0; i < webd_hub_nsites(); i++) {
		struct hub_answer *a = &f->a[i];
		if (!a->asked)
			continue;
		bool ok = false;
		struct hub_doc d;
		if (a->body && hub_doc_parse(&d, a->body, a->len) == 0) {
			struct json_w save = w;
			unsigned n;
			ok = hub_merge_cameras(&d.d, webd_hub_site_name(i), &w, &n) == 0;
			if (!ok)
				w = save; /* nothing of a bad answer */
			hub_doc_free(&d);
		}
		hub_site_verdict(i, a, ok);
	}
	jw_arr_end(&w);
	reply_json(r, &w);
	free(buf);
}

static void route_cameras(struct web_req *r)
{
	if (hub_or_404(r))
		hub_fan_start(r, HUB_LIST_BYTES, 0, cameras_path, NULL, 0, cameras_done);
}

/* ---- coverage ---- */

struct coverage_ctx {
	int64_t from, to, bucket;
	int32_t stream;
	char site[KP_SITE_NAME_MAX + 1];
	char camera[KP_CAMERA_NAME_MAX + 1];
};

_Static_assert(sizeof(struct coverage_ctx) <= HUB_FAN_CTX, "a fan-out holds the coverage parameters");

static int coverage_path(unsigned i, char *buf, size_t cap, const void *ctx)
{
	const struct coverage_ctx *c = ctx;
	if (c->site[0] && strcmp(c->site, webd_hub_site_name(i)))
		return 0;
	int n =
	    snprintf(buf, cap, "/api/v1/coverage?from=%lld&to=%lld&bucket=%lld&limit=%d%s%s%s", (long long)c->from,
		     (long long)c->to, (long long)c->bucket, HUB_CAMERAS_MAX, c->camera[0] ? "&camera=" : "", c->camera,
		     c->stream < 0    ? ""
		     : c->stream == 0 ? "&stream=main"
				      : "&stream=sub");
	return n > 0 && (size_t)n < cap;
}

static void coverage_done(struct web_req *r, struct hub_fan *f)
{
	const struct coverage_ctx *c = (const struct coverage_ctx *)f->ctx;
	char *buf = answer_buf(MERGED_CAP);
	if (!buf) {
		web_reply_error(r, 503, "unavailable", "out of memory");
		return;
	}
	struct json_w w;
	jw_init(&w, buf, MERGED_CAP);
	jw_obj(&w);
	jw_key(&w, "from_ms");
	jw_int(&w, c->from);
	jw_key(&w, "to_ms");
	jw_int(&w, c->to);
	jw_key(&w, "bucket_ms");
	jw_int(&w, c->bucket);
	jw_key(&w, "cameras");
	jw_arr(&w);
	uint64_t total = 0;
	for (unsigned i = 0; i < webd_hub_nsites(); i++) {
		struct hub_answer *a = &f->a[i];
		if (!a->asked)
			continue;
		bool ok = false;
		struct hub_doc d;
		if (a->body && hub_doc_parse(&d, a->body, a->len) == 0) {
			struct json_w save = w;
			unsigned n;
			ok = hub_merge_coverage(&d.d, webd_hub_site_name(i), c->from, c->to, c->bucket, &w, &total,
						&n) == 0;
			if (!ok)
				w = save;
			hub_doc_free(&d);
		}
		hub_site_verdict(i, a, ok);
	}
	jw_arr_end(&w);
	jw_key(&w, "total_cameras");
	jw_int(&w, total > INT64_MAX ? INT64_MAX : (int64_t)total);
	reply_json(r, &w);
	free(buf);
}

static void route_coverage(struct web_req *r)
{
	if (!hub_or_404(r))
		return;
	struct coverage_ctx c = {.bucket = 6 * 3600 * 1000ll, .stream = -1};
	char full[KP_SITE_NAME_MAX + KP_CAMERA_NAME_MAX + 2] = "";
	if (webd_param_ms(r, "from", true, &c.from) < 0 || webd_param_ms(r, "to", true, &c.to) < 0 ||
	    webd_param_duration(r, "bucket", &c.bucket) < 0 ||
	    webd_param_str(r, "camera", false, full, sizeof full) < 0 ||
	    webd_param_stream(r, "stream", false, &c.stream) < 0)
		return;
	int64_t first, nb;
	if (c.to <= c.from || c.bucket <= 0 || kp_floor_i64(c.from, c.bucket, &first) < 0 ||
	    kp_steps_i64(first, c.to, c.bucket, &nb) < 0 || nb > HUB_COVERAGE_BUCKETS) {
		web_reply_error(r, 400, "bad_parameter", "to must be after from, and the range at most %d buckets",
				HUB_COVERAGE_BUCKETS);
		return;
	}
	if (full[0] && (hub_split_camera(full, c.site, sizeof c.site, c.camera, sizeof c.camera) < 0 ||
			!hub_camera_name_ok(c.camera) || webd_hub_site_find(c.site) < 0)) {
		web_reply_error(r, 404, "not_found", "camera is SITE/CAMERA of a configured site");
		return;
	}
	hub_fan_start(r, HUB_LIST_BYTES, 0, coverage_path, &c, sizeof c, coverage_done);
}

/* ---- events ---- */

struct events_ctx {
	int64_t from, to;
	uint32_t limit;
	char label[65];
	char q[256];
	char site[KP_SITE_NAME_MAX + 1];
	char camera[KP_CAMERA_NAME_MAX + 1];
	struct hub_cursor cur;
};

_Static_assert(sizeof(struct events_ctx) <= HUB_FAN_CTX, "a fan-out holds the search parameters");

/* s appended to the query as name=VALUE, percent-encoded. */
static int add_param(char *buf, size_t cap, size_t *o, const char *name, const char *v)
{
	int n = snprintf(buf + *o, cap - *o, "&%s=", name);
	if (n < 0 || (size_t)n >= cap - *o)
		return -1;
	*o += (size_t)n;
	for (const unsigned char *p = (const unsigned char *)v; *p; p++) {
		bool plain = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
			     *p == '-' || *p == '_' || *p == '.';
		n = plain ? snprintf(buf + *o, cap - *o, "%c", *p) : snprintf(buf + *o, cap - *o, "%%%02X", *p);
		if (n < 0 || (size_t)n >= cap - *o)
			return -1;
		*o += (size_t)n;
	}
	return 0;
}

static int events_path(unsigned i, char *buf, size_t cap, const void *ctx)
{
	const struct events_ctx *c = ctx;
	const char *name = webd_hub_site_name(i);
	if (c->site[0] && strcmp(c->site, name))
		return 0;
	struct hub_cursor cur = c->cur;
	const struct hub_place *p = hub_cursor_place(&cur, name, false);
	if (p && p->done)
		return 0;
	uint32_t want = (p ? p->skip : 0) + c->limit;
	if (want > HUB_EVENTS_LIMIT)
		want = HUB_EVENTS_LIMIT;
	int n = snprintf(buf, cap, "/api/v1/events?limit=%u&from=%lld&to=%lld", (unsigned)want, (long long)c->from,
			 (long long)c->to);
	if (n < 0 || (size_t)n >= cap)
		return 0;
	size_t o = (size_t)n;
	if ((p && p->cursor[0] && add_param(buf, cap, &o, "cursor", p->cursor) < 0) ||
	    (c->camera[0] && add_param(buf, cap, &o, "camera", c->camera) < 0) ||
	    (c->label[0] && add_param(buf, cap, &o, "label", c->label) < 0) ||
	    (c->q[0] && add_param(buf, cap, &o, "q", c->q) < 0))
		return 0;
	return 1;
}

static void events_done(struct web_req *r, struct hub_fan *f)
{
	struct events_ctx *c = (struct events_ctx *)f->ctx;
	struct hub_doc docs[KP_MAX_SITES];
	struct hub_page pages[KP_MAX_SITES];
	struct hub_place start[KP_MAX_SITES];
	unsigned np = 0;
	bool partial = false;
	for (unsigned i = 0; i < webd_hub_nsites(); i++) {
		const char *name = webd_hub_site_name(i);
		if (c->site[0] && strcmp(c->site, name))
			continue;
		struct hub_answer *a = &f->a[i];
		const struct hub_place *p = hub_cursor_place(&c->cur, name, false);
		start[np] = p ? *p : (struct hub_place){0};
		pages[np] = (struct hub_page){.site = name, .in = &start[np], .doc = NULL};
		bool ok = false;
		if (a->body && hub_doc_parse(&docs[np], a->body, a->len) == 0) {
			ok = hub_check_events(&docs[np].d, start[np].skip) == 0;
			if (ok)
				pages[np].doc = &docs[np].d;
			else
				hub_doc_free(&docs[np]);
		}
		if (a->asked) {
			hub_site_verdict(i, a, ok);
			partial |= !ok;
		}
		np++;
	}
	size_t cap = HUB_EVENTS_BYTES + 64 * 1024;
	char *buf = answer_buf(cap);
	if (buf) {
		struct json_w w;
		jw_init(&w, buf, cap);
		jw_obj(&w);
		jw_key(&w, "events");
		jw_arr(&w);
		struct hub_cursor out;
		bool more;
		unsigned written;
		int rc = hub_merge_events(pages, np, c->limit, &w, &out, &more, &written);
		jw_arr_end(&w);
		char cur[HUB_CURSOR_MAX + 1];
		jw_key(&w, "next_cursor");
		if (rc == 0 && more && hub_cursor_format(&out, cur, sizeof cur) > 0)
			jw_str(&w, cur);
		else
			jw_null(&w);
		jw_key(&w, "partial");
		jw_bool(&w, partial);
		if (rc < 0)
			web_reply_error(r, 502, "bad_answer", "a site's events could not be merged");
		else
			reply_json(r, &w);
		free(buf);
	} else {
		web_reply_error(r, 503, "unavailable", "out of memory");
	}
	for (unsigned k = 0; k < np; k++)
		if (pages[k].doc)
			hub_doc_free(&docs[k]);
}

static void route_events(struct web_req *r)
{
	if (!hub_or_404(r))
		return;
	struct events_ctx c = {.limit = 50};
	char full[KP_SITE_NAME_MAX + KP_CAMERA_NAME_MAX + 2] = "", cursor[HUB_CURSOR_MAX + 2] = "";
	if (webd_param_ms(r, "from", false, &c.from) < 0 || webd_param_ms(r, "to", false, &c.to) < 0 ||
	    webd_param_uint(r, "limit", HUB_EVENTS_LIMIT, &c.limit) < 0 ||
	    webd_param_str(r, "camera", false, full, sizeof full) < 0 ||
	    webd_param_str(r, "label", false, c.label, sizeof c.label) < 0 ||
	    webd_param_str(r, "q", false, c.q, sizeof c.q) < 0 ||
	    webd_param_str(r, "cursor", false, cursor, sizeof cursor) < 0)
		return;
	if (c.limit == 0)
		c.limit = 50;
	if (cursor[0] && hub_cursor_parse(cursor, &c.cur) < 0) {
		web_reply_error(r, 400, "bad_cursor", "cursor is not one this hub made");
		return;
	}
	for (unsigned i = 0; i < c.cur.n; i++)
		if (webd_hub_site_find(c.cur.p[i].site) < 0) {
			web_reply_error(r, 400, "bad_cursor", "the cursor names a site this hub does not have");
			return;
		}
	if (full[0] && (hub_split_camera(full, c.site, sizeof c.site, c.camera, sizeof c.camera) < 0 ||
			!hub_camera_name_ok(c.camera) || webd_hub_site_find(c.site) < 0)) {
		web_reply_error(r, 404, "not_found", "camera is SITE/CAMERA of a configured site");
		return;
	}
	/* A first page starts every site; a later one treats a site the cursor does not
	 * name (added since) as done, so no event is given twice. */
	for (unsigned i = 0; cursor[0] && i < webd_hub_nsites(); i++)
		if (!hub_cursor_place(&c.cur, webd_hub_site_name(i), false))
			hub_cursor_place(&c.cur, webd_hub_site_name(i), true)->done = true;
	hub_fan_start(r, HUB_EVENTS_BYTES, 0, events_path, &c, sizeof c, events_done);
}

/* ---- an event's pictures: /api/v1/hub/events/SITE/ID/(thumbnail|snapshot) ---- */

struct picture_ctx {
	int site;
	char path[600];
};

_Static_assert(sizeof(struct picture_ctx) <= HUB_FAN_CTX, "a fan-out holds the picture's path");

static int picture_path(unsigned i, char *buf, size_t cap, const void *ctx)
{
	const struct picture_ctx *c = ctx;
	if ((int)i != c->site)
		return 0;
	return snprintf(buf, cap, "%s", c->path) < (int)cap;
}

static void picture_done(struct web_req *r, struct hub_fan *f)
{
	const struct picture_ctx *c = (const struct picture_ctx *)f->ctx;
	struct hub_answer *a = &f->a[c->site];
	if (a->why || a->status != 404)
		hub_site_verdict((unsigned)c->site, a, true);
	if (a->body && a->status == 200)
		web_reply(r, 200, "image/jpeg", a->body, a->len, "Cache-Control: private, max-age=60\r\n");
	else if (!a->why && a->status >= 400 && a->status <= 599)
		web_reply_error(r, (int)a->status, "site_error", "site %s answered HTTP %ld",
				webd_hub_site_name((unsigned)c->site), a->status);
	else
		web_reply_error(r, 502, "site_unavailable", "site %s: %s", webd_hub_site_name((unsigned)c->site),
				a->why ? a->why : "it answered without a picture");
}

static void route_event_picture(struct web_req *r)
{
	if (!hub_or_404(r))
		return;
	static const char prefix[] = "/api/v1/hub/events/";
	const char *rest = web_req_path(r) + sizeof prefix - 1;
	const char *s1 = strchr(rest, '/');
	const char *s2 = s1 ? strrchr(s1 + 1, '/') : NULL;
	char site[KP_SITE_NAME_MAX + 1], id[257], part[16];
	if (!s1 || !s2 || s1 - rest > KP_SITE_NAME_MAX || s2 - s1 - 1 <= 0 || s2 - s1 - 1 > 256 ||
	    strlen(s2 + 1) >= sizeof part) {
		web_reply_error(r, 404, "not_found", "events/SITE/ID/thumbnail or snapshot");
		return;
	}
	snprintf(site, sizeof site, "%.*s", (int)(s1 - rest), rest);
	snprintf(id, sizeof id, "%.*s", (int)(s2 - s1 - 1), s1 + 1);
	snprintf(part, sizeof part, "%s", s2 + 1);
	struct picture_ctx c = {.site = webd_hub_site_find(site)};
	if (c.site < 0 || (strcmp(part, "thumbnail") && strcmp(part, "snapshot"))) {
		web_reply_error(r, 404, "not_found", "no such site or picture");
		return;
	}
	size_t o = 0;
	char enc[600];
	if (add_param(enc, sizeof enc, &o, "x", id) < 0) {
		web_reply_error(r, 400, "bad_parameter", "event id too long");
		return;
	}
	snprintf(c.path, sizeof c.path, "/api/v1/events/%s/%s", enc + 3, part);
	hub_fan_start(r, HUB_PICTURE_BYTES, HUB_PICTURE_TIMEOUT_MS, picture_path, &c, sizeof c, picture_done);
}

/* ---- a site camera's timeline preview: /api/v1/hub/cameras/SITE/CAM/thumbnail?t=MS ---- */

static void route_camera_picture(struct web_req *r)
{
	if (!hub_or_404(r))
		return;
	static const char prefix[] = "/api/v1/hub/cameras/";
	const char *rest = web_req_path(r) + sizeof prefix - 1;
	char site[KP_SITE_NAME_MAX + 1], cam[KP_CAMERA_NAME_MAX + 1];
	const char *s1 = strchr(rest, '/');
	const char *s2 = s1 ? strchr(s1 + 1, '/') : NULL;
	if (!s1 || !s2 || strcmp(s2, "/thumbnail") || s1 - rest > KP_SITE_NAME_MAX ||
	    s2 - s1 - 1 > KP_CAMERA_NAME_MAX) {
		web_reply_error(r, 404, "not_found", "cameras/SITE/CAMERA/thumbnail?t=MS");
		return;
	}
	snprintf(site, sizeof site, "%.*s", (int)(s1 - rest), rest);
	snprintf(cam, sizeof cam, "%.*s", (int)(s2 - s1 - 1), s1 + 1);
	int64_t t;
	int32_t stream = -1;
	struct picture_ctx c = {.site = webd_hub_site_find(site)};
	if (c.site < 0 || !hub_camera_name_ok(cam)) {
		web_reply_error(r, 404, "not_found", "no such site camera");
		return;
	}
	if (webd_param_ms(r, "t", true, &t) < 0 || webd_param_stream(r, "stream", false, &stream) < 0)
		return;
	snprintf(c.path, sizeof c.path, "/api/v1/cameras/%s/thumbnail?t=%lld%s", cam, (long long)t,
		 stream < 0    ? ""
		 : stream == 0 ? "&stream=main"
			       : "&stream=sub");
	hub_fan_start(r, HUB_PICTURE_BYTES, HUB_PICTURE_TIMEOUT_MS, picture_path, &c, sizeof c, picture_done);
}

const struct web_route webd_hub_routes[] = {
    {WEB_GET | WEB_HEAD, "/api/v1/hub/sites", 0, 0, route_sites},
    {WEB_GET | WEB_HEAD, "/api/v1/hub/cameras", 0, 0, route_cameras},
    {WEB_GET | WEB_HEAD, "/api/v1/hub/coverage", 0, 0, route_coverage},
    {WEB_GET | WEB_HEAD, "/api/v1/hub/events", 0, 0, route_events},
    {WEB_GET | WEB_HEAD, "/api/v1/hub/events/", WEB_PREFIX, 0, route_event_picture},
    {WEB_GET | WEB_HEAD, "/api/v1/hub/cameras/", WEB_PREFIX, 0, route_camera_picture},
    {0, NULL, 0, 0, NULL},
};
