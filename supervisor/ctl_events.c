/* keeppeekctl events search: parses the filters and times here (the operator's clock
 * and time zone), asks keeppeekd, which relays the search to recorderd, and prints the
 * JSON answer as is (--json) or as a table, newest first, with the next page's cursor.
 * The JSON is read with the common bounded reader (common/json.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ctl.h"
#include "ctl_time.h"
#include "json.h"
#include "keeppeek.pb.h"
#include "kp_time.h"

#define LABELS_TEXT_MAX 512
#define TERMS_MAX       1024

static void usage(FILE *f)
{
	fprintf(f, "usage: keeppeekctl events search [--camera C] [--from T] [--to T] [--label L] [--limit N]\n"
		   "                                 [--cursor X] [--json] [TERMS...]\n"
		   "  T: Unix milliseconds, ISO 8601 (2026-11-30T10:00:00Z; local time without a zone),\n"
		   "     now, or relative: -90s, -30m, -1h, -7d\n");
}

struct row {
	char time[CTL_TIME_TEXT_MAX];
	char camera[80];
	char labels[LABELS_TEXT_MAX];
	char id[80];
	char revision[24];
	const char *jpeg;
};

static int str_of(const struct json_doc *d, int obj, const char *key, char *buf, size_t cap)
{
	int t = json_obj_get(d, obj, key);
	return t < 0 ? -EINVAL : json_get_str(d, t, buf, cap) < 0 ? -EINVAL : 0;
}

static int int_of(const struct json_doc *d, int obj, const char *key, int64_t *v)
{
	int t = json_obj_get(d, obj, key);
	return t < 0 ? -EINVAL : json_get_int(d, t, v);
}

static void labels_text(const struct json_doc *d, int ev, char *buf, size_t cap)
{
	size_t len = 0;
	buf[0] = '\0';
	int arr = json_obj_get(d, ev, "labels");
	for (unsigned i = 0; arr >= 0 && len < cap; i++) {
		int l = json_arr_get(d, arr, i);
		if (l < 0)
			break;
		char name[64];
		double score = 0;
		int s = json_obj_get(d, l, "score");
		if (str_of(d, l, "name", name, sizeof name) < 0)
			continue;
		int n = s >= 0 && json_get_double(d, s, &score) == 0
			    ? snprintf(buf + len, cap - len, "%s%s %.2f", len ? ", " : "", name, score)
			    : snprintf(buf + len, cap - len, "%s%s", len ? ", " : "", name);
		len += n > 0 ? (size_t)n : 0;
	}
	if (!buf[0])
		snprintf(buf, cap, "-");
}

static int read_row(const struct json_doc *d, int ev, struct row *r)
{
	int64_t start, rev;
	if (int_of(d, ev, "start_ms", &start) < 0 || int_of(d, ev, "revision", &rev) < 0 ||
	    str_of(d, ev, "camera", r->camera, sizeof r->camera) < 0 || str_of(d, ev, "id", r->id, sizeof r->id) < 0)
		return -EINVAL;
	ctl_time_format(start, r->time, sizeof r->time);
	snprintf(r->revision, sizeof r->revision, "%lld", (long long)rev);
	int j = json_obj_get(d, ev, "has_jpeg");
	r->jpeg = j >= 0 && d->toks[j].type == JSON_TRUE ? "yes" : "no";
	labels_text(d, ev, r->labels, sizeof r->labels);
	return 0;
}

static void widen(int *w, const char *s)
{
	int n = (int)strlen(s);
	if (n > *w)
		*w = n;
}

/* The answer as a table; 1 when it does not read as a search answer. */
static int render(const char *text, size_t len, const char *camera)
{
	unsigned cap = (unsigned)(len / 2 + 16);
	struct json_tok *toks = calloc(cap, sizeof *toks);
	if (!toks) {
		fprintf(stderr, "keeppeekctl: events search: out of memory\n");
		return 1;
	}
	struct json_doc d;
	int events = -1, r = json_parse(&d, text, len, toks, cap);
	if (r == 0)
		events = json_obj_get(&d, 0, "events");
	if (events < 0 || d.toks[events].type != JSON_ARRAY) {
		fprintf(stderr, "keeppeekctl: events search: the answer does not read as JSON events\n");
		free(toks);
		return 1;
	}
	unsigned n = d.toks[events].size;
	struct row *rows = calloc(n ? n : 1, sizeof *rows);
	if (!rows) {
		fprintf(stderr, "keeppeekctl: events search: out of memory\n");
		free(toks);
		return 1;
	}
	int w[5] = {4, 6, 6, 2, 3};
	for (unsigned i = 0; i < n; i++) {
		if (read_row(&d, json_arr_get(&d, events, i), &rows[i]) < 0) {
			fprintf(stderr, "keeppeekctl: events search: event %u of the answer lacks a field\n", i);
			free(rows);
			free(toks);
			return 1;
		}
		widen(&w[0], rows[i].time);
		widen(&w[1], rows[i].camera);
		widen(&w[2], rows[i].labels);
		widen(&w[3], rows[i].id);
		widen(&w[4], rows[i].revision);
	}
	int unknown = json_obj_get(&d, 0, "unknown_camera");
	if (unknown >= 0 && d.toks[unknown].type == JSON_TRUE)
		printf("no events: camera \"%s\" has nothing in the catalog\n", camera);
	else if (!n)
		printf("no events found\n");
	else
		printf("%-*s  %-*s  %-*s  %-*s  %*s  %s\n", w[0], "TIME", w[1], "CAMERA", w[2], "LABELS", w[3], "ID",
		       w[4], "REV", "JPEG");
	for (unsigned i = 0; i < n; i++)
		printf("%-*s  %-*s  %-*s  %-*s  %*s  %s\n", w[0], rows[i].time, w[1], rows[i].camera, w[2],
		       rows[i].labels, w[3], rows[i].id, w[4], rows[i].revision, rows[i].jpeg);
	char cursor[160];
	if (str_of(&d, 0, "next_cursor", cursor, sizeof cursor) == 0)
		printf("more events: repeat with --cursor %s\n", cursor);
	free(rows);
	free(toks);
	return 0;
}

