/* The pure part of a hub (docs/decisions/0033): sites' JSON answers, read with the
 * common reader, checked and written again with the common writer (so that nothing a
 * site sends reaches a browser unescaped), merged: camera lists and coverage with each
 * camera named SITE/CAMERA, event search pages merged newest first under one cursor
 * that holds every site's place. No I/O: hub.c asks the sites, test_webd_hub_merge.c
 * and the hub_answer fuzzer drive this directly. */
#ifndef KP_WEBD_HUB_MERGE_H
#define KP_WEBD_HUB_MERGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "json.h"
#include "kp_limits.h"

#define HUB_SITE_CURSOR_MAX  64   /* characters of a site's event cursor */
#define HUB_EVENTS_LIMIT     500  /* events of one merged page (as a site's search) */
#define HUB_COVERAGE_BUCKETS 2048 /* buckets of one coverage answer (recorderd's bound) */
#define HUB_CAMERAS_MAX      128  /* cameras of one site's list or coverage (KP_MAX_CAMERAS) */
/* "h1" + per site "~" NAME ":" (x | SKIP ":" CURSOR) */
#define HUB_CURSOR_MAX (2 + KP_MAX_SITES * (2 + KP_SITE_NAME_MAX + 4 + HUB_SITE_CURSOR_MAX))

/* A site answer parsed: its tokens allocated for the answer's length (hub_doc_free). */
struct hub_doc {
	struct json_doc d;
	struct json_tok *toks;
};
/* 0, -EINVAL (not JSON), -E2BIG (too many tokens), -ENOMEM. */
int hub_doc_parse(struct hub_doc *h, const char *s, size_t len);
void hub_doc_free(struct hub_doc *h);

/* Whether s is a camera name as keeppeek.conf(5) allows (letters, digits, - and _, 1 to
 * KP_CAMERA_NAME_MAX characters). */
bool hub_camera_name_ok(const char *s);
/* "SITE/CAMERA" split: the site's name and its camera's; -EINVAL without one '/'. */
int hub_split_camera(const char *full, char *site, size_t site_cap, char *camera, size_t camera_cap);

/* The value at token t written again by w (strings unescaped and escaped again, numbers
 * as the reader checked them): 0, or -EINVAL for a string holding NUL or longer than
 * 64 KiB. */
int hub_copy_value(const struct json_doc *d, int t, struct json_w *w);

/* Object o written again with member's value (when present) replaced by the string
 * value: 0, or -EINVAL when o is not an object or a value cannot be copied. */
int hub_copy_with(const struct json_doc *d, int o, const char *member, const char *value, struct json_w *w);

/* {"cameras":[{"name":CAM,...}]} of a site: each camera written to w (inside the
 * caller's array) with "name":"SITE/CAM", "site":SITE, "site_camera":CAM and its other
 * members copied. *count: how many. -EINVAL when the answer is not that shape, a name
 * is not a camera name, or there are more than HUB_CAMERAS_MAX. */
int hub_merge_cameras(const struct json_doc *d, const char *site, struct json_w *w, unsigned *count);

/* A site's coverage answer for [from_ms, to_ms) in buckets of bucket_ms: its cameras
 * written to w as hub_merge_cameras does, after checking that the answer is for that
 * range and bucket, that each stream has exactly the buckets the range needs with
 * values in [0, bucket_ms], and that its ranges are ordered, non-empty and inside
 * [from_ms, to_ms). *total += the site's total_cameras (checked). -EINVAL otherwise,
 * -ERANGE when the total overflows. */
int hub_merge_coverage(const struct json_doc *d, const char *site, int64_t from_ms, int64_t to_ms, int64_t bucket_ms,
		       struct json_w *w, uint64_t *total, unsigned *count);

/* One site's place in a merged search. */
struct hub_place {
	char site[KP_SITE_NAME_MAX + 1];
	bool done;                            /* every event of the site was given */
	uint32_t skip;                        /* events of the page at cursor already given */
	char cursor[HUB_SITE_CURSOR_MAX + 1]; /* the site's cursor of that page; "": first */
};
struct hub_cursor {
	unsigned n;
	struct hub_place p[KP_MAX_SITES];
};
/* Parses a merged cursor: 0, or -EINVAL for anything not made by hub_cursor_format
 * (unknown version, a site twice, a skip of HUB_EVENTS_LIMIT or more, bad characters). */
int hub_cursor_parse(const char *s, struct hub_cursor *c);
/* The cursor's text (NULL-free), or -ENOBUFS. */
int hub_cursor_format(const struct hub_cursor *c, char *buf, size_t cap);
/* The place of site in c (added at the start when absent and add is set), or NULL. */
struct hub_place *hub_cursor_place(struct hub_cursor *c, const char *site, bool add);

/* One site's page, for hub_merge_events: its place when asked (in), and its answer
 * (doc NULL: the site did not answer; its place stays as it was). */
struct hub_page {
	const char *site;
	const struct hub_place *in;
	const struct json_doc *doc;
};
/* Merges the pages newest first (event start_ms, then site order, then each site's own
 * order) into w's open array, at most limit events, each with "camera":"SITE/CAM" and
 * "site":SITE. Stops early when a site with more events has none left in its page (its
 * next ones may be newer than any other's). out gets every site's new place; *more is
 * false when every site is done. -EINVAL when a page is malformed (the caller reports
 * that site; pages are checked before anything is written). */
int hub_merge_events(const struct hub_page *pages, unsigned n, unsigned limit, struct json_w *w, struct hub_cursor *out,
		     bool *more, unsigned *written);
/* A page's shape alone: 0 or -EINVAL (hub_merge_events checks all before writing). */
int hub_check_events(const struct json_doc *d, uint32_t skip);

#endif
