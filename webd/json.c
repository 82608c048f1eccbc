/* The bounded JSON reader (recursive descent over a caller-given token array, depth
 * bounded by JSON_MAX_DEPTH) and writer (appends into a fixed buffer) of json.h. */
#include "json.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct parser {
	struct json_doc *d;
	size_t pos;
	unsigned cap;
	int err;
};

static int fail(struct parser *p, int err, const char *why)
{
	if (!p->err) {
		p->err = err;
		p->d->err_at = p->pos;
		p->d->err_why = why;
	}
	return -1;
}

static void skip_ws(struct parser *p)
{
	const char *s = p->d->s;
	while (p->pos < p->d->len && (s[p->pos] == ' ' || s[p->pos] == '\t' || s[p->pos] == '\n' || s[p->pos] == '\r'))
		p->pos++;
}

static int new_tok(struct parser *p, enum json_type type)
{
	if (p->d->ntoks >= p->cap)
		return fail(p, -E2BIG, "too many values");
	if (p->pos > UINT32_MAX)
		return fail(p, -E2BIG, "document too long");
	int i = (int)p->d->ntoks++;
	struct json_tok *t = &p->d->toks[i];
	t->type = (uint8_t)type;
	t->start = (uint32_t)p->pos;
	t->end = (uint32_t)p->pos;
	t->size = 0;
	t->next = 0;
	return i;
}

static unsigned hex4(const char *s);

static int is_hex(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* Length of the well-formed UTF-8 sequence at s[0..n) (RFC 3629: no overlong forms, no
 * surrogates, nothing above U+10FFFF), or 0. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
	unsigned char c = s[0];
	size_t len = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : 2;
	if (c < 0xc2 || c > 0xf4 || n < len)
		return 0;
	for (size_t k = 1; k < len; k++)
		if ((s[k] & 0xc0) != 0x80)
			return 0;
	if ((c == 0xe0 && s[1] < 0xa0) || (c == 0xed && s[1] > 0x9f) || (c == 0xf0 && s[1] < 0x90) ||
	    (c == 0xf4 && s[1] > 0x8f))
		return 0;
	return len;
}

static int parse_string(struct parser *p)
{
	const char *s = p->d->s;
	p->pos++; /* the opening quote */
	int i = new_tok(p, JSON_STRING);
	if (i < 0)
		return -1;
	while (p->pos < p->d->len) {
		unsigned char c = (unsigned char)s[p->pos];
		if (c == '"') {
			p->d->toks[i].end = (uint32_t)p->pos;
			p->pos++;
			return i;
		}
		if (c < 0x20)
			return fail(p, -EINVAL, "control character in string");
		if (c >= 0x80) {
			size_t n = utf8_len((const unsigned char *)s + p->pos, p->d->len - p->pos);
			if (!n)
				return fail(p, -EINVAL, "invalid UTF-8 in string");
			p->pos += n;
			continue;
		}
		if (c == '\\') {
			if (p->pos + 1 >= p->d->len)
				break;
			char e = s[p->pos + 1];
			if (e == 'u') {
				if (p->pos + 6 > p->d->len)
					break;
				for (int k = 2; k < 6; k++)
					if (!is_hex(s[p->pos + k]))
						return fail(p, -EINVAL, "bad \\u escape");
				unsigned cp = hex4(s + p->pos + 2);
				p->pos += 6;
				if (cp >= 0xdc00 && cp <= 0xdfff)
					return fail(p, -EINVAL, "lone low surrogate in \\u escape");
				if (cp >= 0xd800 && cp <= 0xdbff) {
					if (p->pos + 6 > p->d->len || s[p->pos] != '\\' || s[p->pos + 1] != 'u' ||
					    !is_hex(s[p->pos + 2]) || !is_hex(s[p->pos + 3]) ||
					    !is_hex(s[p->pos + 4]) || !is_hex(s[p->pos + 5]) ||
					    hex4(s + p->pos + 2) < 0xdc00 || hex4(s + p->pos + 2) > 0xdfff)
						return fail(p, -EINVAL,
							    "high surrogate without a low one in \\u escape");
					p->pos += 6;
				}
				continue;
			}
			if (!strchr("\"\\/bfnrt", e) || e == 0)
				return fail(p, -EINVAL, "bad escape");
			p->pos += 2;
			continue;
		}
		p->pos++;
	}
	return fail(p, -EINVAL, "unterminated string");
}

