/* RTSP replies, headers and URLs (see rtsp_msg.h). */
#include "rtsp_msg.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

bool rtsp_span_eq(struct rtsp_span s, const char *text)
{
	return strlen(text) == s.n && strncasecmp(s.p, text, s.n) == 0;
}

bool rtsp_span_prefix(struct rtsp_span s, const char *text)
{
	size_t n = strlen(text);
	return s.n >= n && strncasecmp(s.p, text, n) == 0;
}

int rtsp_span_copy(struct rtsp_span s, char *out, size_t cap)
{
	if (s.n >= cap)
		return -ENOBUFS;
	memcpy(out, s.p, s.n);
	out[s.n] = '\0';
	return 0;
}

static struct rtsp_span trim(const char *p, size_t n)
{
	while (n && (*p == ' ' || *p == '\t'))
		p++, n--;
	while (n && (p[n - 1] == ' ' || p[n - 1] == '\t' || p[n - 1] == '\r'))
		n--;
	return (struct rtsp_span){p, n};
}

/* The end of the head (after the empty line), or 0 when not there yet. Lines end in
 * CRLF or LF. */
static size_t head_end(const uint8_t *b, size_t len)
{
	for (size_t i = 0; i + 1 < len; i++) {
		if (b[i] != '\n')
			continue;
		if (b[i + 1] == '\n')
			return i + 2;
		if (b[i + 1] == '\r' && i + 2 < len && b[i + 2] == '\n')
			return i + 3;
	}
	return 0;
}

/* Parses header lines of head[0..n) (after the first line) into r; r->cseq and the body
 * length from them. */
static int headers(const char *p, size_t n, struct rtsp_reply *r, size_t *content_len, const char **ret_reason)
{
	*content_len = 0;
	size_t i = 0;
	while (i < n) {
		const char *nl = memchr(p + i, '\n', n - i);
		size_t e = nl ? (size_t)(nl - p) : n;
		struct rtsp_span line = trim(p + i, e - i);
		i = e + 1;
		if (line.n == 0)
			break;
		if (line.p[0] == ' ' || line.p[0] == '\t') {
			*ret_reason = "folded header line";
			return -EBADMSG;
		}
		const char *colon = memchr(line.p, ':', line.n);
		if (!colon || colon == line.p) {
			*ret_reason = "header line without a name and colon";
			return -EBADMSG;
		}
		if (r->n_headers == RTSP_MAX_HEADERS) {
			*ret_reason = "more headers than allowed";
			return -EMSGSIZE;
		}
		struct rtsp_span name = trim(line.p, (size_t)(colon - line.p));
		struct rtsp_span value = trim(colon + 1, line.n - (size_t)(colon + 1 - line.p));
		r->name[r->n_headers] = name;
		r->value[r->n_headers++] = value;
		if (rtsp_span_eq(name, "CSeq") || rtsp_span_eq(name, "Content-Length")) {
			unsigned long long v = 0;
			if (value.n == 0 || value.n > 9) {
				*ret_reason = "CSeq or Content-Length is not a number of at most 9 digits";
				return -EBADMSG;
			}
			for (size_t k = 0; k < value.n; k++) {
				if (value.p[k] < '0' || value.p[k] > '9') {
					*ret_reason = "CSeq or Content-Length is not a number";
					return -EBADMSG;
				}
				v = v * 10 + (unsigned)(value.p[k] - '0');
			}
			if (rtsp_span_eq(name, "CSeq"))
				r->cseq = (long)v;
			else if (v > RTSP_MAX_BODY) {
				*ret_reason = "body longer than allowed";
				return -EMSGSIZE;
			} else
				*content_len = (size_t)v;
		}
	}
	return 0;
}

static size_t skip_blank(const uint8_t *buf, size_t len)
{
	size_t s = 0;
	while (s < len && (buf[s] == '\r' || buf[s] == '\n'))
		s++;
	return s;
}

