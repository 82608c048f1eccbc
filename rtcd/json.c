/* A bounded parser for the flat JSON objects of WebRTC signaling and a capped text
 * builder that escapes JSON strings. */
#include "json.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct cur {
	const char *p, *end;
	struct rtc_json *j;
	const char *why;
};

static void ws(struct cur *c)
{
	while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r'))
		c->p++;
}

static int fail(struct cur *c, const char *why)
{
	c->why = why;
	return -EBADMSG;
}

static int hex4(struct cur *c, unsigned *ret)
{
	if (c->end - c->p < 4)
		return fail(c, "truncated \\u escape");
	unsigned v = 0;
	for (int i = 0; i < 4; i++) {
		char ch = *c->p++;
		v <<= 4;
		if (ch >= '0' && ch <= '9')
			v |= (unsigned)(ch - '0');
		else if (ch >= 'a' && ch <= 'f')
			v |= (unsigned)(ch - 'a' + 10);
		else if (ch >= 'A' && ch <= 'F')
			v |= (unsigned)(ch - 'A' + 10);
		else
			return fail(c, "bad hex digit in \\u escape");
	}
	*ret = v;
	return 0;
}

static void put(char *out, size_t *n, char ch)
{
	if (out)
		out[*n] = ch;
	(*n)++;
}

static void put_utf8(char *out, size_t *n, unsigned cp)
{
	if (cp < 0x80) {
		put(out, n, (char)cp);
	} else if (cp < 0x800) {
		put(out, n, (char)(0xc0 | (cp >> 6)));
		put(out, n, (char)(0x80 | (cp & 0x3f)));
	} else if (cp < 0x10000) {
		put(out, n, (char)(0xe0 | (cp >> 12)));
		put(out, n, (char)(0x80 | ((cp >> 6) & 0x3f)));
		put(out, n, (char)(0x80 | (cp & 0x3f)));
	} else {
		put(out, n, (char)(0xf0 | (cp >> 18)));
		put(out, n, (char)(0x80 | ((cp >> 12) & 0x3f)));
		put(out, n, (char)(0x80 | ((cp >> 6) & 0x3f)));
		put(out, n, (char)(0x80 | (cp & 0x3f)));
	}
}

/* A string at c->p (the opening quote). out NULL: validate and skip. The unescaped
 * form is never longer than the escaped one. */
static int string(struct cur *c, char *out, size_t *ret_len)
{
	size_t n = 0;
	c->p++;
	for (;;) {
		if (c->p >= c->end)
			return fail(c, "unterminated string");
		unsigned char ch = (unsigned char)*c->p++;
		if (ch == '"')
			break;
		if (ch < 0x20)
			return fail(c, "control character in string");
		if (ch != '\\') {
			put(out, &n, (char)ch);
			continue;
		}
		if (c->p >= c->end)
			return fail(c, "unterminated escape");
		char e = *c->p++;
		switch (e) {
		case '"':
		case '\\':
		case '/':
			put(out, &n, e);
			break;
		case 'b':
			put(out, &n, '\b');
			break;
		case 'f':
			put(out, &n, '\f');
			break;
		case 'n':
			put(out, &n, '\n');
			break;
		case 'r':
			put(out, &n, '\r');
			break;
		case 't':
			put(out, &n, '\t');
			break;
		case 'u': {
			unsigned cp;
			if (hex4(c, &cp) < 0)
				return -EBADMSG;
			if (cp >= 0xd800 && cp < 0xdc00) {
				unsigned lo;
				if (c->end - c->p < 2 || c->p[0] != '\\' || c->p[1] != 'u')
					return fail(c, "lone surrogate in \\u escape");
				c->p += 2;
				if (hex4(c, &lo) < 0)
					return -EBADMSG;
				if (lo < 0xdc00 || lo > 0xdfff)
					return fail(c, "bad low surrogate in \\u escape");
				cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
			} else if (cp >= 0xdc00 && cp < 0xe000) {
				return fail(c, "lone surrogate in \\u escape");
			}
			if (cp == 0)
				return fail(c, "NUL character in string");
			put_utf8(out, &n, cp);
			break;
		}
		default:
			return fail(c, "bad escape in string");
		}
	}
	if (out)
		out[n] = '\0';
	*ret_len = n;
	return 0;
}