static int parse_number(struct parser *p)
{
	const char *s = p->d->s;
	size_t n = p->d->len;
	int i = new_tok(p, JSON_NUMBER);
	if (i < 0)
		return -1;
	if (p->pos < n && s[p->pos] == '-')
		p->pos++;
	if (p->pos >= n)
		return fail(p, -EINVAL, "bad number");
	if (s[p->pos] == '0') {
		p->pos++;
	} else if (s[p->pos] >= '1' && s[p->pos] <= '9') {
		while (p->pos < n && s[p->pos] >= '0' && s[p->pos] <= '9')
			p->pos++;
	} else {
		return fail(p, -EINVAL, "bad number");
	}
	if (p->pos < n && s[p->pos] == '.') {
		p->pos++;
		if (p->pos >= n || s[p->pos] < '0' || s[p->pos] > '9')
			return fail(p, -EINVAL, "bad fraction");
		while (p->pos < n && s[p->pos] >= '0' && s[p->pos] <= '9')
			p->pos++;
	}
	if (p->pos < n && (s[p->pos] == 'e' || s[p->pos] == 'E')) {
		p->pos++;
		if (p->pos < n && (s[p->pos] == '+' || s[p->pos] == '-'))
			p->pos++;
		if (p->pos >= n || s[p->pos] < '0' || s[p->pos] > '9')
			return fail(p, -EINVAL, "bad exponent");
		while (p->pos < n && s[p->pos] >= '0' && s[p->pos] <= '9')
			p->pos++;
	}
	p->d->toks[i].end = (uint32_t)p->pos;
	return i;
}

static int parse_literal(struct parser *p, const char *word, enum json_type type)
{
	size_t wl = strlen(word);
	if (p->d->len - p->pos < wl || memcmp(p->d->s + p->pos, word, wl) != 0)
		return fail(p, -EINVAL, "unexpected character");
	int i = new_tok(p, type);
	if (i < 0)
		return -1;
	p->pos += wl;
	p->d->toks[i].end = (uint32_t)p->pos;
	return i;
}

static int parse_value(struct parser *p, unsigned depth);

/* Whether the key at token key equals one of the earlier keys of the object at token obj
 * (compared unescaped, so "a" and "\\u0061" are the same key). */
static bool key_seen(const struct json_doc *d, int obj, int key)
{
	const struct json_tok *k = &d->toks[key];
	int t = obj + 1;
	for (uint32_t n = 0; n < d->toks[obj].size; n++) {
		const struct json_tok *o = &d->toks[t];
		bool raw = !memchr(d->s + o->start, '\\', o->end - o->start) &&
			   !memchr(d->s + k->start, '\\', k->end - k->start);
		if (raw) {
			if (o->end - o->start == k->end - k->start &&
			    !memcmp(d->s + o->start, d->s + k->start, k->end - k->start))
				return true;
		} else {
			char a[256], b[256];
			int la = json_get_str(d, t, a, sizeof a), lb = json_get_str(d, key, b, sizeof b);
			if (la >= 0 && lb >= 0 ? la == lb && !memcmp(a, b, (size_t)la)
					       : o->end - o->start == k->end - k->start &&
						     !memcmp(d->s + o->start, d->s + k->start, k->end - k->start))
				return true;
		}
		t = (int)d->toks[t + 1].next;
	}
	return false;
}