int rtsp_reply_parse(const uint8_t *buf, size_t len, struct rtsp_reply *r, size_t *used, const char **ret_reason)
{
	size_t s = skip_blank(buf, len);
	buf += s;
	len -= s;
	memset(r, 0, sizeof *r);
	r->cseq = -1;
	if (len >= 5 && memcmp(buf, "RTSP/", 5) != 0) {
		*ret_reason = "not an RTSP reply (no RTSP/ at the start)";
		return -EBADMSG;
	}
	size_t end = head_end(buf, len);
	if (!end) {
		if (len > RTSP_MAX_HEAD) {
			*ret_reason = "reply head longer than allowed";
			return -EMSGSIZE;
		}
		return -EAGAIN;
	}
	if (end > RTSP_MAX_HEAD) {
		*ret_reason = "reply head longer than allowed";
		return -EMSGSIZE;
	}
	const char *p = (const char *)buf;
	const char *nl = memchr(p, '\n', end);
	struct rtsp_span line = trim(p, (size_t)(nl - p));
	/* RTSP/1.0 200 OK (RTSP/2.0 of RFC 7826 reads the same way) */
	if (line.n < 12 || !(rtsp_span_prefix(line, "RTSP/1.0 ") || rtsp_span_prefix(line, "RTSP/2.0 ")) ||
	    line.p[9] < '1' || line.p[9] > '5' || line.p[10] < '0' || line.p[10] > '9' || line.p[11] < '0' ||
	    line.p[11] > '9' || (line.n > 12 && line.p[12] != ' ')) {
		*ret_reason = "malformed status line";
		return -EBADMSG;
	}
	r->status = (unsigned)((line.p[9] - '0') * 100 + (line.p[10] - '0') * 10 + (line.p[11] - '0'));
	r->reason = line.n > 13 ? trim(line.p + 13, line.n - 13) : (struct rtsp_span){"", 0};
	size_t body_len;
	size_t first = (size_t)(nl - p) + 1;
	int e = headers(p + first, end - first, r, &body_len, ret_reason);
	if (e < 0)
		return e;
	if (len - end < body_len)
		return -EAGAIN;
	r->body = p + end;
	r->body_len = body_len;
	*used = s + end + body_len;
	return 0;
}

int rtsp_request_skip(const uint8_t *buf, size_t len, size_t *used, const char **ret_reason)
{
	return rtsp_request_answer(buf, len, used, NULL, 0, ret_reason);
}

int rtsp_request_answer(const uint8_t *buf, size_t len, size_t *used, char *answer, size_t cap, const char **ret_reason)
{
	size_t s = skip_blank(buf, len);
	size_t end = head_end(buf + s, len - s);
	if (!end)
		return len - s > RTSP_MAX_HEAD ? (*ret_reason = "request head longer than allowed", -EMSGSIZE)
					       : -EAGAIN;
	if (end > RTSP_MAX_HEAD) {
		*ret_reason = "request head longer than allowed";
		return -EMSGSIZE;
	}
	const char *p = (const char *)buf + s;
	const char *nl = memchr(p, '\n', end);
	struct rtsp_reply r = {.cseq = -1};
	size_t body_len, first = (size_t)(nl - p) + 1;
	int e = headers(p + first, end - first, &r, &body_len, ret_reason);
	if (e < 0)
		return e;
	if (len - s - end < body_len)
		return -EAGAIN;
	*used = s + end + body_len;
	if (answer && cap) {
		answer[0] = '\0';
		size_t m = strcspn(p, " \r\n");
		struct rtsp_span method = {p, m};
		bool known = rtsp_span_eq(method, "OPTIONS") || rtsp_span_eq(method, "GET_PARAMETER") ||
			     rtsp_span_eq(method, "SET_PARAMETER");
		if (r.cseq >= 0)
			snprintf(answer, cap, "RTSP/1.0 %s\r\nCSeq: %ld\r\nUser-Agent: KeepPeek\r\n\r\n",
				 known ? "200 OK" : "501 Not Implemented", r.cseq);
	}
	return 0;
}

const struct rtsp_span *rtsp_reply_header(const struct rtsp_reply *r, const char *name, unsigned k)
{
	for (unsigned i = 0; i < r->n_headers; i++)
		if (rtsp_span_eq(r->name[i], name) && k-- == 0)
			return &r->value[i];
	return NULL;
}

