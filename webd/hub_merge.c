/* Sites' answers checked and merged for a hub (hub_merge.h). Every value a site sends is
 * read by the common JSON reader and written again by the common writer; camera names
 * must be camera names, times and counts are checked before any arithmetic. */
#include "hub_merge.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kp_checked.h"

#define HUB_STR_MAX  (64 * 1024)
#define HUB_TOKS_MAX (1u << 20)

int hub_doc_parse(struct hub_doc *h, const char *s, size_t len)
{
	/* A token takes at least one byte and a separator, so len / 2 + 2 always suffices. */
	size_t cap = len / 2 + 2;
	if (cap > HUB_TOKS_MAX)
		cap = HUB_TOKS_MAX;
	h->toks = malloc(cap * sizeof *h->toks);
	if (!h->toks)
		return -ENOMEM;
	int r = json_parse(&h->d, s, len, h->toks, (unsigned)cap);
	if (r < 0) {
		free(h->toks);
		h->toks = NULL;
	}
	return r;
}

void hub_doc_free(struct hub_doc *h)
{
	free(h->toks);
	h->toks = NULL;
}

bool hub_camera_name_ok(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n > KP_CAMERA_NAME_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && s[i] != '-' && s[i] != '_')
			return false;
	return true;
}

int hub_split_camera(const char *full, char *site, size_t site_cap, char *camera, size_t camera_cap)
{
	const char *slash = strchr(full, '/');
	if (!slash || strchr(slash + 1, '/'))
		return -EINVAL;
	size_t sn = (size_t)(slash - full);
	size_t cn = strlen(slash + 1);
	if (sn == 0 || sn >= site_cap || cn == 0 || cn >= camera_cap)
		return -EINVAL;
	memcpy(site, full, sn);
	site[sn] = '\0';
	memcpy(camera, slash + 1, cn + 1);
	return 0;
}

static int copy_at(const struct json_doc *d, int t, struct json_w *w, unsigned depth);

static int copy_string(const struct json_doc *d, int t, struct json_w *w)
{
	static char buf[HUB_STR_MAX];
	int n = json_get_str(d, t, buf, sizeof buf);
	if (n < 0)
		return -EINVAL;
	jw_strn(w, buf, (size_t)n);
	return 0;
}

static int copy_at(const struct json_doc *d, int t, struct json_w *w, unsigned depth)
{
	const struct json_tok *k = &d->toks[t];
	if (depth > JSON_MAX_DEPTH)
		return -EINVAL;
	switch (k->type) {
	case JSON_OBJECT:
		jw_obj(w);
		for (uint32_t i = 0, c = (uint32_t)t + 1; i < k->size; i++) {
			static char key[256];
			if (json_get_str(d, (int)c, key, sizeof key) < 0)
				return -EINVAL;
			jw_key(w, key);
			if (copy_at(d, (int)c + 1, w, depth + 1) < 0)
				return -EINVAL;
			c = d->toks[c + 1].next;
		}
		jw_obj_end(w);
		return 0;
	case JSON_ARRAY:
		jw_arr(w);
		for (uint32_t i = 0, c = (uint32_t)t + 1; i < k->size; i++) {
			if (copy_at(d, (int)c, w, depth + 1) < 0)
				return -EINVAL;
			c = d->toks[c].next;
		}
		jw_arr_end(w);
		return 0;
	case JSON_STRING:
		return copy_string(d, t, w);
	case JSON_NUMBER:
		/* The reader checked the number's syntax: its text is JSON as is. */
		jw_json(w, d->s + k->start, k->end - k->start);
		return 0;
	case JSON_TRUE:
		jw_bool(w, true);
		return 0;
	case JSON_FALSE:
		jw_bool(w, false);
		return 0;
	default:
		jw_null(w);
		return 0;
	}
}

int hub_copy_value(const struct json_doc *d, int t, struct json_w *w)
{
	return copy_at(d, t, w, 0);
}

int hub_copy_with(const struct json_doc *d, int o, const char *member, const char *value, struct json_w *w)
{
	const struct json_tok *k = &d->toks[o];
	if (k->type != JSON_OBJECT)
		return -EINVAL;
	jw_obj(w);
	for (uint32_t i = 0, c = (uint32_t)o + 1; i < k->size; i++) {
		static char key[256];
		if (json_get_str(d, (int)c, key, sizeof key) < 0)
			return -EINVAL;
		jw_key(w, key);
		if (!strcmp(key, member))
			jw_str(w, value);
		else if (copy_at(d, (int)c + 1, w, 1) < 0)
			return -EINVAL;
		c = d->toks[c + 1].next;
	}
	jw_obj_end(w);
	return 0;
}