static int parse_container(struct parser *p, unsigned depth, bool object)
{
	if (depth >= JSON_MAX_DEPTH)
		return fail(p, -E2BIG, "nested too deeply");
	int i = new_tok(p, object ? JSON_OBJECT : JSON_ARRAY);
	if (i < 0)
		return -1;
	char close = object ? '}' : ']';
	p->pos++;
	skip_ws(p);
	if (p->pos < p->d->len && p->d->s[p->pos] == close) {
		p->pos++;
		p->d->toks[i].end = (uint32_t)p->pos;
		p->d->toks[i].next = p->d->ntoks;
		return i;
	}
	for (;;) {
		skip_ws(p);
		if (object) {
			if (p->pos >= p->d->len || p->d->s[p->pos] != '"')
				return fail(p, -EINVAL, "expected a key");
			if (parse_string(p) < 0)
				return -1;
			p->d->toks[p->d->ntoks - 1].next = p->d->ntoks;
			if (key_seen(p->d, i, (int)p->d->ntoks - 1))
				return fail(p, -EINVAL, "duplicate key in object");
			skip_ws(p);
			if (p->pos >= p->d->len || p->d->s[p->pos] != ':')
				return fail(p, -EINVAL, "expected ':'");
			p->pos++;
		}
		if (parse_value(p, depth + 1) < 0)
			return -1;
		p->d->toks[i].size++;
		skip_ws(p);
		if (p->pos >= p->d->len)
			return fail(p, -EINVAL, "unterminated container");
		char c = p->d->s[p->pos];
		if (c == ',') {
			p->pos++;
			continue;
		}
		if (c != close)
			return fail(p, -EINVAL, object ? "expected ',' or '}'" : "expected ',' or ']'");
		p->pos++;
		p->d->toks[i].end = (uint32_t)p->pos;
		p->d->toks[i].next = p->d->ntoks;
		return i;
	}
}

static int parse_value(struct parser *p, unsigned depth)
{
	skip_ws(p);
	if (p->pos >= p->d->len)
		return fail(p, -EINVAL, "expected a value");
	int i;
	switch (p->d->s[p->pos]) {
	case '{':
		return parse_container(p, depth, true);
	case '[':
		return parse_container(p, depth, false);
	case '"':
		i = parse_string(p);
		break;
	case 't':
		i = parse_literal(p, "true", JSON_TRUE);
		break;
	case 'f':
		i = parse_literal(p, "false", JSON_FALSE);
		break;
	case 'n':
		i = parse_literal(p, "null", JSON_NULL);
		break;
	default:
		i = parse_number(p);
		break;
	}
	if (i >= 0)
		p->d->toks[i].next = p->d->ntoks;
	return i;
}

int json_parse(struct json_doc *d, const char *s, size_t len, struct json_tok *toks, unsigned cap)
{
	memset(d, 0, sizeof(*d));
	d->s = s;
	d->len = len;
	d->toks = toks;
	struct parser p = {.d = d, .cap = cap};
	if (len > UINT32_MAX - 1)
		return fail(&p, -E2BIG, "document too long"), p.err;
	if (parse_value(&p, 0) < 0)
		return p.err;
	skip_ws(&p);
	if (p.pos != len)
		return fail(&p, -EINVAL, "text after the value"), p.err;
	return 0;
}

static bool tok_valid(const struct json_doc *d, int t)
{
	return t >= 0 && (unsigned)t < d->ntoks;
}

static bool key_equals(const struct json_doc *d, int t, const char *key)
{
	char buf[128];
	int n = json_get_str(d, t, buf, sizeof(buf));
	return n >= 0 && strcmp(buf, key) == 0;
}

int json_obj_get(const struct json_doc *d, int obj, const char *key)
{
	if (!tok_valid(d, obj) || d->toks[obj].type != JSON_OBJECT)
		return -1;
	int t = obj + 1;
	for (uint32_t k = 0; k < d->toks[obj].size; k++) {
		int v = t + 1;
		if (key_equals(d, t, key))
			return v;
		t = (int)d->toks[v].next;
	}
	return -1;
}

int json_arr_get(const struct json_doc *d, int arr, unsigned i)
{
	if (!tok_valid(d, arr) || d->toks[arr].type != JSON_ARRAY || i >= d->toks[arr].size)
		return -1;
	int t = arr + 1;
	for (unsigned k = 0; k < i; k++)
		t = (int)d->toks[t].next;
	return t;
}

static unsigned hex4(const char *s)
{
	unsigned v = 0;
	for (int k = 0; k < 4; k++) {
		char c = s[k];
		v <<= 4;
		v |= (unsigned)(c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10);
	}
	return v;
}