/* The next ';'-separated parameter of s from *off, trimmed. */
static bool next_param(struct rtsp_span s, size_t *off, struct rtsp_span *ret)
{
	if (*off >= s.n)
		return false;
	const char *semi = memchr(s.p + *off, ';', s.n - *off);
	size_t e = semi ? (size_t)(semi - s.p) : s.n;
	*ret = trim(s.p + *off, e - *off);
	*off = e + 1;
	return true;
}

/* "a" or "a-b" of decimal numbers each <= max. */
static int number_pair(struct rtsp_span v, unsigned max, unsigned out[2])
{
	unsigned k = 0, val = 0;
	bool digit = false;
	for (size_t i = 0; i <= v.n; i++) {
		if (i == v.n || v.p[i] == '-') {
			if (!digit || k == 2)
				return -EBADMSG;
			out[k++] = val;
			val = 0;
			digit = false;
			continue;
		}
		if (v.p[i] < '0' || v.p[i] > '9')
			return -EBADMSG;
		val = val * 10 + (unsigned)(v.p[i] - '0');
		if (val > max)
			return -EBADMSG;
		digit = true;
	}
	if (k == 1)
		out[1] = out[0] + 1;
	return 0;
}

static int hexval(char c)
{
	return c >= '0' && c <= '9'   ? c - '0'
	       : c >= 'a' && c <= 'f' ? c - 'a' + 10
	       : c >= 'A' && c <= 'F' ? c - 'A' + 10
				      : -1;
}

int rtsp_transport_parse(struct rtsp_span s, struct rtsp_transport *t, const char **ret_reason)
{
	memset(t, 0, sizeof *t);
	const char *comma = memchr(s.p, ',', s.n); /* a server answers one; take the first */
	if (comma)
		s.n = (size_t)(comma - s.p);
	size_t off = 0;
	struct rtsp_span p;
	if (!next_param(s, &off, &p) || !rtsp_span_prefix(p, "RTP/AVP")) {
		*ret_reason = "Transport is not RTP/AVP";
		return -EBADMSG;
	}
	t->tcp = rtsp_span_eq(p, "RTP/AVP/TCP");
	while (next_param(s, &off, &p)) {
		const char *eq = memchr(p.p, '=', p.n);
		if (!eq)
			continue;
		struct rtsp_span k = trim(p.p, (size_t)(eq - p.p)), v = trim(eq + 1, p.n - (size_t)(eq + 1 - p.p));
		if (rtsp_span_eq(k, "interleaved")) {
			if (number_pair(v, 255, t->interleaved) < 0 || t->interleaved[1] > 255) {
				*ret_reason = "Transport interleaved= is not a channel pair of 0..255";
				return -EBADMSG;
			}
			t->have_interleaved = true;
		} else if (rtsp_span_eq(k, "server_port")) {
			if (number_pair(v, 65535, t->server_port) < 0 || t->server_port[1] > 65535) {
				*ret_reason = "Transport server_port= is not a port pair of 0..65535";
				return -EBADMSG;
			}
			/* server_port=0-1: old cameras send it (mediamtx#407, bluenviron/mediamtx
			 * issue 407); taken as no port: RTP is then accepted by source address only,
			 * and nothing is sent to the camera's port 0. */
			t->have_server_port = t->server_port[0] && t->server_port[1];
		} else if (rtsp_span_eq(k, "ssrc")) {
			/* Hikvision sends "ssrc= d6d6627" (retina 85b30bf, its testdata
			 * hikvision_setup_ssrc_space.txt): trimmed. One that is still not hex is
			 * ignored, as gortsplib does: the SSRC is locked from the first packet. */
			uint32_t x = 0;
			bool good = v.n >= 1 && v.n <= 8;
			for (size_t i = 0; good && i < v.n; i++) {
				int d = hexval(v.p[i]);
				good = d >= 0;
				x = x << 4 | (uint32_t)(d & 15);
			}
			t->ssrc = good ? x : 0;
			t->have_ssrc = good;
		}
	}
	return 0;
}

