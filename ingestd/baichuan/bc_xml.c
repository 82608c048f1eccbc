/* The bounded XML reader of bc_xml.h: one linear scanner with an explicit stack. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bc_xml.h"

struct scan {
	const char *doc;
	size_t len, pos;
	/* Open elements: name spans. */
	struct bc_xml_span stack[BC_XML_MAX_DEPTH];
	unsigned depth;
};

static bool name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
	       c == '.' || c == ':';
}

static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

static const char *find_str(const char *p, size_t len, const char *needle)
{
	size_t nl = strlen(needle);
	for (size_t i = 0; i + nl <= len; i++)
		if (memcmp(p + i, needle, nl) == 0)
			return p + i;
	return NULL;
}

/* Does the open-element stack equal path? */
static bool stack_matches(const struct scan *s, const char *path)
{
	const char *p = path;
	for (unsigned i = 0; i < s->depth; i++) {
		const char *slash = strchr(p, '/');
		size_t seg = slash ? (size_t)(slash - p) : strlen(p);
		if (seg != s->stack[i].len || memcmp(p, s->stack[i].p, seg) != 0)
			return false;
		if (i + 1 == s->depth)
			return !slash;
		if (!slash)
			return false;
		p = slash + 1;
	}
	return false;
}

enum tag_kind { TAG_OPEN, TAG_CLOSE, TAG_EMPTY, TAG_OTHER };

/* Parses the markup at s->pos (a '<'); on success s->pos is past it. */
static int scan_tag(struct scan *s, enum tag_kind *kind, struct bc_xml_span *name, const char **ret_reason)
{
	const char *p = s->doc + s->pos, *end = s->doc + s->len;
	size_t left = s->len - s->pos;
	if (left >= 2 && p[1] == '?') {
		const char *q = find_str(p + 2, left - 2, "?>");
		if (!q)
			goto out_bad;
		s->pos = (size_t)(q + 2 - s->doc);
		*kind = TAG_OTHER;
		return 0;
	}
	if (left >= 4 && memcmp(p, "<!--", 4) == 0) {
		const char *q = find_str(p + 4, left - 4, "-->");
		if (!q)
			goto out_bad;
		s->pos = (size_t)(q + 3 - s->doc);
		*kind = TAG_OTHER;
		return 0;
	}
	if (left >= 2 && p[1] == '!') {
		*ret_reason = "XML DTDs and CDATA are not accepted";
		return -EBADMSG;
	}
	bool closing = left >= 2 && p[1] == '/';
	const char *n = p + 1 + closing, *q = n;
	while (q < end && name_char(*q))
		q++;
	if (q == n || (size_t)(q - n) > BC_XML_MAX_NAME)
		goto out_bad;
	name->p = n;
	name->len = (size_t)(q - n);
	/* Attributes: skip, honouring quotes so that '>' inside a value is not the end. */
	char quote = 0;
	while (q < end) {
		if (quote) {
			if (*q == quote)
				quote = 0;
		} else if (*q == '"' || *q == '\'') {
			if (closing)
				goto out_bad;
			quote = *q;
		} else if (*q == '>') {
			break;
		} else if (*q == '<') {
			goto out_bad;
		}
		q++;
	}
	if (q >= end)
		goto out_bad;
	*kind = closing ? TAG_CLOSE : q[-1] == '/' ? TAG_EMPTY : TAG_OPEN;
	s->pos = (size_t)(q + 1 - s->doc);
	return 0;
out_bad:
	*ret_reason = "malformed XML markup";
	return -EBADMSG;
}

/* Scans doc; with path, stops at the index-th match and returns its content. */
static int scan(const char *doc, size_t len, const char *path, unsigned index, struct bc_xml_span *ret,
		const char **ret_reason)
{
	struct scan s = {.doc = doc, .len = len};
	size_t content_start = 0;
	bool in_match = false;
	unsigned seen = 0;
	while (s.pos < len) {
		if (doc[s.pos] != '<') {
			if (doc[s.pos] == '\0') {
				*ret_reason = "NUL byte in XML";
				return -EBADMSG;
			}
			s.pos++;
			continue;
		}
		size_t tag_start = s.pos;
		enum tag_kind kind;
		struct bc_xml_span name;
		int err = scan_tag(&s, &kind, &name, ret_reason);
		if (err < 0)
			return err;
		switch (kind) {
		case TAG_OTHER:
			break;
		case TAG_OPEN:
		case TAG_EMPTY:
			if (s.depth == BC_XML_MAX_DEPTH) {
				*ret_reason = "XML nested too deeply";
				return -EBADMSG;
			}
			s.stack[s.depth++] = name;
			if (path && stack_matches(&s, path)) {
				if (kind == TAG_EMPTY && seen++ == index) {
					*ret = (struct bc_xml_span){doc + s.pos, 0};
					return 0;
				}
				if (kind == TAG_OPEN) {
					in_match = true;
					content_start = s.pos;
				}
			}
			if (kind == TAG_EMPTY)
				s.depth--;
			break;
		case TAG_CLOSE:
			if (!s.depth || s.stack[s.depth - 1].len != name.len ||
			    memcmp(s.stack[s.depth - 1].p, name.p, name.len) != 0) {
				*ret_reason = "mismatched XML closing tag";
				return -EBADMSG;
			}
			if (in_match && path && stack_matches(&s, path)) {
				in_match = false;
				if (seen++ == index) {
					*ret = (struct bc_xml_span){doc + content_start, tag_start - content_start};
					return 0;
				}
			}
			s.depth--;
			break;
		}
	}
	if (s.depth) {
		*ret_reason = "unclosed XML element";
		return -EBADMSG;
	}
	if (path) {
		*ret_reason = "XML element not found";
		return -ENOENT;
	}
	return 0;
}

