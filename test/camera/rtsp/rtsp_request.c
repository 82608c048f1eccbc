/* RTSP/1.0 request, Digest Authorization and Transport parsing (pure, no I/O). */
#include <errno.h>
#include <string.h>
#include <strings.h>

#include "rtsp_request.h"

bool rtsp_str_eq(struct rtsp_str s, const char *lit)
{
	return s.n == strlen(lit) && strncasecmp(s.p, lit, s.n) == 0;
}

static bool is_tchar(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       strchr("!#$%&'*+-.^_`|~", c);
}

static bool is_ws(char c)
{
	return c == ' ' || c == '\t';
}

static struct rtsp_str trim(const char *p, size_t n)
{
	while (n && is_ws(*p)) {
		p++;
		n--;
	}
	while (n && is_ws(p[n - 1]))
		n--;
	return (struct rtsp_str){p, n};
}

/* Parses 1..9 decimal digits. */
static int parse_uint(struct rtsp_str s, uint32_t *ret)
{
	if (s.n == 0 || s.n > 9)
		return -EBADMSG;
	uint32_t v = 0;
	for (size_t i = 0; i < s.n; i++) {
		if (s.p[i] < '0' || s.p[i] > '9')
			return -EBADMSG;
		v = v * 10 + (uint32_t)(s.p[i] - '0');
	}
	*ret = v;
	return 0;
}

static int parse_request_line(const char *p, size_t n, struct rtsp_request *r, const char **ret_reason)
{
	const char *sp1 = memchr(p, ' ', n);
	if (!sp1 || sp1 == p) {
		*ret_reason = "request line without a method";
		return -EBADMSG;
	}
	size_t mlen = (size_t)(sp1 - p);
	if (mlen > RTSP_MAX_METHOD) {
		*ret_reason = "method name too long";
		return -EBADMSG;
	}
	for (size_t i = 0; i < mlen; i++) {
		if (!((p[i] >= 'A' && p[i] <= 'Z') || p[i] == '_')) {
			*ret_reason = "method name is not upper-case letters";
			return -EBADMSG;
		}
	}
	const char *uri = sp1 + 1, *end = p + n;
	const char *sp2 = memchr(uri, ' ', (size_t)(end - uri));
	if (!sp2 || sp2 == uri) {
		*ret_reason = "request line without a URI and version";
		return -EBADMSG;
	}
	for (const char *c = uri; c < sp2; c++) {
		if ((unsigned char)*c <= ' ' || *c == 0x7f) {
			*ret_reason = "control character in the request URI";
			return -EBADMSG;
		}
	}
	struct rtsp_str version = {sp2 + 1, (size_t)(end - sp2 - 1)};
	if (version.n != 8 || memcmp(version.p, "RTSP/1.0", 8) != 0) {
		*ret_reason = "protocol version is not RTSP/1.0";
		return -EPROTONOSUPPORT;
	}
	memcpy(r->method, p, mlen);
	r->method[mlen] = '\0';
	r->uri = (struct rtsp_str){uri, (size_t)(sp2 - uri)};
	return 0;
}

static int parse_header_line(const char *p, size_t n, struct rtsp_request *r, const char **ret_reason)
{
	if (is_ws(p[0])) {
		*ret_reason = "folded header line";
		return -EBADMSG;
	}
	const char *colon = memchr(p, ':', n);
	if (!colon) {
		*ret_reason = "header line without a colon";
		return -EBADMSG;
	}
	if (colon == p) {
		*ret_reason = "header with an empty name";
		return -EBADMSG;
	}
	for (const char *c = p; c < colon; c++) {
		if (!is_tchar(*c)) {
			*ret_reason = "invalid character in a header name";
			return -EBADMSG;
		}
	}
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)p[i];
		if ((c < ' ' && c != '\t') || c == 0x7f) {
			*ret_reason = "control character in a header";
			return -EBADMSG;
		}
	}
	if (r->n_headers == RTSP_MAX_HEADERS) {
		*ret_reason = "more than 100 headers";
		return -E2BIG;
	}
	r->headers[r->n_headers++] = (struct rtsp_header){
	    .name = {p, (size_t)(colon - p)},
	    .value = trim(colon + 1, n - (size_t)(colon + 1 - p)),
	};
	return 0;
}