/* The camera name of member "name" (or key) of object o into buf, checked. */
static int camera_of(const struct json_doc *d, int o, const char *key, char *buf, size_t cap)
{
	int t = json_obj_get(d, o, key);
	if (t < 0 || json_get_str(d, t, buf, cap) < 0 || !hub_camera_name_ok(buf))
		return -EINVAL;
	return 0;
}

/* Object o written with member rename's value replaced by "SITE/VALUE" and "site" added
 * (a "site" of the site's own is replaced); extra_camera: also "site_camera". */
static int write_renamed(const struct json_doc *d, int o, const char *site, const char *rename, bool extra_camera,
			 struct json_w *w)
{
	char cam[KP_CAMERA_NAME_MAX + 1], full[KP_SITE_NAME_MAX + KP_CAMERA_NAME_MAX + 2];
	if (camera_of(d, o, rename, cam, sizeof cam) < 0)
		return -EINVAL;
	snprintf(full, sizeof full, "%s/%s", site, cam);
	jw_obj(w);
	const struct json_tok *k = &d->toks[o];
	for (uint32_t i = 0, c = (uint32_t)o + 1; i < k->size; i++) {
		static char key[256];
		if (json_get_str(d, (int)c, key, sizeof key) < 0)
			return -EINVAL;
		if (!strcmp(key, rename)) {
			jw_key(w, key);
			jw_str(w, full);
		} else if (strcmp(key, "site") && strcmp(key, "site_camera")) {
			jw_key(w, key);
			if (copy_at(d, (int)c + 1, w, 1) < 0)
				return -EINVAL;
		}
		c = d->toks[c + 1].next;
	}
	jw_key(w, "site");
	jw_str(w, site);
	if (extra_camera) {
		jw_key(w, "site_camera");
		jw_str(w, cam);
	}
	jw_obj_end(w);
	return 0;
}

int hub_merge_cameras(const struct json_doc *d, const char *site, struct json_w *w, unsigned *count)
{
	int arr = json_obj_get(d, 0, "cameras");
	if (arr < 0 || d->toks[arr].type != JSON_ARRAY || d->toks[arr].size > HUB_CAMERAS_MAX)
		return -EINVAL;
	for (unsigned i = 0; i < d->toks[arr].size; i++) {
		int o = json_arr_get(d, arr, i);
		char cam[KP_CAMERA_NAME_MAX + 1];
		if (d->toks[o].type != JSON_OBJECT || camera_of(d, o, "name", cam, sizeof cam) < 0)
			return -EINVAL;
	}
	for (unsigned i = 0; i < d->toks[arr].size; i++)
		if (write_renamed(d, json_arr_get(d, arr, i), site, "name", true, w) < 0)
			return -EINVAL;
	*count = d->toks[arr].size;
	return 0;
}

static int int_of(const struct json_doc *d, int o, const char *key, int64_t *v)
{
	int t = json_obj_get(d, o, key);
	return t < 0 ? -EINVAL : json_get_int(d, t, v) < 0 ? -EINVAL : 0;
}

/* One stream of a coverage answer: nbuckets buckets in [0, bucket_ms], ranges inside
 * [from, to), each non-empty, ordered, not overlapping, at most 256 + 1. */
static int check_stream(const struct json_doc *d, int s, int64_t from, int64_t to, int64_t bucket_ms, int64_t nbuckets)
{
	if (d->toks[s].type != JSON_OBJECT)
		return -EINVAL;
	int b = json_obj_get(d, s, "buckets"), rg = json_obj_get(d, s, "ranges");
	if (b < 0 || d->toks[b].type != JSON_ARRAY || (int64_t)d->toks[b].size != nbuckets)
		return -EINVAL;
	for (unsigned i = 0; i < d->toks[b].size; i++) {
		int64_t v;
		if (json_get_int(d, json_arr_get(d, b, i), &v) < 0 || v < 0 || v > bucket_ms)
			return -EINVAL;
	}
	if (rg < 0 || d->toks[rg].type != JSON_ARRAY || d->toks[rg].size > 257)
		return -EINVAL;
	int64_t last = from;
	for (unsigned i = 0; i < d->toks[rg].size; i++) {
		int p = json_arr_get(d, rg, i);
		int64_t a, e;
		if (d->toks[p].type != JSON_ARRAY || d->toks[p].size != 2 || json_get_int(d, p + 1, &a) < 0 ||
		    json_get_int(d, json_arr_get(d, p, 1), &e) < 0 || a < last || e <= a || e > to)
			return -EINVAL;
		last = e;
	}
	return 0;
}