int bc_xml_check(const char *doc, size_t len, const char **ret_reason)
{
	if (len < 5 || memcmp(doc, "<?xml", 5) != 0) {
		*ret_reason = "XML does not start with <?xml";
		return -EBADMSG;
	}
	struct bc_xml_span unused;
	return scan(doc, len, NULL, 0, &unused, ret_reason);
}

int bc_xml_find(const char *doc, size_t len, const char *path, unsigned index, struct bc_xml_span *ret,
		const char **ret_reason)
{
	return scan(doc, len, path, index, ret, ret_reason);
}

/* Decodes one entity at p (a '&'); returns its length or 0 when unknown. */
static size_t entity(const char *p, size_t left, char *ret)
{
	static const struct {
		const char *name;
		char c;
	} named[] = {{"&lt;", '<'}, {"&gt;", '>'}, {"&amp;", '&'}, {"&quot;", '"'}, {"&apos;", '\''}};
	for (size_t i = 0; i < sizeof named / sizeof named[0]; i++) {
		size_t nl = strlen(named[i].name);
		if (left >= nl && memcmp(p, named[i].name, nl) == 0) {
			*ret = named[i].c;
			return nl;
		}
	}
	if (left >= 4 && p[1] == '#') {
		unsigned v = 0;
		size_t i = 2;
		while (i < left && i < 6 && p[i] >= '0' && p[i] <= '9')
			v = v * 10 + (unsigned)(p[i++] - '0');
		if (i > 2 && i < left && p[i] == ';' && v > 0 && v < 128) {
			*ret = (char)v;
			return i + 1;
		}
	}
	return 0;
}

int bc_xml_text(const char *doc, size_t len, const char *path, unsigned index, char *out, size_t cap,
		const char **ret_reason)
{
	struct bc_xml_span sp;
	int err = bc_xml_find(doc, len, path, index, &sp, ret_reason);
	if (err < 0)
		return err;
	while (sp.len && is_space(sp.p[0])) {
		sp.p++;
		sp.len--;
	}
	while (sp.len && is_space(sp.p[sp.len - 1]))
		sp.len--;
	size_t o = 0;
	for (size_t i = 0; i < sp.len;) {
		char c = sp.p[i];
		if (c == '<') {
			*ret_reason = "XML element has child elements where text was expected";
			return -EBADMSG;
		}
		size_t used = 1;
		if (c == '&' && !(used = entity(sp.p + i, sp.len - i, &c))) {
			*ret_reason = "unknown XML entity";
			return -EBADMSG;
		}
		if (o + 1 >= cap) {
			*ret_reason = "XML text too long";
			return -ENAMETOOLONG;
		}
		out[o++] = c;
		i += used;
	}
	if (!cap) {
		*ret_reason = "XML text too long";
		return -ENAMETOOLONG;
	}
	out[o] = '\0';
	return 0;
}

int bc_xml_uint(const char *doc, size_t len, const char *path, unsigned long long *ret, const char **ret_reason)
{
	char buf[24];
	int err = bc_xml_text(doc, len, path, 0, buf, sizeof buf, ret_reason);
	if (err < 0)
		return err;
	if (!buf[0] || buf[0] < '0' || buf[0] > '9') {
		*ret_reason = "XML number expected";
		return -EINVAL;
	}
	char *end;
	errno = 0;
	unsigned long long v = strtoull(buf, &end, 10);
	if (*end || errno) {
		*ret_reason = "XML number expected";
		return -EINVAL;
	}
	*ret = v;
	return 0;
}

int bc_xml_escape(const char *s, char *out, size_t cap)
{
	size_t o = 0;
	for (; *s; s++) {
		const char *rep = NULL;
		switch (*s) {
		case '<':
			rep = "&lt;";
			break;
		case '>':
			rep = "&gt;";
			break;
		case '&':
			rep = "&amp;";
			break;
		case '"':
			rep = "&quot;";
			break;
		case '\'':
			rep = "&apos;";
			break;
		}
		size_t n = rep ? strlen(rep) : 1;
		if (o + n >= cap)
			return -ENOBUFS;
		memcpy(out + o, rep ? rep : s, n);
		o += n;
	}
	if (o >= cap)
		return -ENOBUFS;
	out[o] = '\0';
	return 0;
}
