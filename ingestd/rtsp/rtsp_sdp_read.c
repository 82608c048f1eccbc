/* Reading a camera's SDP (see rtsp_sdp_read.h). */
#include "rtsp_sdp_read.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

/* Copies n bytes as a string; -EMSGSIZE when it does not fit. */
static int copy(char *out, size_t cap, const char *p, size_t n, const char *what, const char **ret_reason)
{
	if (n >= cap) {
		*ret_reason = what;
		return -EMSGSIZE;
	}
	memcpy(out, p, n);
	out[n] = '\0';
	return 0;
}

static bool number(const char **p, const char *e, unsigned long max, unsigned long *ret)
{
	unsigned long v = 0;
	const char *s = *p;
	while (*p < e && **p >= '0' && **p <= '9') {
		v = v * 10 + (unsigned long)(**p - '0');
		if (v > max)
			return false;
		(*p)++;
	}
	*ret = v;
	return *p > s;
}

/* m=<media> <port> <proto> <fmt> ... */
static int media_line(struct sdp_media *m, const char *p, const char *e, const char **ret_reason)
{
	const char *sp = memchr(p, ' ', (size_t)(e - p));
	if (!sp || copy(m->type, sizeof m->type, p, (size_t)(sp - p), "m= media type too long", ret_reason) < 0) {
		*ret_reason = "malformed m= line";
		return -EBADMSG;
	}
	p = sp + 1;
	for (int field = 0; field < 2; field++) { /* port, proto */
		sp = memchr(p, ' ', (size_t)(e - p));
		if (!sp) {
			*ret_reason = "m= line without a payload type";
			return -EBADMSG;
		}
		p = sp + 1;
	}
	unsigned long pt;
	if (!number(&p, e, 127, &pt)) {
		*ret_reason = "m= payload type is not a number of 0..127";
		return -EBADMSG;
	}
	m->pt = (uint8_t)pt;
	m->channels = 1;
	if (pt == 0 || pt == 8) { /* RFC 3551 6, table 4 */
		snprintf(m->encoding, sizeof m->encoding, "%s", pt == 0 ? "PCMU" : "PCMA");
		m->clock = 8000;
	}
	return 0;
}

/* a=rtpmap:<pt> <encoding>/<clock>[/<channels>] for the media's payload type. */
static int rtpmap(struct sdp_media *m, const char *p, const char *e, const char **ret_reason)
{
	unsigned long pt, clock, ch = 1;
	if (!number(&p, e, 127, &pt) || p == e || *p != ' ') {
		*ret_reason = "malformed a=rtpmap";
		return -EBADMSG;
	}
	if (pt != m->pt)
		return 0;
	p++;
	const char *slash = memchr(p, '/', (size_t)(e - p));
	if (!slash || copy(m->encoding, sizeof m->encoding, p, (size_t)(slash - p), "a=rtpmap encoding too long",
			   ret_reason) < 0) {
		*ret_reason = "malformed a=rtpmap (encoding/clock)";
		return -EBADMSG;
	}
	p = slash + 1;
	if (!number(&p, e, 1000000, &clock) || clock == 0) {
		*ret_reason = "a=rtpmap clock rate is not a number of 1..1000000";
		return -EBADMSG;
	}
	if (p < e && *p == '/') {
		p++;
		if (!number(&p, e, 8, &ch) || ch == 0) {
			*ret_reason = "a=rtpmap channels is not a number of 1..8";
			return -EBADMSG;
		}
	}
	m->clock = (uint32_t)clock;
	m->channels = (unsigned)ch;
	return 0;
}

