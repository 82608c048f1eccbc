/* Digest authentication (RFC 2617, MD5, with or without qop=auth). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include <openssl/evp.h>

#include "rtsp_digest.h"

/* MD5 of the ':'-joined parts, as hex. */
static int md5_hex(const struct rtsp_str *parts, size_t n, char out[33])
{
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned len = 0;
	int ok = ctx && EVP_DigestInit_ex(ctx, EVP_md5(), NULL);
	for (size_t i = 0; ok && i < n; i++)
		ok = (i == 0 || EVP_DigestUpdate(ctx, ":", 1)) && EVP_DigestUpdate(ctx, parts[i].p, parts[i].n);
	ok = ok && EVP_DigestFinal_ex(ctx, md, &len) && len == 16;
	EVP_MD_CTX_free(ctx);
	if (!ok)
		return -EIO;
	for (unsigned i = 0; i < 16; i++)
		snprintf(out + 2 * i, 3, "%02x", md[i]);
	return 0;
}

static struct rtsp_str cstr(const char *s)
{
	return (struct rtsp_str){s, strlen(s)};
}

int cam_digest_response(const struct rtsp_digest *d, const char *method, const char *password, char out[33])
{
	char ha1[33], ha2[33];
	struct rtsp_str a1[] = {d->username, d->realm, cstr(password)};
	struct rtsp_str a2[] = {cstr(method), d->uri};
	int r = md5_hex(a1, 3, ha1);
	if (r == 0)
		r = md5_hex(a2, 2, ha2);
	if (r < 0)
		return r;
	if (d->qop.p) {
		struct rtsp_str resp[] = {cstr(ha1), d->nonce, d->nc, d->cnonce, d->qop, cstr(ha2)};
		return md5_hex(resp, 6, out);
	}
	struct rtsp_str resp[] = {cstr(ha1), d->nonce, cstr(ha2)};
	return md5_hex(resp, 3, out);
}

static bool same(struct rtsp_str s, const char *lit)
{
	return s.n == strlen(lit) && memcmp(s.p, lit, s.n) == 0;
}

bool cam_digest_check(const struct rtsp_digest *d, const char *method, const char *user, const char *password,
		      const char *realm, const char *nonce)
{
	char want[33];
	if (!same(d->username, user) || !same(d->realm, realm) || !same(d->nonce, nonce))
		return false;
	if (cam_digest_response(d, method, password, want) < 0)
		return false;
	return d->response.n == 32 && strncasecmp(d->response.p, want, 32) == 0;
}