const struct rtsp_str *rtsp_request_header(const struct rtsp_request *r, const char *name)
{
	for (size_t i = 0; i < r->n_headers; i++)
		if (rtsp_str_eq(r->headers[i].name, name))
			return &r->headers[i].value;
	return NULL;
}

/* Checks CSeq and Content-Length once the header block is complete. */
static int check_headers(struct rtsp_request *r, const char **ret_reason)
{
	bool have_cseq = false, have_length = false;
	for (size_t i = 0; i < r->n_headers; i++) {
		const struct rtsp_header *h = &r->headers[i];
		if (rtsp_str_eq(h->name, "CSeq")) {
			if (have_cseq) {
				*ret_reason = "duplicate CSeq";
				return -EBADMSG;
			}
			if (parse_uint(h->value, &r->cseq) < 0) {
				*ret_reason = "CSeq is not a number";
				return -EBADMSG;
			}
			have_cseq = true;
		} else if (rtsp_str_eq(h->name, "Content-Length")) {
			uint32_t v;
			if (have_length || parse_uint(h->value, &v) < 0) {
				*ret_reason = "bad or duplicate Content-Length";
				return -EBADMSG;
			}
			if (v > RTSP_MAX_BODY) {
				*ret_reason = "body longer than 8 KiB";
				return -EMSGSIZE;
			}
			r->body_len = v;
			have_length = true;
		}
	}
	if (!have_cseq) {
		*ret_reason = "request without CSeq";
		return -EBADMSG;
	}
	return 0;
}

int rtsp_request_parse(const uint8_t *buf, size_t len, struct rtsp_request *ret, size_t *ret_consumed,
		       const char **ret_reason)
{
	const char *s = (const char *)buf;
	size_t pos = 0;
	while (pos < len && (s[pos] == '\r' || s[pos] == '\n') && pos < RTSP_MAX_LINE)
		pos++; /* blank lines between requests */
	size_t start = pos;
	ret->n_headers = 0;
	ret->body_len = 0;
	bool first = true;
	for (;;) {
		size_t avail = len - pos;
		const char *nl = memchr(s + pos, '\n', avail < RTSP_MAX_LINE + 2 ? avail : RTSP_MAX_LINE + 2);
		if (!nl) {
			if (avail >= RTSP_MAX_LINE + 2) {
				*ret_reason = "line longer than 8 KiB";
				return -EMSGSIZE;
			}
			if (pos - start + avail > RTSP_MAX_HEADER_BYTES) {
				*ret_reason = "header block longer than 64 KiB";
				return -EMSGSIZE;
			}
			return -EAGAIN;
		}
		size_t n = (size_t)(nl - (s + pos));
		size_t next = pos + n + 1;
		if (n && s[pos + n - 1] == '\r')
			n--;
		if (n > RTSP_MAX_LINE) {
			*ret_reason = "line longer than 8 KiB";
			return -EMSGSIZE;
		}
		if (next - start > RTSP_MAX_HEADER_BYTES) {
			*ret_reason = "header block longer than 64 KiB";
			return -EMSGSIZE;
		}
		int r;
		if (first) {
			r = parse_request_line(s + pos, n, ret, ret_reason);
			first = false;
		} else if (n == 0) {
			r = check_headers(ret, ret_reason);
			if (r < 0)
				return r;
			if (len - next < ret->body_len)
				return -EAGAIN;
			*ret_consumed = next + ret->body_len;
			return 0;
		} else {
			r = parse_header_line(s + pos, n, ret, ret_reason);
		}
		if (r < 0)
			return r;
		pos = next;
	}
}

/* ---- Authorization: Digest ---- */

static bool is_hex(struct rtsp_str s, size_t n)
{
	if (s.n != n)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!strchr("0123456789abcdefABCDEF", s.p[i]))
			return false;
	return true;
}