int rtsp_session_parse(struct rtsp_span s, char *id, size_t cap, unsigned *timeout_s, const char **ret_reason)
{
	size_t off = 0;
	struct rtsp_span p;
	*timeout_s = RTSP_TIMEOUT_DEF_S;
	if (!next_param(s, &off, &p) || p.n == 0) {
		*ret_reason = "empty Session header";
		return -EBADMSG;
	}
	if (p.n >= cap || p.n >= RTSP_MAX_SESSION) {
		*ret_reason = "Session id longer than allowed";
		return -EMSGSIZE;
	}
	for (size_t i = 0; i < p.n; i++)
		if ((unsigned char)p.p[i] <= ' ' || (unsigned char)p.p[i] >= 127) {
			*ret_reason = "Session id with a control or non-ASCII byte";
			return -EBADMSG;
		}
	rtsp_span_copy(p, id, cap);
	while (next_param(s, &off, &p)) {
		if (!rtsp_span_prefix(p, "timeout="))
			continue;
		unsigned long v = 0;
		size_t i = 8;
		for (; i < p.n && p.p[i] >= '0' && p.p[i] <= '9' && v <= RTSP_TIMEOUT_MAX_S; i++)
			v = v * 10 + (unsigned long)(p.p[i] - '0');
		if (i == 8) {
			*ret_reason = "Session timeout= is not a number";
			return -EBADMSG;
		}
		*timeout_s = v < RTSP_TIMEOUT_MIN_S   ? RTSP_TIMEOUT_MIN_S
			     : v > RTSP_TIMEOUT_MAX_S ? RTSP_TIMEOUT_MAX_S
						      : (unsigned)v;
	}
	return 0;
}

static int pct_decode(const char *p, size_t n, char *out, size_t cap)
{
	size_t o = 0;
	for (size_t i = 0; i < n; i++) {
		char c = p[i];
		if (c == '%') {
			if (n - i < 3)
				return -EBADMSG;
			int hi = hexval(p[i + 1]), lo = hexval(p[i + 2]);
			if (hi < 0 || lo < 0)
				return -EBADMSG;
			c = (char)(hi << 4 | lo);
			i += 2;
		}
		if (c == '\0' || o + 1 >= cap)
			return -EBADMSG;
		out[o++] = c;
	}
	out[o] = '\0';
	return 0;
}

