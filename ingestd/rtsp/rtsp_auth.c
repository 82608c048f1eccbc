/* RTSP Basic and Digest authentication (see rtsp_auth.h). */
#include "rtsp_auth.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include <openssl/evp.h>

void rtsp_md5_hex(const void *p, size_t n, char out[33])
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned len = 0;
	if (!EVP_Digest(p, n, md, &len, EVP_md5(), NULL) || len != 16)
		memset(md, 0, 16); /* cannot happen with the default provider; the camera refuses it */
	for (int i = 0; i < 16; i++)
		snprintf(out + 2 * i, 3, "%02x", md[i]);
}

/* One auth-param (name=value or name="quoted") of v from *off: 1, 2 for a token
 * without a value, 0 at the end. Quoted values are unescaped into val. */
static int next_param(struct rtsp_span v, size_t *off, struct rtsp_span *name, char *val, size_t cap,
		      const char **ret_reason)
{
	while (*off < v.n && (v.p[*off] == ' ' || v.p[*off] == ',' || v.p[*off] == '\t'))
		(*off)++;
	if (*off >= v.n)
		return 0;
	size_t s = *off;
	while (*off < v.n && v.p[*off] != '=' && v.p[*off] != ' ' && v.p[*off] != ',')
		(*off)++;
	*name = (struct rtsp_span){v.p + s, *off - s};
	while (*off < v.n && v.p[*off] == ' ')
		(*off)++;
	if (*off >= v.n || v.p[*off] != '=') {
		/* a token without a value ("stale", a stray word): skipped, as curl and
		 * libavformat do */
		val[0] = '\0';
		return 2;
	}
	(*off)++;
	while (*off < v.n && v.p[*off] == ' ')
		(*off)++;
	size_t o = 0;
	if (*off < v.n && v.p[*off] == '"') {
		(*off)++;
		for (;;) {
			if (*off >= v.n) {
				*ret_reason = "WWW-Authenticate quoted value without its closing quote";
				return -EBADMSG;
			}
			char c = v.p[(*off)++];
			if (c == '"')
				break;
			if (c == '\\' && *off < v.n)
				c = v.p[(*off)++];
			if (o + 1 >= cap) {
				*ret_reason = "WWW-Authenticate value longer than allowed";
				return -EMSGSIZE;
			}
			val[o++] = c;
		}
	} else {
		while (*off < v.n && v.p[*off] != ',' && v.p[*off] != ' ') {
			if (o + 1 >= cap) {
				*ret_reason = "WWW-Authenticate value longer than allowed";
				return -EMSGSIZE;
			}
			val[o++] = v.p[(*off)++];
		}
	}
	val[o] = '\0';
	return 1;
}

static bool printable(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < ' ' || *s == 127 || *s == '"' || *s == '\\')
			return false;
	return true;
}

int rtsp_auth_challenge(struct rtsp_auth *a, struct rtsp_span value, const char **ret_reason)
{
	if (rtsp_span_prefix(value, "Basic") && (value.n == 5 || value.p[5] == ' ')) {
		if (a->kind == RTSP_AUTH_NONE)
			a->kind = RTSP_AUTH_BASIC;
		return 0;
	}
	if (!rtsp_span_prefix(value, "Digest ")) {
		*ret_reason = "WWW-Authenticate names a scheme other than Basic and Digest";
		return -ENOTSUP;
	}
	struct rtsp_auth d = {.kind = RTSP_AUTH_DIGEST};
	size_t off = 7;
	struct rtsp_span name;
	char val[RTSP_AUTH_MAX_FIELD];
	int r;
	bool have_nonce = false;
	while ((r = next_param(value, &off, &name, val, sizeof val, ret_reason)) > 0) {
		if (r == 2)
			continue;
		if (rtsp_span_eq(name, "realm"))
			memcpy(d.realm, val, sizeof val);
		else if (rtsp_span_eq(name, "nonce")) {
			memcpy(d.nonce, val, sizeof val);
			have_nonce = true;
		} else if (rtsp_span_eq(name, "opaque")) {
			memcpy(d.opaque, val, sizeof val);
			d.have_opaque = true;
		} else if (rtsp_span_eq(name, "algorithm") && strcasecmp(val, "MD5") != 0) {
			*ret_reason = "Digest algorithm other than MD5";
			return -ENOTSUP;
		} else if (rtsp_span_eq(name, "qop")) {
			/* a list: "auth,auth-int"; we answer auth. strtok_r: stream threads parse
			 * challenges at once (strtok's state is the process's). */
			char *save = NULL;
			for (char *t = strtok_r(val, ", ", &save); t; t = strtok_r(NULL, ", ", &save))
				if (!strcasecmp(t, "auth"))
					d.qop_auth = true;
		}
	}
	if (r < 0)
		return r;
	if (!have_nonce || !d.nonce[0]) {
		*ret_reason = "Digest challenge without a nonce";
		return -EBADMSG;
	}
	if (!printable(d.realm) || !printable(d.nonce) || !printable(d.opaque)) {
		*ret_reason = "Digest challenge with a control byte, quote or backslash";
		return -EBADMSG;
	}
	memcpy(d.cnonce, a->cnonce, sizeof d.cnonce);
	*a = d;
	return 0;
}