static struct rtsp_str *digest_field(struct rtsp_digest *d, struct rtsp_str name)
{
	static const struct {
		const char *name;
		size_t off;
	} fields[] = {
	    {"username", offsetof(struct rtsp_digest, username)},
	    {"realm", offsetof(struct rtsp_digest, realm)},
	    {"nonce", offsetof(struct rtsp_digest, nonce)},
	    {"uri", offsetof(struct rtsp_digest, uri)},
	    {"response", offsetof(struct rtsp_digest, response)},
	    {"qop", offsetof(struct rtsp_digest, qop)},
	    {"nc", offsetof(struct rtsp_digest, nc)},
	    {"cnonce", offsetof(struct rtsp_digest, cnonce)},
	    {"algorithm", offsetof(struct rtsp_digest, algorithm)},
	};
	for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++)
		if (rtsp_str_eq(name, fields[i].name))
			return (struct rtsp_str *)((char *)d + fields[i].off);
	return NULL;
}

int rtsp_digest_parse(struct rtsp_str value, struct rtsp_digest *ret, const char **ret_reason)
{
	struct rtsp_digest d = {0};
	const char *p = value.p, *end = value.p + value.n;
	while (p < end && is_ws(*p))
		p++;
	if (end - p < 7 || strncasecmp(p, "Digest", 6) != 0 || !is_ws(p[6])) {
		*ret_reason = "authorization scheme is not Digest";
		return -EPROTONOSUPPORT;
	}
	p += 7;
	for (;;) {
		while (p < end && (is_ws(*p) || *p == ','))
			p++;
		if (p == end)
			break;
		const char *name = p;
		while (p < end && is_tchar(*p))
			p++;
		struct rtsp_str key = {name, (size_t)(p - name)};
		while (p < end && is_ws(*p))
			p++;
		if (key.n == 0 || p == end || *p != '=') {
			*ret_reason = "digest field without '='";
			return -EBADMSG;
		}
		p++;
		while (p < end && is_ws(*p))
			p++;
		struct rtsp_str val;
		if (p < end && *p == '"') {
			const char *v = ++p;
			while (p < end && *p != '"') {
				if (*p == '\\' && p + 1 < end)
					p++;
				p++;
			}
			if (p == end) {
				*ret_reason = "unterminated quoted string in digest";
				return -EBADMSG;
			}
			val = (struct rtsp_str){v, (size_t)(p - v)};
			p++;
		} else {
			const char *v = p;
			while (p < end && *p != ',' && !is_ws(*p))
				p++;
			val = (struct rtsp_str){v, (size_t)(p - v)};
		}
		struct rtsp_str *slot = digest_field(&d, key);
		if (slot) {
			if (slot->p) {
				*ret_reason = "duplicate digest field";
				return -EBADMSG;
			}
			*slot = val;
		}
	}
	if (!d.username.p || !d.realm.p || !d.nonce.p || !d.uri.p || !d.response.p) {
		*ret_reason = "digest lacks username, realm, nonce, uri or response";
		return -EBADMSG;
	}
	if (!is_hex(d.response, 32)) {
		*ret_reason = "digest response is not 32 hex digits";
		return -EBADMSG;
	}
	if (d.algorithm.p && !rtsp_str_eq(d.algorithm, "MD5")) {
		*ret_reason = "digest algorithm is not MD5";
		return -EPROTONOSUPPORT;
	}
	if (d.qop.p) {
		if (!rtsp_str_eq(d.qop, "auth")) {
			*ret_reason = "digest qop is not auth";
			return -EPROTONOSUPPORT;
		}
		if (!is_hex(d.nc, 8) || !d.cnonce.p || d.cnonce.n == 0) {
			*ret_reason = "digest qop=auth without nc or cnonce";
			return -EBADMSG;
		}
	}
	*ret = d;
	return 0;
}

/* ---- Transport ---- */