int hub_merge_coverage(const struct json_doc *d, const char *site, int64_t from_ms, int64_t to_ms, int64_t bucket_ms,
		       struct json_w *w, uint64_t *total, unsigned *count)
{
	int64_t f, t, b, tc, first, n;
	if (d->toks[0].type != JSON_OBJECT || int_of(d, 0, "from_ms", &f) < 0 || int_of(d, 0, "to_ms", &t) < 0 ||
	    int_of(d, 0, "bucket_ms", &b) < 0 || int_of(d, 0, "total_cameras", &tc) < 0 || f != from_ms || t != to_ms ||
	    b != bucket_ms || tc < 0)
		return -EINVAL;
	if (kp_floor_i64(from_ms, bucket_ms, &first) < 0 || kp_steps_i64(first, to_ms, bucket_ms, &n) < 0 ||
	    n > HUB_COVERAGE_BUCKETS)
		return -EINVAL;
	int arr = json_obj_get(d, 0, "cameras");
	if (arr < 0 || d->toks[arr].type != JSON_ARRAY || d->toks[arr].size > HUB_CAMERAS_MAX)
		return -EINVAL;
	for (unsigned i = 0; i < d->toks[arr].size; i++) {
		int o = json_arr_get(d, arr, i);
		char cam[KP_CAMERA_NAME_MAX + 1];
		if (d->toks[o].type != JSON_OBJECT || camera_of(d, o, "name", cam, sizeof cam) < 0)
			return -EINVAL;
		int ss = json_obj_get(d, o, "streams");
		if (ss < 0 || d->toks[ss].type != JSON_ARRAY || d->toks[ss].size > 2)
			return -EINVAL;
		for (unsigned k = 0; k < d->toks[ss].size; k++)
			if (check_stream(d, json_arr_get(d, ss, k), from_ms, to_ms, bucket_ms, n) < 0)
				return -EINVAL;
	}
	uint64_t sum;
	if (kp_add_u64(*total, (uint64_t)tc, &sum) < 0)
		return -ERANGE;
	for (unsigned i = 0; i < d->toks[arr].size; i++)
		if (write_renamed(d, json_arr_get(d, arr, i), site, "name", true, w) < 0)
			return -EINVAL;
	*total = sum;
	*count = d->toks[arr].size;
	return 0;
}

/* A site's cursor: 1 to HUB_SITE_CURSOR_MAX of [A-Za-z0-9._-]. */
static bool site_cursor_ok(const char *s, size_t n)
{
	if (n == 0 || n > HUB_SITE_CURSOR_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && s[i] != '.' && s[i] != '_' && s[i] != '-')
			return false;
	return true;
}

static bool site_name_ok(const char *s, size_t n)
{
	if (n == 0 || n > KP_SITE_NAME_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && s[i] != '-' && s[i] != '_')
			return false;
	return true;
}

struct hub_place *hub_cursor_place(struct hub_cursor *c, const char *site, bool add)
{
	for (unsigned i = 0; i < c->n; i++)
		if (!strcmp(c->p[i].site, site))
			return &c->p[i];
	if (!add || c->n >= KP_MAX_SITES)
		return NULL;
	struct hub_place *p = &c->p[c->n++];
	memset(p, 0, sizeof *p);
	snprintf(p->site, sizeof p->site, "%s", site);
	return p;
}

int hub_cursor_parse(const char *s, struct hub_cursor *c)
{
	memset(c, 0, sizeof *c);
	if (strncmp(s, "h1", 2) || strlen(s) > HUB_CURSOR_MAX)
		return -EINVAL;
	s += 2;
	while (*s) {
		if (*s++ != '~')
			return -EINVAL;
		size_t e = strcspn(s, "~");
		const char *colon = memchr(s, ':', e);
		if (!colon || !site_name_ok(s, (size_t)(colon - s)) || c->n >= KP_MAX_SITES)
			return -EINVAL;
		char name[KP_SITE_NAME_MAX + 1];
		snprintf(name, sizeof name, "%.*s", (int)(colon - s), s);
		if (hub_cursor_place(c, name, false))
			return -EINVAL;
		struct hub_place *p = hub_cursor_place(c, name, true);
		const char *st = colon + 1;
		size_t sl = e - (size_t)(st - s);
		if (sl == 1 && st[0] == 'x') {
			p->done = true;
		} else {
			uint32_t skip = 0;
			size_t i = 0;
			for (; i < sl && isdigit((unsigned char)st[i]) && i < 3; i++)
				skip = skip * 10 + (uint32_t)(st[i] - '0');
			if (i == 0 || i >= sl || st[i] != ':' || skip >= HUB_EVENTS_LIMIT || (i > 1 && st[0] == '0'))
				return -EINVAL;
			size_t cl = sl - i - 1;
			if (cl && !site_cursor_ok(st + i + 1, cl))
				return -EINVAL;
			p->skip = skip;
			memcpy(p->cursor, st + i + 1, cl);
			p->cursor[cl] = '\0';
		}
		s += e;
	}
	return 0;
}