int rtsp_url_parse(const char *url, struct rtsp_url *u, const char **ret_reason)
{
	memset(u, 0, sizeof *u);
	const char *p;
	if (!strncasecmp(url, "rtsp://", 7)) {
		p = url + 7;
		u->port = 554;
	} else if (!strncasecmp(url, "rtsps://", 8)) {
		p = url + 8;
		u->tls = true;
		u->port = 322; /* RFC 7826 22.14 */
	} else {
		*ret_reason = "URL is neither rtsp:// nor rtsps://";
		return -EINVAL;
	}
	size_t auth_end = strcspn(p, "/?#");
	const char *at = NULL;
	for (size_t i = 0; i < auth_end; i++)
		if (p[i] == '@')
			at = p + i; /* the last @ before the path: a password may hold one */
	const char *host = p;
	if (at) {
		const char *colon = memchr(p, ':', (size_t)(at - p));
		size_t ulen = colon ? (size_t)(colon - p) : (size_t)(at - p);
		if (pct_decode(p, ulen, u->user, sizeof u->user) < 0 ||
		    (colon && pct_decode(colon + 1, (size_t)(at - colon - 1), u->pass, sizeof u->pass) < 0)) {
			*ret_reason = "URL user or password is too long or badly percent-encoded";
			return -EINVAL;
		}
		u->have_user = true;
		host = at + 1;
	}
	size_t hlen = (size_t)(p + auth_end - host);
	const char *port = NULL;
	if (hlen && host[0] == '[') {
		const char *close = memchr(host, ']', hlen);
		if (!close || (close + 1 < host + hlen && close[1] != ':')) {
			*ret_reason = "URL has a malformed [IPv6] host";
			return -EINVAL;
		}
		if ((size_t)(close - host - 1) >= sizeof u->host) {
			*ret_reason = "URL host too long";
			return -EINVAL;
		}
		memcpy(u->host, host + 1, (size_t)(close - host - 1));
		port = close + 1 < host + hlen ? close + 2 : NULL;
	} else {
		const char *colon = memchr(host, ':', hlen);
		size_t n = colon ? (size_t)(colon - host) : hlen;
		if (n >= sizeof u->host) {
			*ret_reason = "URL host too long";
			return -EINVAL;
		}
		memcpy(u->host, host, n);
		port = colon ? colon + 1 : NULL;
	}
	if (!u->host[0]) {
		*ret_reason = "URL without a host";
		return -EINVAL;
	}
	if (port) {
		unsigned v = 0;
		const char *e = p + auth_end;
		if (port == e) {
			*ret_reason = "URL port is empty";
			return -EINVAL;
		}
		for (const char *q = port; q < e; q++) {
			if (*q < '0' || *q > '9' || (v = v * 10 + (unsigned)(*q - '0')) > 65535) {
				*ret_reason = "URL port is not a number of 1..65535";
				return -EINVAL;
			}
		}
		if (!v) {
			*ret_reason = "URL port is not a number of 1..65535";
			return -EINVAL;
		}
		u->port = (uint16_t)v;
	}
	int n = snprintf(u->uri, sizeof u->uri, "%.*s%s", (int)(p - url), url, at ? at + 1 : p);
	if (n < 0 || (size_t)n >= sizeof u->uri) {
		*ret_reason = "URL too long";
		return -EINVAL;
	}
	for (const char *q = u->uri; *q; q++)
		if ((unsigned char)*q <= ' ' || *q == 127) {
			*ret_reason = "URL with a space or control byte";
			return -EINVAL;
		}
	return 0;
}

static bool has_scheme(const char *u)
{
	return !strncasecmp(u, "rtsp://", 7) || !strncasecmp(u, "rtsps://", 8);
}

int rtsp_base_fixup(const char *req, const char *base, char *out, size_t cap)
{
	int n;
	int ret = 1;
	size_t scheme = !strncasecmp(req, "rtsps://", 8) ? 8 : 7;
	if (has_scheme(base)) {
		n = snprintf(out, cap, "%s", base);
		ret = 0;
	} else if (base[0] == '/') {
		size_t auth = scheme + strcspn(req + scheme, "/?#");
		n = snprintf(out, cap, "%.*s%s", (int)auth, req, base);
	} else
		n = snprintf(out, cap, "%.*s%s", (int)scheme, req, base);
	if (n < 0 || (size_t)n >= cap)
		return -ENOBUFS;
	struct rtsp_url u;
	const char *why;
	if (rtsp_url_parse(out, &u, &why) < 0 || u.have_user) {
		n = snprintf(out, cap, "%s", req);
		return n < 0 || (size_t)n >= cap ? -ENOBUFS : -EINVAL;
	}
	return ret;
}

int rtsp_url_resolve(const char *base, const char *control, char *out, size_t cap)
{
	int n;
	if (!control[0] || !strcmp(control, "*"))
		n = snprintf(out, cap, "%s", base);
	else if (!strncasecmp(control, "rtsp://", 7) || !strncasecmp(control, "rtsps://", 8))
		n = snprintf(out, cap, "%s", control);
	else if (control[0] == '/' && has_scheme(base)) {
		/* an absolute path replaces the base's (RFC 3986 5.2.2) */
		size_t scheme = !strncasecmp(base, "rtsps://", 8) ? 8 : 7;
		size_t auth = scheme + strcspn(base + scheme, "/?#");
		n = snprintf(out, cap, "%.*s%s", (int)auth, base, control);
	} else {
		size_t b = strlen(base);
		bool slash = (b && base[b - 1] == '/') || control[0] == '/';
		n = snprintf(out, cap, "%s%s%s", base, slash ? "" : "/",
			     b && base[b - 1] == '/' && control[0] == '/' ? control + 1 : control);
	}
	return n < 0 || (size_t)n >= cap ? -ENOBUFS : 0;
}