static int number(struct cur *c, double *ret)
{
	char tmp[64];
	size_t n = 0;
	const char *s = c->p;
	if (c->p < c->end && *c->p == '-')
		c->p++;
	if (c->p >= c->end || *c->p < '0' || *c->p > '9')
		return fail(c, "bad number");
	while (c->p < c->end && ((*c->p >= '0' && *c->p <= '9') || *c->p == '.' || *c->p == 'e' || *c->p == 'E' ||
				 *c->p == '+' || *c->p == '-'))
		c->p++;
	n = (size_t)(c->p - s);
	if (n >= sizeof tmp)
		return fail(c, "number too long");
	memcpy(tmp, s, n);
	tmp[n] = '\0';
	char *e;
	*ret = strtod(tmp, &e);
	if (*e != '\0')
		return fail(c, "bad number");
	return 0;
}

static int literal(struct cur *c, const char *word)
{
	size_t n = strlen(word);
	if ((size_t)(c->end - c->p) < n || memcmp(c->p, word, n) != 0)
		return fail(c, "unexpected character");
	c->p += n;
	return 0;
}

/* Skips any value, nested ones included, up to RTC_JSON_MAX_DEPTH. */
static int skip_value(struct cur *c, int depth)
{
	ws(c);
	if (c->p >= c->end)
		return fail(c, "truncated value");
	if (depth > RTC_JSON_MAX_DEPTH)
		return fail(c, "nested too deeply");
	size_t len;
	double d;
	switch (*c->p) {
	case '"':
		return string(c, NULL, &len);
	case 't':
		return literal(c, "true");
	case 'f':
		return literal(c, "false");
	case 'n':
		return literal(c, "null");
	case '{':
	case '[': {
		char close = *c->p == '{' ? '}' : ']';
		bool obj = close == '}';
		c->p++;
		ws(c);
		if (c->p < c->end && *c->p == close) {
			c->p++;
			return 0;
		}
		for (;;) {
			if (obj) {
				ws(c);
				if (c->p >= c->end || *c->p != '"')
					return fail(c, "expected a member name");
				if (string(c, NULL, &len) < 0)
					return -EBADMSG;
				ws(c);
				if (c->p >= c->end || *c->p != ':')
					return fail(c, "expected ':'");
				c->p++;
			}
			if (skip_value(c, depth + 1) < 0)
				return -EBADMSG;
			ws(c);
			if (c->p >= c->end)
				return fail(c, "truncated value");
			if (*c->p == ',') {
				c->p++;
				continue;
			}
			if (*c->p == close) {
				c->p++;
				return 0;
			}
			return fail(c, "expected ',' or a closing bracket");
		}
	}
	default:
		return number(c, &d);
	}
}

static int member_value(struct cur *c, struct rtc_json_field *f)
{
	ws(c);
	if (c->p >= c->end)
		return fail(c, "truncated value");
	size_t len;
	switch (*c->p) {
	case '"': {
		char *out = c->j->buf + c->j->used;
		if (string(c, out, &len) < 0)
			return -EBADMSG;
		if (f) {
			f->type = RTC_JSON_STRING;
			f->str = out;
			c->j->used += len + 1;
		}
		return 0;
	}
	case 't':
	case 'f':
		if (f) {
			f->type = RTC_JSON_BOOL;
			f->b = *c->p == 't';
		}
		return literal(c, *c->p == 't' ? "true" : "false");
	case 'n':
		if (f)
			f->type = RTC_JSON_NULL;
		return literal(c, "null");
	case '{':
	case '[':
		if (f)
			f->type = RTC_JSON_NESTED;
		return skip_value(c, 1);
	default: {
		double d;
		if (number(c, &d) < 0)
			return -EBADMSG;
		if (f) {
			f->type = RTC_JSON_NUMBER;
			f->num = d;
		}
		return 0;
	}
	}
}