int hub_cursor_format(const struct hub_cursor *c, char *buf, size_t cap)
{
	size_t o = 0;
	int n = snprintf(buf, cap, "h1");
	if (n < 0 || (size_t)n >= cap)
		return -ENOBUFS;
	o = (size_t)n;
	for (unsigned i = 0; i < c->n; i++) {
		const struct hub_place *p = &c->p[i];
		if (p->done)
			n = snprintf(buf + o, cap - o, "~%s:x", p->site);
		else
			n = snprintf(buf + o, cap - o, "~%s:%u:%s", p->site, (unsigned)p->skip, p->cursor);
		if (n < 0 || (size_t)n >= cap - o)
			return -ENOBUFS;
		o += (size_t)n;
	}
	return (int)o;
}

int hub_check_events(const struct json_doc *d, uint32_t skip)
{
	(void)skip;
	if (d->toks[0].type != JSON_OBJECT)
		return -EINVAL;
	int arr = json_obj_get(d, 0, "events"), nc = json_obj_get(d, 0, "next_cursor");
	if (arr < 0 || d->toks[arr].type != JSON_ARRAY || d->toks[arr].size > HUB_EVENTS_LIMIT || nc < 0)
		return -EINVAL;
	if (d->toks[nc].type != JSON_NULL) {
		char cur[HUB_SITE_CURSOR_MAX + 1];
		int n = json_get_str(d, nc, cur, sizeof cur);
		if (n < 0 || !site_cursor_ok(cur, (size_t)n))
			return -EINVAL;
	}
	int64_t prev = INT64_MAX;
	for (unsigned i = 0; i < d->toks[arr].size; i++) {
		int o = json_arr_get(d, arr, i);
		char cam[KP_CAMERA_NAME_MAX + 1];
		int64_t start;
		if (d->toks[o].type != JSON_OBJECT || camera_of(d, o, "camera", cam, sizeof cam) < 0 ||
		    int_of(d, o, "start_ms", &start) < 0 || start > prev)
			return -EINVAL; /* newest first, as the site's search answers */
		prev = start;
	}
	return 0;
}

int hub_merge_events(const struct hub_page *pages, unsigned n, unsigned limit, struct json_w *w, struct hub_cursor *out,
		     bool *more, unsigned *written)
{
	struct {
		int arr;
		unsigned pos, end;
		bool more; /* the site has events after this page */
	} s[KP_MAX_SITES];
	if (n > KP_MAX_SITES || limit > HUB_EVENTS_LIMIT)
		return -EINVAL;
	memset(out, 0, sizeof *out);
	for (unsigned i = 0; i < n; i++) {
		struct hub_place *p = hub_cursor_place(out, pages[i].site, true);
		*p = *pages[i].in;
		snprintf(p->site, sizeof p->site, "%s", pages[i].site);
		s[i].arr = -1;
		s[i].pos = s[i].end = 0;
		s[i].more = false;
		if (p->done || !pages[i].doc)
			continue;
		const struct json_doc *d = pages[i].doc;
		if (hub_check_events(d, p->skip) < 0)
			return -EINVAL;
		s[i].arr = json_obj_get(d, 0, "events");
		s[i].end = d->toks[s[i].arr].size;
		s[i].pos = p->skip < s[i].end ? p->skip : s[i].end;
		s[i].more = d->toks[json_obj_get(d, 0, "next_cursor")].type != JSON_NULL;
	}
	unsigned given = 0;
	while (given < limit) {
		int best = -1;
		int64_t best_start = 0;
		bool stall = false;
		for (unsigned i = 0; i < n; i++) {
			if (s[i].arr < 0)
				continue;
			if (s[i].pos >= s[i].end) {
				stall |= s[i].more;
				continue;
			}
			int64_t st;
			int o = json_arr_get(pages[i].doc, s[i].arr, s[i].pos);
			int_of(pages[i].doc, o, "start_ms", &st);
			if (best < 0 || st > best_start) {
				best = (int)i;
				best_start = st;
			}
		}
		if (best < 0 || stall)
			break;
		const struct json_doc *d = pages[best].doc;
		if (write_renamed(d, json_arr_get(d, s[best].arr, s[best].pos), pages[best].site, "camera", false, w) <
		    0)
			return -EINVAL;
		s[best].pos++;
		given++;
	}
	*more = false;
	for (unsigned i = 0; i < n; i++) {
		struct hub_place *p = hub_cursor_place(out, pages[i].site, false);
		if (s[i].arr >= 0) {
			if (s[i].pos >= s[i].end) {
				const struct json_doc *d = pages[i].doc;
				int nc = json_obj_get(d, 0, "next_cursor");
				p->skip = 0;
				if (s[i].more)
					json_get_str(d, nc, p->cursor, sizeof p->cursor);
				else
					p->done = true;
			} else {
				p->skip = s[i].pos;
			}
		}
		*more |= !p->done;
	}
	*written = given;
	return 0;
}