static void base64(const char *in, size_t n, char *out)
{
	static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	size_t o = 0;
	for (size_t i = 0; i < n; i += 3) {
		uint32_t v = (uint32_t)(uint8_t)in[i] << 16 | (i + 1 < n ? (uint32_t)(uint8_t)in[i + 1] << 8 : 0) |
			     (i + 2 < n ? (uint8_t)in[i + 2] : 0);
		out[o++] = tab[v >> 18 & 63];
		out[o++] = tab[v >> 12 & 63];
		out[o++] = i + 1 < n ? tab[v >> 6 & 63] : '=';
		out[o++] = i + 2 < n ? tab[v & 63] : '=';
	}
	out[o] = '\0';
}

int rtsp_auth_header(struct rtsp_auth *a, const char *user, const char *pass, const char *method, const char *uri,
		     char *out, size_t cap)
{
	int n;
	if (a->kind == RTSP_AUTH_BASIC) {
		char up[260], b64[352];
		n = snprintf(up, sizeof up, "%s:%s", user, pass);
		if (n < 0 || (size_t)n >= sizeof up)
			return -ENOBUFS;
		base64(up, (size_t)n, b64);
		n = snprintf(out, cap, "Authorization: Basic %s\r\n", b64);
	} else if (a->kind == RTSP_AUTH_DIGEST) {
		char buf[2 * RTSP_AUTH_MAX_FIELD + RTSP_MAX_URL + 300], ha1[33], ha2[33], resp[33];
		n = snprintf(buf, sizeof buf, "%s:%s:%s", user, a->realm, pass);
		if (n < 0 || (size_t)n >= sizeof buf)
			return -ENOBUFS;
		rtsp_md5_hex(buf, (size_t)n, ha1);
		n = snprintf(buf, sizeof buf, "%s:%s", method, uri);
		if (n < 0 || (size_t)n >= sizeof buf)
			return -ENOBUFS;
		rtsp_md5_hex(buf, (size_t)n, ha2);
		char nc[9] = "";
		if (a->qop_auth) {
			a->nc++;
			snprintf(nc, sizeof nc, "%08x", a->nc);
			n = snprintf(buf, sizeof buf, "%s:%s:%s:%s:auth:%s", ha1, a->nonce, nc, a->cnonce, ha2);
		} else
			n = snprintf(buf, sizeof buf, "%s:%s:%s", ha1, a->nonce, ha2);
		if (n < 0 || (size_t)n >= sizeof buf)
			return -ENOBUFS;
		rtsp_md5_hex(buf, (size_t)n, resp);
		if (!printable(user))
			return -ENOBUFS; /* a user name that cannot be quoted */
		char qop[64] = "", opaque[RTSP_AUTH_MAX_FIELD + 16] = "";
		if (a->qop_auth)
			snprintf(qop, sizeof qop, ", qop=auth, nc=%s, cnonce=\"%s\"", nc, a->cnonce);
		if (a->have_opaque)
			snprintf(opaque, sizeof opaque, ", opaque=\"%s\"", a->opaque);
		n = snprintf(out, cap,
			     "Authorization: Digest username=\"%s\", realm=\"%s\", nonce=\"%s\", uri=\"%s\", "
			     "response=\"%s\"%s%s\r\n",
			     user, a->realm, a->nonce, uri, resp, opaque, qop);
	} else {
		n = 0;
		if (cap)
			out[0] = '\0';
	}
	return n < 0 || (size_t)n >= cap ? -ENOBUFS : 0;
}