int sdp_read(const char *text, size_t len, struct sdp_session *s, const char **ret_reason)
{
	memset(s, 0, sizeof *s);
	const char *p = text, *end = text + len;
	struct sdp_media *m = NULL;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *e = nl ? nl : end;
		const char *next = nl ? nl + 1 : end;
		if (e > p && e[-1] == '\r')
			e--;
		if (e - p < 2 || p[1] != '=') {
			p = next;
			continue;
		}
		char type = p[0];
		const char *v = p + 2;
		int r = 0;
		if (type == 'm') {
			if (s->n_media == SDP_MAX_MEDIA) {
				*ret_reason = "more media in the SDP than allowed";
				return -EMSGSIZE;
			}
			m = &s->media[s->n_media++];
			r = media_line(m, v, e, ret_reason);
		} else if (type == 'a') {
			size_t n = (size_t)(e - v);
			char *ctl = m ? m->control : s->control;
			if (n >= 8 && !strncasecmp(v, "control:", 8))
				r = copy(ctl, SDP_MAX_CONTROL, v + 8, n - 8, "a=control longer than allowed",
					 ret_reason);
			else if (m && n >= 7 && !strncasecmp(v, "rtpmap:", 7))
				r = rtpmap(m, v + 7, e, ret_reason);
			else if (m && n >= 5 && !strncasecmp(v, "fmtp:", 5)) {
				const char *q = v + 5;
				unsigned long pt;
				if (number(&q, e, 127, &pt) && pt == m->pt) {
					while (q < e && *q == ' ')
						q++;
					r = copy(m->fmtp, sizeof m->fmtp, q, (size_t)(e - q),
						 "a=fmtp longer than allowed", ret_reason);
				}
			} else if (m && n >= 10 && !strncasecmp(v, "framerate:", 10)) {
				const char *q = v + 10;
				unsigned long fps;
				if (number(&q, e, 1000, &fps))
					m->fps = (unsigned)fps;
			}
		}
		if (r < 0)
			return r;
		p = next;
	}
	if (!s->n_media) {
		*ret_reason = "SDP without a media (m=) line";
		return -EBADMSG;
	}
	return 0;
}

int sdp_fmtp_get(const char *fmtp, const char *key, char *out, size_t cap)
{
	size_t klen = strlen(key);
	const char *p = fmtp;
	while (*p) {
		while (*p == ' ' || *p == ';')
			p++;
		const char *e = p + strcspn(p, ";");
		const char *eq = memchr(p, '=', (size_t)(e - p));
		if (eq) {
			const char *k = p, *ke = eq;
			while (ke > k && ke[-1] == ' ')
				ke--;
			if ((size_t)(ke - k) == klen && !strncasecmp(k, key, klen)) {
				const char *v = eq + 1;
				while (v < e && *v == ' ')
					v++;
				const char *ve = e;
				while (ve > v && (ve[-1] == ' ' || ve[-1] == '\r'))
					ve--;
				if ((size_t)(ve - v) >= cap)
					return -ENOBUFS;
				memcpy(out, v, (size_t)(ve - v));
				out[ve - v] = '\0';
				return 0;
			}
		}
		p = e;
	}
	return -ENOENT;
}

static int b64val(char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+' || c == '-')
		return 62;
	if (c == '/' || c == '_')
		return 63;
	return -1;
}

long sdp_base64_decode(const char *in, size_t n, uint8_t *out, size_t cap)
{
	while (n && in[n - 1] == '=')
		n--;
	if (n % 4 == 1)
		return -EBADMSG;
	size_t o = 0;
	uint32_t acc = 0;
	unsigned bits = 0;
	for (size_t i = 0; i < n; i++) {
		int v = b64val(in[i]);
		if (v < 0)
			return -EBADMSG;
		acc = acc << 6 | (uint32_t)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			if (o == cap)
				return -ENOBUFS;
			out[o++] = (uint8_t)(acc >> bits);
		}
	}
	return (long)o;
}

long sdp_hex_decode(const char *in, uint8_t *out, size_t cap)
{
	size_t n = strlen(in), o = 0;
	if (n % 2)
		return -EBADMSG;
	for (size_t i = 0; i < n; i += 2) {
		int v[2];
		for (int k = 0; k < 2; k++) {
			char c = in[i + (size_t)k];
			v[k] = c >= '0' && c <= '9'   ? c - '0'
			       : c >= 'a' && c <= 'f' ? c - 'a' + 10
			       : c >= 'A' && c <= 'F' ? c - 'A' + 10
						      : -1;
			if (v[k] < 0)
				return -EBADMSG;
		}
		if (o == cap)
			return -ENOBUFS;
		out[o++] = (uint8_t)(v[0] << 4 | v[1]);
	}
	return (long)o;
}
