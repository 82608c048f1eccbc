/* The bounded XML reader for S3 answers and the four answers tierd reads (s3_xml.h). */
#include "s3_xml.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct xml {
	const char *p, *end;
	char path[S3_XML_MAX_DEPTH * (S3_XML_MAX_NAME + 1)];
	size_t at[S3_XML_MAX_DEPTH + 1]; /* length of path at each depth */
	int depth, had_child, roots;
	char text[S3_XML_MAX_TEXT + 1];
	size_t tlen;
};

static int is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

static int name_char(char c)
{
	return c && !is_space(c) && c != '>' && c != '/' && c != '<' && c != '=' && c != '&';
}

static int skip_past(struct xml *x, const char *mark)
{
	size_t n = strlen(mark);
	for (; x->end - x->p >= (ptrdiff_t)n; x->p++) {
		if (memcmp(x->p, mark, n) == 0) {
			x->p += n;
			return 0;
		}
	}
	return -EPROTO;
}

static int text_add(struct xml *x, const char *s, size_t n)
{
	if (n > S3_XML_MAX_TEXT - x->tlen)
		return -E2BIG;
	memcpy(x->text + x->tlen, s, n);
	x->tlen += n;
	x->text[x->tlen] = '\0';
	return 0;
}

/* One reference after '&': named or numeric, written as UTF-8. */
static int entity(struct xml *x)
{
	static const struct {
		const char *name, *c;
	} named[] = {{"lt", "<"}, {"gt", ">"}, {"amp", "&"}, {"quot", "\""}, {"apos", "'"}};
	const char *semi = x->p;
	while (semi < x->end && semi - x->p <= 10 && *semi != ';')
		semi++;
	if (semi >= x->end || *semi != ';')
		return -EPROTO;
	size_t n = (size_t)(semi - x->p);
	for (size_t i = 0; i < sizeof(named) / sizeof(named[0]); i++) {
		if (strlen(named[i].name) == n && memcmp(x->p, named[i].name, n) == 0) {
			x->p = semi + 1;
			return text_add(x, named[i].c, 1);
		}
	}
	if (n < 2 || x->p[0] != '#')
		return -EPROTO;
	int hex = x->p[1] == 'x';
	const char *d = x->p + 1 + hex;
	if (d == semi)
		return -EPROTO;
	unsigned long cp = 0;
	for (; d < semi; d++) {
		int v;
		if (*d >= '0' && *d <= '9')
			v = *d - '0';
		else if (hex && *d >= 'a' && *d <= 'f')
			v = *d - 'a' + 10;
		else if (hex && *d >= 'A' && *d <= 'F')
			v = *d - 'A' + 10;
		else
			return -EPROTO;
		cp = cp * (hex ? 16 : 10) + (unsigned long)v;
		if (cp > 0x10FFFF)
			return -EPROTO;
	}
	if (cp == 0 || (cp >= 0xD800 && cp <= 0xDFFF))
		return -EPROTO;
	char u[4];
	size_t un;
	if (cp < 0x80) {
		u[0] = (char)cp;
		un = 1;
	} else if (cp < 0x800) {
		u[0] = (char)(0xC0 | (cp >> 6));
		u[1] = (char)(0x80 | (cp & 0x3F));
		un = 2;
	} else if (cp < 0x10000) {
		u[0] = (char)(0xE0 | (cp >> 12));
		u[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
		u[2] = (char)(0x80 | (cp & 0x3F));
		un = 3;
	} else {
		u[0] = (char)(0xF0 | (cp >> 18));
		u[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
		u[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
		u[3] = (char)(0x80 | (cp & 0x3F));
		un = 4;
	}
	x->p = semi + 1;
	return text_add(x, u, un);
}

static int read_name(struct xml *x, const char **ret, size_t *ret_len)
{
	const char *s = x->p;
	while (x->p < x->end && name_char(*x->p))
		x->p++;
	size_t n = (size_t)(x->p - s);
	if (n == 0)
		return -EPROTO;
	if (n > S3_XML_MAX_NAME)
		return -E2BIG;
	*ret = s;
	*ret_len = n;
	return 0;
}

/* Attributes are read past, quotes honoured; *self_closing for "/>". */
static int skip_attributes(struct xml *x, int *self_closing)
{
	char quote = 0;
	for (; x->p < x->end; x->p++) {
		char c = *x->p;
		if (quote) {
			if (c == quote)
				quote = 0;
		} else if (c == '"' || c == '\'') {
			quote = c;
		} else if (c == '<') {
			return -EPROTO;
		} else if (c == '>') {
			*self_closing = x->p[-1] == '/';
			x->p++;
			return 0;
		}
	}
	return -EPROTO;
}

static int open_tag(struct xml *x, int *self_closing)
{
	const char *name;
	size_t n;
	int r = read_name(x, &name, &n);
	if (r < 0)
		return r;
	if (x->depth == S3_XML_MAX_DEPTH)
		return -E2BIG;
	if (x->depth == 0 && x->roots++)
		return -EPROTO;
	size_t at = x->at[x->depth];
	if (x->depth)
		x->path[at++] = '/';
	memcpy(x->path + at, name, n);
	x->path[at + n] = '\0';
	x->depth++;
	x->at[x->depth] = at + n;
	x->had_child = 0;
	x->tlen = 0;
	x->text[0] = '\0';
	return skip_attributes(x, self_closing);
}

static int close_tag(struct xml *x, s3_xml_cb cb, void *ctx)
{
	if (x->depth == 0)
		return -EPROTO;
	size_t start = x->depth > 1 ? x->at[x->depth - 1] + 1 : 0;
	size_t n = x->at[x->depth] - start;
	if (x->p < x->end && *x->p == '/') {
		x->p++;
		const char *name;
		size_t nl;
		int r = read_name(x, &name, &nl);
		if (r < 0)
			return r;
		if (nl != n || memcmp(name, x->path + start, n) != 0)
			return -EPROTO;
		while (x->p < x->end && is_space(*x->p))
			x->p++;
		if (x->p >= x->end || *x->p != '>')
			return -EPROTO;
		x->p++;
	}
	int r = cb(ctx, x->path, x->had_child ? NULL : x->text);
	if (r < 0)
		return r;
	x->depth--;
	x->path[x->at[x->depth]] = '\0';
	x->had_child = 1;
	x->tlen = 0;
	x->text[0] = '\0';
	return 0;
}

int s3_xml_parse(const char *buf, size_t len, s3_xml_cb cb, void *ctx)
{
	struct xml *x;
	int r = 0;
	if (len > S3_XML_MAX_INPUT)
		return -E2BIG;
	x = calloc(1, sizeof(*x));
	if (!x)
		return -ENOMEM;
	x->p = buf;
	x->end = buf + len;
	while (r == 0 && x->p < x->end) {
		char c = *x->p;
		if (c == '<') {
			x->p++;
			if (x->p >= x->end) {
				r = -EPROTO;
			} else if (*x->p == '?') {
				r = x->roots ? -EPROTO : skip_past(x, "?>");
			} else if (x->end - x->p >= 3 && memcmp(x->p, "!--", 3) == 0) {
				r = skip_past(x, "-->");
			} else if (*x->p == '!') {
				r = -EPROTO;
			} else if (*x->p == '/') {
				r = close_tag(x, cb, ctx);
			} else {
				int self = 0;
				r = open_tag(x, &self);
				if (r == 0 && self)
					r = close_tag(x, cb, ctx);
			}
		} else if (x->depth == 0) {
			r = is_space(c) ? 0 : -EPROTO;
			x->p++;
		} else if (c == '&') {
			x->p++;
			r = entity(x);
		} else if (c == '>') {
			r = -EPROTO;
		} else {
			const char *s = x->p;
			while (x->p < x->end && *x->p != '<' && *x->p != '&' && *x->p != '>')
				x->p++;
			r = text_add(x, s, (size_t)(x->p - s));
		}
	}
	if (r == 0 && (x->depth != 0 || x->roots != 1))
		r = -EPROTO;
	free(x);
	return r;
}

static int copy_text(char *out, size_t cap, const char *text)
{
	size_t n = strlen(text);
	if (n >= cap)
		return -E2BIG;
	memcpy(out, text, n + 1);
	return 0;
}

int s3_etag_unquote(const char *in, char out[S3_ETAG_MAX])
{
	size_t n = strlen(in);
	if (n >= 2 && in[0] == '"' && in[n - 1] == '"') {
		in++;
		n -= 2;
	}
	if (n == 0 || n >= S3_ETAG_MAX)
		return -EPROTO;
	for (size_t i = 0; i < n; i++)
		if (in[i] == '"' || (unsigned char)in[i] < 0x20)
			return -EPROTO;
	memcpy(out, in, n);
	out[n] = '\0';
	return 0;
}

static int error_cb(void *ctx, const char *path, const char *text)
{
	if (text && strcmp(path, "Error/Code") == 0)
		return copy_text(ctx, S3_ERR_CODE_MAX, text);
	return 0;
}

int s3_xml_error(const char *buf, size_t len, char code[S3_ERR_CODE_MAX])
{
	code[0] = '\0';
	return s3_xml_parse(buf, len, error_cb, code);
}

static int initiate_cb(void *ctx, const char *path, const char *text)
{
	if (text && strcmp(path, "InitiateMultipartUploadResult/UploadId") == 0)
		return copy_text(ctx, S3_UPLOAD_ID_MAX, text);
	return 0;
}

int s3_xml_initiate(const char *buf, size_t len, char upload_id[S3_UPLOAD_ID_MAX])
{
	char id[S3_UPLOAD_ID_MAX] = "";
	int r = s3_xml_parse(buf, len, initiate_cb, id);
	if (r < 0)
		return r;
	if (!id[0])
		return -EPROTO;
	memcpy(upload_id, id, sizeof(id));
	return 0;
}

/* A decimal number in [lo, hi], nothing else. */
static int parse_u64(const char *s, uint64_t lo, uint64_t hi, uint64_t *ret)
{
	uint64_t v = 0;
	if (!*s)
		return -EPROTO;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return -EPROTO;
		if (v > (UINT64_MAX - 9) / 10)
			return -ERANGE;
		v = v * 10 + (uint64_t)(*s - '0');
	}
	if (v < lo || v > hi)
		return -ERANGE;
	*ret = v;
	return 0;
}

struct list_ctx {
	struct s3_part *parts;
	size_t cap, n;
	int truncated;
	uint32_t next;
	struct s3_part cur;
	unsigned seen; /* 1 number, 2 etag, 4 size */
};

static int part_field(struct list_ctx *l, const char *f, const char *text)
{
	uint64_t v;
	int r;
	if (strcmp(f, "PartNumber") == 0) {
		if ((l->seen & 1) || (r = parse_u64(text, 1, 10000, &v)) < 0)
			return (l->seen & 1) ? -EPROTO : r;
		l->cur.number = (uint32_t)v;
		l->seen |= 1;
	} else if (strcmp(f, "ETag") == 0) {
		if ((l->seen & 2) || (r = s3_etag_unquote(text, l->cur.etag)) < 0)
			return (l->seen & 2) ? -EPROTO : r;
		l->seen |= 2;
	} else if (strcmp(f, "Size") == 0) {
		if ((l->seen & 4) || (r = parse_u64(text, 0, UINT64_MAX, &v)) < 0)
			return (l->seen & 4) ? -EPROTO : r;
		l->cur.size = v;
		l->seen |= 4;
	}
	return 0;
}

static int list_cb(void *ctx, const char *path, const char *text)
{
	struct list_ctx *l = ctx;
	uint64_t v;
	int r;
	if (strcmp(path, "ListPartsResult/Part") == 0) {
		/* The end of one part: all three fields, once each. */
		if (l->seen != 7)
			return -EPROTO;
		if (l->n == l->cap)
			return -E2BIG;
		l->parts[l->n++] = l->cur;
		l->seen = 0;
		memset(&l->cur, 0, sizeof(l->cur));
		return 0;
	}
	if (!text)
		return 0;
	if (strncmp(path, "ListPartsResult/Part/", 21) == 0)
		return part_field(l, path + 21, text);
	if (strcmp(path, "ListPartsResult/IsTruncated") == 0) {
		if (strcmp(text, "true") && strcmp(text, "false"))
			return -EPROTO;
		l->truncated = strcmp(text, "true") == 0;
	} else if (strcmp(path, "ListPartsResult/NextPartNumberMarker") == 0) {
		if ((r = parse_u64(text, 0, 10000, &v)) < 0)
			return r;
		l->next = (uint32_t)v;
	}
	return 0;
}

int s3_xml_list_parts(const char *buf, size_t len, struct s3_part *parts, size_t cap, size_t *ret_n, int *truncated,
		      uint32_t *next_marker)
{
	struct list_ctx l = {.parts = parts, .cap = cap};
	int r = s3_xml_parse(buf, len, list_cb, &l);
	if (r < 0)
		return r;
	/* Parts come ascending, each once. */
	for (size_t i = 1; i < l.n; i++)
		if (parts[i].number <= parts[i - 1].number)
			return -EPROTO;
	if (l.truncated && l.next == 0)
		return -EPROTO;
	*ret_n = l.n;
	*truncated = l.truncated;
	*next_marker = l.next;
	return 0;
}

struct complete_ctx {
	char *etag, *code;
	int ok;
};

static int complete_cb(void *ctx, const char *path, const char *text)
{
	struct complete_ctx *c = ctx;
	if (!text)
		return 0;
	if (strcmp(path, "CompleteMultipartUploadResult/ETag") == 0) {
		/* Present but empty is an answer too (Ceph RGW 16 gives one): the caller asks. */
		int r = text[0] ? s3_etag_unquote(text, c->etag) : 0;
		if (r < 0)
			return r;
		c->ok = 1;
	} else if (strcmp(path, "Error/Code") == 0) {
		return copy_text(c->code, S3_ERR_CODE_MAX, text);
	}
	return 0;
}

int s3_xml_complete(const char *buf, size_t len, char etag[S3_ETAG_MAX], char code[S3_ERR_CODE_MAX])
{
	char e[S3_ETAG_MAX] = "";
	struct complete_ctx c = {e, code, 0};
	code[0] = '\0';
	int r = s3_xml_parse(buf, len, complete_cb, &c);
	if (r < 0)
		return r;
	if (code[0])
		return -EIO;
	if (!c.ok)
		return -EPROTO;
	memcpy(etag, e, sizeof(e));
	return 0;
}
