/* The writer of json.h: appends values into a caller-given buffer, separators placed by a
 * per-depth count, strings escaped (invalid UTF-8 written as U+FFFD), overflow sticky. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "json.h"

static void put(struct json_w *w, const char *s, size_t n)
{
	if (w->overflow || w->len + n + 1 > w->cap) {
		w->overflow = true;
		return;
	}
	memcpy(w->buf + w->len, s, n);
	w->len += n;
	w->buf[w->len] = 0;
}

static void sep(struct json_w *w)
{
	if (w->after_key) {
		w->after_key = false;
		return;
	}
	if (w->count[w->depth]++ > 0)
		put(w, ",", 1);
}

void jw_init(struct json_w *w, char *buf, size_t cap)
{
	memset(w, 0, sizeof(*w));
	w->buf = buf;
	w->cap = cap;
	if (cap > 0)
		buf[0] = 0;
	else
		w->overflow = true;
}

static void open_c(struct json_w *w, const char *c)
{
	sep(w);
	put(w, c, 1);
	if (w->depth >= JSON_MAX_DEPTH) {
		w->overflow = true;
		return;
	}
	w->count[++w->depth] = 0;
}

static void close_c(struct json_w *w, const char *c)
{
	if (w->depth == 0) {
		w->overflow = true;
		return;
	}
	w->depth--;
	put(w, c, 1);
}

void jw_obj(struct json_w *w)
{
	open_c(w, "{");
}

void jw_obj_end(struct json_w *w)
{
	close_c(w, "}");
}

void jw_arr(struct json_w *w)
{
	open_c(w, "[");
}

void jw_arr_end(struct json_w *w)
{
	close_c(w, "]");
}

static void put_escaped(struct json_w *w, const char *s, size_t n)
{
	put(w, "\"", 1);
	size_t run = 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c >= 0x80) {
			size_t u = json_utf8_len((const unsigned char *)s + i, n - i);
			if (u) {
				i += u - 1;
				continue;
			}
			put(w, s + run, i - run);
			put(w, "\\ufffd", 6);
			run = i + 1;
			continue;
		}
		if (c >= 0x20 && c != '"' && c != '\\')
			continue;
		put(w, s + run, i - run);
		run = i + 1;
		char esc[8];
		switch (c) {
		case '"':
			put(w, "\\\"", 2);
			break;
		case '\\':
			put(w, "\\\\", 2);
			break;
		case '\n':
			put(w, "\\n", 2);
			break;
		case '\r':
			put(w, "\\r", 2);
			break;
		case '\t':
			put(w, "\\t", 2);
			break;
		default:
			snprintf(esc, sizeof(esc), "\\u%04x", c);
			put(w, esc, 6);
			break;
		}
	}
	put(w, s + run, n - run);
	put(w, "\"", 1);
}

void jw_key(struct json_w *w, const char *key)
{
	sep(w);
	put_escaped(w, key, strlen(key));
	put(w, ":", 1);
	w->after_key = true;
}

void jw_strn(struct json_w *w, const char *s, size_t n)
{
	sep(w);
	put_escaped(w, s, n);
}

void jw_str(struct json_w *w, const char *s)
{
	jw_strn(w, s, strlen(s));
}

void jw_int(struct json_w *w, int64_t v)
{
	char b[24];
	int n = snprintf(b, sizeof(b), "%lld", (long long)v);
	sep(w);
	put(w, b, (size_t)n);
}

void jw_double(struct json_w *w, double v)
{
	char b[32];
	if (!isfinite(v))
		v = 0;
	int n = snprintf(b, sizeof(b), "%.6g", v);
	sep(w);
	put(w, b, (size_t)n);
}

void jw_bool(struct json_w *w, bool v)
{
	sep(w);
	put(w, v ? "true" : "false", v ? 4 : 5);
}

void jw_null(struct json_w *w)
{
	sep(w);
	put(w, "null", 4);
}

void jw_json(struct json_w *w, const char *json, size_t n)
{
	sep(w);
	put(w, json, n);
}

void jw_take(struct json_w *w)
{
	w->len = 0;
	if (w->cap > 0)
		w->buf[0] = 0;
}

int jw_finish(struct json_w *w, size_t *len)
{
	if (w->overflow || w->depth != 0 || w->after_key)
		return -ENOBUFS;
	if (len)
		*len = w->len;
	return 0;
}

int json_quote(char *buf, size_t cap, const char *s)
{
	struct json_w w;
	size_t n;
	jw_init(&w, buf, cap);
	jw_str(&w, s);
	if (jw_finish(&w, &n) < 0)
		return -ENOBUFS;
	return (int)n;
}