int rtc_json_parse(const char *in, size_t len, struct rtc_json *j, const char **ret_why)
{
	struct cur c = {.p = in, .end = in + len, .j = j, .why = NULL};
	j->n = 0;
	j->used = 0;
	int r = -EBADMSG;
	if (len > KP_CONTROL_MESSAGE_MAX) {
		c.why = "message larger than 64 KiB";
		goto out;
	}
	ws(&c);
	if (c.p >= c.end || *c.p != '{') {
		c.why = "not a JSON object";
		goto out;
	}
	c.p++;
	ws(&c);
	if (c.p < c.end && *c.p == '}') {
		c.p++;
	} else {
		for (;;) {
			ws(&c);
			if (c.p >= c.end || *c.p != '"') {
				fail(&c, "expected a member name");
				goto out;
			}
			char *key = j->buf + j->used;
			size_t klen;
			if (string(&c, key, &klen) < 0)
				goto out;
			struct rtc_json_field *f = NULL;
			if (klen < RTC_JSON_MAX_KEY && j->n < RTC_JSON_MAX_FIELDS) {
				f = &j->f[j->n];
				memcpy(f->key, key, klen + 1);
			}
			ws(&c);
			if (c.p >= c.end || *c.p != ':') {
				fail(&c, "expected ':'");
				goto out;
			}
			c.p++;
			if (member_value(&c, f) < 0)
				goto out;
			if (f)
				j->n++;
			ws(&c);
			if (c.p < c.end && *c.p == ',') {
				c.p++;
				continue;
			}
			if (c.p < c.end && *c.p == '}') {
				c.p++;
				break;
			}
			fail(&c, "expected ',' or '}'");
			goto out;
		}
	}
	ws(&c);
	if (c.p != c.end) {
		c.why = "bytes after the object";
		goto out;
	}
	r = 0;
out:
	if (r < 0) {
		j->n = 0;
		if (ret_why)
			*ret_why = c.why ? c.why : "malformed JSON";
	}
	return r;
}

static const struct rtc_json_field *find(const struct rtc_json *j, const char *key)
{
	for (unsigned i = 0; i < j->n; i++)
		if (strcmp(j->f[i].key, key) == 0)
			return &j->f[i];
	return NULL;
}

const char *rtc_json_str(const struct rtc_json *j, const char *key)
{
	const struct rtc_json_field *f = find(j, key);
	return f && f->type == RTC_JSON_STRING ? f->str : NULL;
}

bool rtc_json_num(const struct rtc_json *j, const char *key, double *ret)
{
	const struct rtc_json_field *f = find(j, key);
	if (!f || f->type != RTC_JSON_NUMBER)
		return false;
	*ret = f->num;
	return true;
}

void rtc_text_init(struct rtc_text *t, char *buf, size_t cap)
{
	t->p = buf;
	t->len = 0;
	t->cap = cap;
	t->overflow = cap == 0;
	if (cap)
		buf[0] = '\0';
}

void rtc_text_add(struct rtc_text *t, const char *fmt, ...)
{
	if (t->overflow)
		return;
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(t->p + t->len, t->cap - t->len, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= t->cap - t->len) {
		t->overflow = true;
		t->p[t->len] = '\0';
		return;
	}
	t->len += (size_t)n;
}

void rtc_text_json_str(struct rtc_text *t, const char *src)
{
	rtc_text_add(t, "\"");
	for (const unsigned char *s = (const unsigned char *)src; *s && !t->overflow; s++) {
		switch (*s) {
		case '"':
			rtc_text_add(t, "\\\"");
			break;
		case '\\':
			rtc_text_add(t, "\\\\");
			break;
		case '\n':
			rtc_text_add(t, "\\n");
			break;
		case '\r':
			rtc_text_add(t, "\\r");
			break;
		case '\t':
			rtc_text_add(t, "\\t");
			break;
		default:
			if (*s < 0x20)
				rtc_text_add(t, "\\u%04x", *s);
			else
				rtc_text_add(t, "%c", *s);
		}
	}
	rtc_text_add(t, "\"");
}

bool rtc_text_ok(const struct rtc_text *t)
{
	return !t->overflow;
}
