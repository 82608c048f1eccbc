/* AWS Signature Version 4: canonical request, string to sign, signing key, signature
 * (sigv4.h). The only place KeepPeek signs a request to an object store. */
#include "sigv4.h"

#include <errno.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>

/* An append-only string in a caller's buffer; the first overflow sticks. */
struct sbuf {
	char *p;
	size_t len, cap;
	int err;
};

static void sb_putn(struct sbuf *b, const char *s, size_t n)
{
	if (b->err)
		return;
	if (n >= b->cap - b->len) {
		b->err = -ENOSPC;
		return;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
}

static void sb_puts(struct sbuf *b, const char *s)
{
	sb_putn(b, s, strlen(s));
}

static void sb_putc(struct sbuf *b, char c)
{
	sb_putn(b, &c, 1);
}

static int sb_init(struct sbuf *b, char *out, size_t cap)
{
	if (!out || cap == 0)
		return -ENOSPC;
	b->p = out;
	b->len = 0;
	b->cap = cap;
	b->err = 0;
	out[0] = '\0';
	return 0;
}

static int unreserved(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
	       c == '_' || c == '~';
}

static void sb_encode(struct sbuf *b, const char *src, int keep_slash)
{
	static const char hex[] = "0123456789ABCDEF";
	for (const unsigned char *s = (const unsigned char *)src; *s; s++) {
		if (unreserved(*s) || (keep_slash && *s == '/')) {
			sb_putc(b, (char)*s);
		} else {
			char e[3] = {'%', hex[*s >> 4], hex[*s & 15]};
			sb_putn(b, e, 3);
		}
	}
}

int sigv4_encode(const char *src, int keep_slash, char *out, size_t cap)
{
	struct sbuf b;
	if (sb_init(&b, out, cap) < 0)
		return -ENOSPC;
	sb_encode(&b, src, keep_slash);
	return b.err;
}

void sigv4_sha256_hex(const void *data, size_t len, char out[65])
{
	static const char hex[] = "0123456789abcdef";
	unsigned char md[SHA256_DIGEST_LENGTH];
	SHA256(data, len, md);
	for (int i = 0; i < SHA256_DIGEST_LENGTH; i++) {
		out[2 * i] = hex[md[i] >> 4];
		out[2 * i + 1] = hex[md[i] & 15];
	}
	out[64] = '\0';
}

int sigv4_amz_date(int64_t unix_s, char out[17])
{
	time_t t = (time_t)unix_s;
	struct tm tm;
	if ((int64_t)t != unix_s || !gmtime_r(&t, &tm))
		return -ERANGE;
	if (strftime(out, 17, "%Y%m%dT%H%M%SZ", &tm) != 16)
		return -ERANGE;
	return 0;
}

/* Sorting small arrays of indexes, stable (insertion sort: at most 16 items). */
static int hdr_cmp(const struct sigv4_header *h, size_t a, size_t b)
{
	return strcasecmp(h[a].name, h[b].name);
}

static void sort_headers(const struct sigv4_header *h, size_t n, size_t *idx)
{
	for (size_t i = 0; i < n; i++)
		idx[i] = i;
	for (size_t i = 1; i < n; i++) {
		size_t v = idx[i], j = i;
		while (j > 0 && hdr_cmp(h, idx[j - 1], v) > 0) {
			idx[j] = idx[j - 1];
			j--;
		}
		idx[j] = v;
	}
}

/* Parameters sort by their encoded name, then their encoded value. */
#define SIGV4_PARAM_ENC 512
struct enc_param {
	char name[SIGV4_PARAM_ENC];
	char value[SIGV4_PARAM_ENC];
};

static int param_cmp(const struct enc_param *a, const struct enc_param *b)
{
	int c = strcmp(a->name, b->name);
	return c ? c : strcmp(a->value, b->value);
}

static void sb_lower(struct sbuf *b, const char *s)
{
	for (; *s; s++) {
		char c = *s;
		sb_putc(b, (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : c);
	}
}

/* The value trimmed, each run of spaces folded to one (a multi-line value's line breaks
 * count as spaces). */
static void sb_trimmed(struct sbuf *b, const char *v)
{
	int space = 0, any = 0;
	for (; *v; v++) {
		if (*v == ' ' || *v == '\t' || *v == '\n' || *v == '\r') {
			space = 1;
			continue;
		}
		if (space && any)
			sb_putc(b, ' ');
		space = 0;
		any = 1;
		sb_putc(b, *v);
	}
}

static int check_request(const struct sigv4_request *req)
{
	if (!req->method || !req->path || req->path[0] != '/' || !req->payload_hash)
		return -EINVAL;
	if (req->n_headers > SIGV4_MAX_HEADERS || req->n_params > SIGV4_MAX_PARAMS)
		return -E2BIG;
	for (size_t i = 0; i < req->n_headers; i++)
		if (!req->headers[i].name || !req->headers[i].value || !req->headers[i].name[0])
			return -EINVAL;
	for (size_t i = 0; i < req->n_params; i++)
		if (!req->params[i].name || !req->params[i].value)
			return -EINVAL;
	return 0;
}

int sigv4_canonical_request(const struct sigv4_request *req, char *out, size_t cap, char *signed_hdrs,
			    size_t signed_cap)
{
	struct sbuf b, s;
	struct enc_param params[SIGV4_MAX_PARAMS];
	size_t idx[SIGV4_MAX_HEADERS];
	int r = check_request(req);
	if (r < 0)
		return r;
	if (sb_init(&b, out, cap) < 0)
		return -ENOSPC;

	sb_puts(&b, req->method);
	sb_putc(&b, '\n');
	sb_encode(&b, req->path, 1);
	sb_putc(&b, '\n');

	for (size_t i = 0; i < req->n_params; i++) {
		if (sigv4_encode(req->params[i].name, 0, params[i].name, sizeof(params[i].name)) < 0 ||
		    sigv4_encode(req->params[i].value, 0, params[i].value, sizeof(params[i].value)) < 0)
			return -E2BIG;
		for (size_t j = i; j > 0 && param_cmp(&params[j - 1], &params[j]) > 0; j--) {
			struct enc_param t = params[j];
			params[j] = params[j - 1];
			params[j - 1] = t;
		}
	}
	for (size_t i = 0; i < req->n_params; i++) {
		if (i)
			sb_putc(&b, '&');
		sb_puts(&b, params[i].name);
		sb_putc(&b, '=');
		sb_puts(&b, params[i].value);
	}
	sb_putc(&b, '\n');

	char list[1024];
	struct sbuf l;
	sb_init(&l, list, sizeof(list));
	sort_headers(req->headers, req->n_headers, idx);
	for (size_t i = 0; i < req->n_headers; i++) {
		const struct sigv4_header *h = &req->headers[idx[i]];
		int same = i > 0 && strcasecmp(req->headers[idx[i - 1]].name, h->name) == 0;
		if (same) {
			sb_putc(&b, ',');
		} else {
			if (i > 0) {
				sb_putc(&b, '\n');
				sb_putc(&l, ';');
			}
			sb_lower(&b, h->name);
			sb_putc(&b, ':');
			sb_lower(&l, h->name);
		}
		sb_trimmed(&b, h->value);
	}
	if (req->n_headers)
		sb_putc(&b, '\n');
	sb_putc(&b, '\n');
	sb_puts(&b, list);
	sb_putc(&b, '\n');
	sb_puts(&b, req->payload_hash);
	if (l.err)
		return l.err;
	if (b.err)
		return b.err;
	if (signed_hdrs) {
		if (sb_init(&s, signed_hdrs, signed_cap) < 0)
			return -ENOSPC;
		sb_puts(&s, list);
		if (s.err)
			return s.err;
	}
	return 0;
}

/* "20150830/us-east-1/service/aws4_request" */
static int scope(const struct sigv4_key *key, const char *amz_date, char *out, size_t cap)
{
	if (strlen(amz_date) != 16 || amz_date[8] != 'T' || amz_date[15] != 'Z')
		return -EINVAL;
	int n = snprintf(out, cap, "%.8s/%s/%s/aws4_request", amz_date, key->region, key->service);
	return n < 0 || (size_t)n >= cap ? -ENOSPC : 0;
}

#define CREQ_MAX 8192

int sigv4_string_to_sign(const struct sigv4_request *req, const struct sigv4_key *key, const char *amz_date, char *out,
			 size_t cap)
{
	char creq[CREQ_MAX], sc[256], hash[65];
	int r = sigv4_canonical_request(req, creq, sizeof(creq), NULL, 0);
	if (r < 0)
		return r;
	if ((r = scope(key, amz_date, sc, sizeof(sc))) < 0)
		return r;
	sigv4_sha256_hex(creq, strlen(creq), hash);
	int n = snprintf(out, cap, "AWS4-HMAC-SHA256\n%s\n%s\n%s", amz_date, sc, hash);
	return n < 0 || (size_t)n >= cap ? -ENOSPC : 0;
}

static int hmac(const void *key, size_t klen, const char *msg, unsigned char out[32])
{
	unsigned int len = 32;
	if (!HMAC(EVP_sha256(), key, (int)klen, (const unsigned char *)msg, strlen(msg), out, &len) || len != 32)
		return -EIO;
	return 0;
}

int sigv4_authorization(const struct sigv4_request *req, const struct sigv4_key *key, const char *amz_date, char *out,
			size_t cap)
{
	static const char hex[] = "0123456789abcdef";
	char creq[CREQ_MAX], signed_hdrs[1024], sts[512], sc[256], date[9], ksecret[256], sig[65];
	unsigned char k[32];
	int r;

	if (!key->access_key || !key->secret || !key->region || !key->service)
		return -EINVAL;
	if ((r = sigv4_canonical_request(req, creq, sizeof(creq), signed_hdrs, sizeof(signed_hdrs))) < 0)
		return r;
	if ((r = sigv4_string_to_sign(req, key, amz_date, sts, sizeof(sts))) < 0)
		return r;
	if ((r = scope(key, amz_date, sc, sizeof(sc))) < 0)
		return r;
	int n = snprintf(ksecret, sizeof(ksecret), "AWS4%s", key->secret);
	if (n < 0 || (size_t)n >= sizeof(ksecret))
		return -E2BIG;
	memcpy(date, amz_date, 8);
	date[8] = '\0';
	r = hmac(ksecret, (size_t)n, date, k);
	OPENSSL_cleanse(ksecret, sizeof(ksecret));
	if (r < 0 || (r = hmac(k, 32, key->region, k)) < 0 || (r = hmac(k, 32, key->service, k)) < 0 ||
	    (r = hmac(k, 32, "aws4_request", k)) < 0 || (r = hmac(k, 32, sts, k)) < 0)
		return r;
	for (int i = 0; i < 32; i++) {
		sig[2 * i] = hex[k[i] >> 4];
		sig[2 * i + 1] = hex[k[i] & 15];
	}
	sig[64] = '\0';
	OPENSSL_cleanse(k, sizeof(k));
	n = snprintf(out, cap, "AWS4-HMAC-SHA256 Credential=%s/%s, SignedHeaders=%s, Signature=%s", key->access_key, sc,
		     signed_hdrs, sig);
	return n < 0 || (size_t)n >= cap ? -ENOSPC : 0;
}