static int put_utf8(char *buf, size_t cap, size_t *o, unsigned cp)
{
	unsigned char tmp[4];
	size_t n;
	if (cp < 0x80) {
		tmp[0] = (unsigned char)cp;
		n = 1;
	} else if (cp < 0x800) {
		tmp[0] = (unsigned char)(0xc0 | (cp >> 6));
		tmp[1] = (unsigned char)(0x80 | (cp & 0x3f));
		n = 2;
	} else if (cp < 0x10000) {
		tmp[0] = (unsigned char)(0xe0 | (cp >> 12));
		tmp[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
		tmp[2] = (unsigned char)(0x80 | (cp & 0x3f));
		n = 3;
	} else {
		tmp[0] = (unsigned char)(0xf0 | (cp >> 18));
		tmp[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3f));
		tmp[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
		tmp[3] = (unsigned char)(0x80 | (cp & 0x3f));
		n = 4;
	}
	if (*o + n + 1 > cap)
		return -ENAMETOOLONG;
	memcpy(buf + *o, tmp, n);
	*o += n;
	return 0;
}

int json_get_str(const struct json_doc *d, int t, char *buf, size_t cap)
{
	if (!tok_valid(d, t) || d->toks[t].type != JSON_STRING || cap == 0)
		return -EINVAL;
	const char *s = d->s;
	size_t i = d->toks[t].start, end = d->toks[t].end, o = 0;
	while (i < end) {
		char c = s[i];
		if (c != '\\') {
			if (c == 0)
				return -EINVAL;
			if (o + 2 > cap)
				return -ENAMETOOLONG;
			buf[o++] = c;
			i++;
			continue;
		}
		char e = s[i + 1];
		unsigned cp;
		if (e == 'u') {
			cp = hex4(s + i + 2);
			i += 6;
			if (cp >= 0xd800 && cp < 0xdc00) {
				if (i + 6 > end || s[i] != '\\' || s[i + 1] != 'u')
					return -EINVAL;
				unsigned lo = hex4(s + i + 2);
				if (lo < 0xdc00 || lo >= 0xe000)
					return -EINVAL;
				cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
				i += 6;
			} else if (cp >= 0xdc00 && cp < 0xe000) {
				return -EINVAL;
			}
			if (cp == 0)
				return -EINVAL;
		} else {
			switch (e) {
			case 'b':
				cp = '\b';
				break;
			case 'f':
				cp = '\f';
				break;
			case 'n':
				cp = '\n';
				break;
			case 'r':
				cp = '\r';
				break;
			case 't':
				cp = '\t';
				break;
			default:
				cp = (unsigned char)e; /* " \ / */
				break;
			}
			i += 2;
		}
		int rc = put_utf8(buf, cap, &o, cp);
		if (rc < 0)
			return rc;
	}
	buf[o] = 0;
	return (int)o;
}

static int number_text(const struct json_doc *d, int t, char *buf, size_t cap)
{
	if (!tok_valid(d, t) || d->toks[t].type != JSON_NUMBER)
		return -EINVAL;
	size_t n = d->toks[t].end - d->toks[t].start;
	if (n + 1 > cap)
		return -ERANGE;
	memcpy(buf, d->s + d->toks[t].start, n);
	buf[n] = 0;
	return 0;
}

int json_get_int(const struct json_doc *d, int t, int64_t *v)
{
	char buf[32];
	int rc = number_text(d, t, buf, sizeof(buf));
	if (rc < 0)
		return rc;
	if (strpbrk(buf, ".eE"))
		return -EINVAL;
	errno = 0;
	long long x = strtoll(buf, NULL, 10);
	if (errno == ERANGE)
		return -ERANGE;
	*v = x;
	return 0;
}

int json_get_double(const struct json_doc *d, int t, double *v)
{
	char buf[64];
	int rc = number_text(d, t, buf, sizeof(buf));
	if (rc < 0)
		return rc;
	double x = strtod(buf, NULL);
	if (!isfinite(x))
		return -ERANGE;
	*v = x;
	return 0;
}

int json_get_raw(const struct json_doc *d, int t, const char **p, size_t *len)
{
	if (!tok_valid(d, t) || d->toks[t].type != JSON_STRING)
		return -EINVAL;
	*p = d->s + d->toks[t].start;
	*len = d->toks[t].end - d->toks[t].start;
	return 0;
}

/* ---- writer ---- */

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

int jw_finish(struct json_w *w, size_t *len)
{
	if (w->overflow || w->depth != 0 || w->after_key)
		return -ENOBUFS;
	if (len)
		*len = w->len;
	return 0;
}