static int parse_channel(const char **p, const char *end, unsigned *ret)
{
	unsigned v = 0, digits = 0;
	while (*p < end && **p >= '0' && **p <= '9' && digits < 4) {
		v = v * 10 + (unsigned)(**p - '0');
		(*p)++;
		digits++;
	}
	if (!digits || v > 255)
		return -EBADMSG;
	*ret = v;
	return 0;
}

static int parse_port(const char **p, const char *end, unsigned *ret)
{
	unsigned v = 0, digits = 0;
	while (*p < end && **p >= '0' && **p <= '9' && digits < 5) {
		v = v * 10 + (unsigned)(**p - '0');
		(*p)++;
		digits++;
	}
	if (!digits || v == 0 || v > 65535)
		return -EBADMSG;
	*ret = v;
	return 0;
}

/* "a" or "a-b" at *p: channels (max 255) or ports. */
static int parse_pair(const char *q, const char *qe, bool ports, unsigned *a, unsigned *b)
{
	if ((ports ? parse_port(&q, qe, a) : parse_channel(&q, qe, a)) < 0)
		return -EBADMSG;
	*b = *a + 1;
	if (q < qe && *q == '-') {
		q++;
		if ((ports ? parse_port(&q, qe, b) : parse_channel(&q, qe, b)) < 0)
			return -EBADMSG;
	}
	if (q != qe || *b > (ports ? 65535u : 255u) || *a == *b)
		return -EBADMSG;
	return 0;
}

/* One transport-spec (RFC 2326 12.39) into t, unless t already has one of its kind. */
static int parse_spec(const char *p, const char *end, struct rtsp_transport *t, const char **ret_reason)
{
	bool first = true, tcp = false, udp = false, multicast = false, have_ports = false;
	unsigned a = 0, b = 1, pa = 0, pb = 0;
	for (;;) {
		const char *semi = memchr(p, ';', (size_t)(end - p));
		if (!semi)
			semi = end;
		struct rtsp_str param = trim(p, (size_t)(semi - p));
		if (first) {
			if (param.n == 0) {
				*ret_reason = "empty transport specification";
				return -EBADMSG;
			}
			tcp = rtsp_str_eq(param, "RTP/AVP/TCP");
			udp = rtsp_str_eq(param, "RTP/AVP") || rtsp_str_eq(param, "RTP/AVP/UDP");
			first = false;
		} else if (rtsp_str_eq(param, "multicast")) {
			multicast = true;
		} else if (param.n > 12 && strncasecmp(param.p, "interleaved=", 12) == 0) {
			if (parse_pair(param.p + 12, param.p + param.n, false, &a, &b) < 0) {
				*ret_reason = "bad interleaved channels";
				return -EBADMSG;
			}
		} else if (param.n > 12 && strncasecmp(param.p, "client_port=", 12) == 0) {
			if (parse_pair(param.p + 12, param.p + param.n, true, &pa, &pb) < 0) {
				*ret_reason = "bad client_port";
				return -EBADMSG;
			}
			have_ports = true;
		}
		if (semi == end)
			break;
		p = semi + 1;
	}
	if (multicast)
		return 0;
	if (tcp && !t->tcp) {
		t->tcp = true;
		t->interleaved[0] = (uint8_t)a;
		t->interleaved[1] = (uint8_t)b;
	}
	if (udp && have_ports && !t->udp) {
		t->udp = true;
		t->udp_first = !t->tcp;
		t->client_port[0] = (uint16_t)pa;
		t->client_port[1] = (uint16_t)pb;
	}
	return 0;
}

int rtsp_transport_parse(struct rtsp_str value, struct rtsp_transport *ret, const char **ret_reason)
{
	struct rtsp_transport t = {0};
	const char *p = value.p, *end = value.p + value.n;
	if (trim(p, value.n).n == 0) {
		*ret_reason = "empty Transport header";
		return -EBADMSG;
	}
	for (;;) {
		const char *comma = memchr(p, ',', (size_t)(end - p));
		if (!comma)
			comma = end;
		int r = parse_spec(p, comma, &t, ret_reason);
		if (r < 0)
			return r;
		if (comma == end)
			break;
		p = comma + 1;
	}
	*ret = t;
	return 0;
}