int ctl_events(const char *sock, int n, char **args, bool json)
{
	if (n < 1 || strcmp(args[0], "search")) {
		usage(stderr);
		return 2;
	}
	static const char *const names[] = {"--camera", "--from", "--to", "--label", "--limit", "--cursor"};
	const char *v[6] = {0};
	static char terms[TERMS_MAX];
	size_t tlen = 0;
	terms[0] = '\0';
	for (int i = 1; i < n; i++) {
		int k = -1;
		for (int j = 0; j < 6 && k < 0; j++)
			if (!strcmp(args[i], names[j]))
				k = j;
		if (k >= 0 && i + 1 < n && !v[k]) {
			v[k] = args[++i];
			continue;
		}
		if (k >= 0 || args[i][0] == '-' || tlen + strlen(args[i]) + 2 > sizeof terms) {
			if (k < 0 && args[i][0] == '-')
				fprintf(stderr, "keeppeekctl: events search: unknown option %s\n", args[i]);
			usage(stderr);
			return 2;
		}
		tlen += (size_t)snprintf(terms + tlen, sizeof terms - tlen, "%s%s", tlen ? " " : "", args[i]);
	}
	static const kp_EventSearch es;
	const char *what = v[0] && strlen(v[0]) >= sizeof es.camera   ? "--camera"
			   : v[3] && strlen(v[3]) >= sizeof es.label  ? "--label"
			   : v[5] && strlen(v[5]) >= sizeof es.cursor ? "--cursor"
			   : tlen >= sizeof es.q                      ? "terms"
								      : NULL;
	if (what) {
		fprintf(stderr,
			"keeppeekctl: events search: %s: too long (camera %zu, label %zu, cursor %zu, terms %zu "
			"bytes at most)\n",
			what, sizeof es.camera - 1, sizeof es.label - 1, sizeof es.cursor - 1, sizeof es.q - 1);
		return 2;
	}
	char from[24] = "", to[24] = "";
	char *times[2] = {from, to};
	int64_t now = kp_wall_ms();
	for (int j = 0; j < 2; j++) {
		int64_t ms;
		if (!v[1 + j])
			continue;
		if (ctl_time_parse(v[1 + j], now, &ms) < 0) {
			fprintf(stderr,
				"keeppeekctl: events search: %s '%s' is not a time (Unix ms, ISO 8601 such as "
				"2026-11-30T10:00:00Z, now, or -30m/-1h/-7d)\n",
				names[1 + j], v[1 + j]);
			return 2;
		}
		snprintf(times[j], sizeof from, "%lld", (long long)ms);
	}
	if (v[4] && (strspn(v[4], "0123456789") != strlen(v[4]) || !v[4][0] || atoll(v[4]) < 1 || atoll(v[4]) > 500)) {
		fprintf(stderr, "keeppeekctl: events search: --limit takes a number from 1 to 500\n");
		return 2;
	}
	char *req[7] = {(char *)(v[0] ? v[0] : ""), from, to, (char *)(v[3] ? v[3] : ""), (char *)(v[4] ? v[4] : ""),
			(char *)(v[5] ? v[5] : ""), terms};
	int code;
	char *text;
	size_t len;
	int r = ctl_exchange(sock, "events-search", req, 7, json, false, CTL_REPLY_TIMEOUT_SECS, &code, &text, &len);
	if (r)
		return r;
	if (code || json) {
		if (text)
			fwrite(text, 1, len, code ? stderr : stdout);
		free(text);
		return code;
	}
	r = render(text ? text : "", len, v[0] ? v[0] : "");
	free(text);
	return r;
}
