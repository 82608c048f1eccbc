/* The reader of json.h: recursive descent over a caller-given token array, depth
 * bounded by JSON_MAX_DEPTH, strings validated in place and unescaped on demand by one
 * byte-at-a-time decoder (used to read, look up and compare keys, so no key length
 * limit and no copy). */
#include "json.h"

#include <errno.h>
#include <math.h>
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

size_t json_utf8_len(const unsigned char *s, size_t n)
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
			size_t n = json_utf8_len((const unsigned char *)s + p->pos, p->d->len - p->pos);
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

/* The unescaped bytes of a string token, one at a time. */
struct sdec {
	const char *s;
	size_t i, end;
	unsigned char b[4];
	unsigned n, k;
};

static void sdec_init(struct sdec *x, const struct json_doc *d, int t);
static int sdec_byte(struct sdec *x);

static bool same_key(const struct json_doc *d, int a, int b)
{
	struct sdec x, y;
	sdec_init(&x, d, a);
	sdec_init(&y, d, b);
	for (;;) {
		int cx = sdec_byte(&x), cy = sdec_byte(&y);
		if (cx != cy)
			return false;
		if (cx < 0)
			return true;
	}
}

/* Whether the key at token key equals one of the earlier keys of the object at token obj
 * (compared unescaped, so "a" and "\u0061" are the same key). */
static bool key_seen(const struct json_doc *d, int obj, int key)
{
	int t = obj + 1;
	for (uint32_t n = 0; n < d->toks[obj].size; n++) {
		if (same_key(d, t, key))
			return true;
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
	struct sdec x;
	sdec_init(&x, d, t);
	for (;; key++) {
		int c = sdec_byte(&x);
		if (c < 0)
			return *key == 0;
		if (c != (unsigned char)*key || c == 0)
			return false;
	}
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

static unsigned put_utf8(unsigned char *b, unsigned cp)
{
	if (cp < 0x80) {
		b[0] = (unsigned char)cp;
		return 1;
	}
	if (cp < 0x800) {
		b[0] = (unsigned char)(0xc0 | (cp >> 6));
		b[1] = (unsigned char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		b[0] = (unsigned char)(0xe0 | (cp >> 12));
		b[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
		b[2] = (unsigned char)(0x80 | (cp & 0x3f));
		return 3;
	}
	b[0] = (unsigned char)(0xf0 | (cp >> 18));
	b[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3f));
	b[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
	b[3] = (unsigned char)(0x80 | (cp & 0x3f));
	return 4;
}

static void sdec_init(struct sdec *x, const struct json_doc *d, int t)
{
	x->s = d->s;
	x->i = d->toks[t].start;
	x->end = d->toks[t].end;
	x->n = x->k = 0;
}

/* The next byte, or -1 at the end. The parser validated the escapes and surrogate
 * pairs of every string token, so they are decoded here without checks. */
static int sdec_byte(struct sdec *x)
{
	if (x->k < x->n)
		return x->b[x->k++];
	if (x->i >= x->end)
		return -1;
	const char *s = x->s;
	char c = s[x->i];
	if (c != '\\') {
		x->i++;
		return (unsigned char)c;
	}
	char e = s[x->i + 1];
	unsigned cp;
	x->i += 2;
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
	case 'u':
		cp = hex4(s + x->i);
		x->i += 4;
		if (cp >= 0xd800 && cp < 0xdc00) {
			cp = 0x10000 + ((cp - 0xd800) << 10) + (hex4(s + x->i + 2) - 0xdc00);
			x->i += 6;
		}
		break;
	default:
		cp = (unsigned char)e; /* " \ / */
		break;
	}
	x->n = put_utf8(x->b, cp);
	x->k = 1;
	return x->b[0];
}

int json_get_str(const struct json_doc *d, int t, char *buf, size_t cap)
{
	if (!tok_valid(d, t) || d->toks[t].type != JSON_STRING || cap == 0)
		return -EINVAL;
	struct sdec x;
	sdec_init(&x, d, t);
	size_t o = 0;
	for (int c; (c = sdec_byte(&x)) >= 0;) {
		if (c == 0)
			return -EILSEQ;
		if (o + 1 >= cap)
			return -ENAMETOOLONG;
		buf[o++] = (char)c;
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
