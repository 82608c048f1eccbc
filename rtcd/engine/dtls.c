/* DTLS-SRTP server endpoints (see dtls.h). Records from the browser are written to a
 * memory BIO; records OpenSSL writes go through a small BIO that hands each datagram to
 * the session's ICE send function, so datagram boundaries (and the 1,200-byte MTU) are
 * kept. */
#include "dtls.h"

#include <errno.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "log.h"

#define DTLS_MTU 1200

struct rtc_dtls {
	SSL *ssl;
	BIO *rbio;
	enum rtc_dtls_state state;
	rtc_dtls_send_fn send;
	void *arg;
	const EVP_MD *peer_md;
	uint8_t peer_fp[EVP_MAX_MD_SIZE];
	size_t peer_fp_len;
	char error[160];
};

static SSL_CTX *ctx;
static BIO_METHOD *out_method;

static void openssl_error(char *buf, size_t cap, const char *what)
{
	unsigned long e = ERR_get_error();
	char detail[120] = "no detail";
	if (e)
		ERR_error_string_n(e, detail, sizeof detail);
	ERR_clear_error();
	snprintf(buf, cap, "%s: %s", what, detail);
}

static int out_write(BIO *b, const char *data, int len)
{
	struct rtc_dtls *d = BIO_get_data(b);
	if (len > 0 && d)
		d->send(d->arg, (const uint8_t *)data, (size_t)len);
	return len;
}

static long out_ctrl(BIO *b, int cmd, long num, void *ptr)
{
	(void)b;
	(void)num;
	(void)ptr;
	switch (cmd) {
	case BIO_CTRL_FLUSH:
		return 1;
	case BIO_CTRL_DGRAM_QUERY_MTU:
	case BIO_CTRL_DGRAM_GET_FALLBACK_MTU:
		return DTLS_MTU;
	case BIO_CTRL_WPENDING:
	case BIO_CTRL_PENDING:
		return 0;
	default:
		return 0;
	}
}

static int out_create(BIO *b)
{
	BIO_set_init(b, 1);
	return 1;
}

static int verify_any(int ok, X509_STORE_CTX *x)
{
	(void)ok;
	(void)x;
	return 1; /* self-signed; checked against the offer's fingerprint after the handshake */
}

static int make_cert(EVP_PKEY **ret_key, X509 **ret_cert)
{
	EVP_PKEY *key = EVP_EC_gen("P-256");
	X509 *x = X509_new();
	X509_NAME *name = NULL;
	if (!key || !x)
		goto fail;
	uint8_t serial[8];
	if (RAND_bytes(serial, sizeof serial) != 1)
		goto fail;
	serial[0] &= 0x7f;
	BIGNUM *bn = BN_bin2bn(serial, sizeof serial, NULL);
	if (!bn || !BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x))) {
		BN_free(bn);
		goto fail;
	}
	BN_free(bn);
	if (!X509_set_version(x, 2) || !X509_gmtime_adj(X509_getm_notBefore(x), -86400) ||
	    !X509_gmtime_adj(X509_getm_notAfter(x), 30L * 86400) || !X509_set_pubkey(x, key))
		goto fail;
	name = X509_get_subject_name(x);
	if (!X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)"keeppeek-rtcd", -1, -1, 0) ||
	    !X509_set_issuer_name(x, name) || !X509_sign(x, key, EVP_sha256()))
		goto fail;
	*ret_key = key;
	*ret_cert = x;
	return 0;
fail:
	EVP_PKEY_free(key);
	X509_free(x);
	return -EIO;
}

int rtc_dtls_global_init(char fingerprint[RTC_DTLS_FP_TEXT])
{
	char why[200];
	EVP_PKEY *key = NULL;
	X509 *cert = NULL;
	if (make_cert(&key, &cert) < 0) {
		openssl_error(why, sizeof why, "creating the ECDSA P-256 certificate");
		kp_err("dtls: %s", why);
		return -EIO;
	}
	uint8_t md[EVP_MAX_MD_SIZE];
	unsigned mdlen = 0;
	if (!X509_digest(cert, EVP_sha256(), md, &mdlen))
		goto fail;
	for (unsigned i = 0; i < mdlen; i++)
		snprintf(fingerprint + 3 * i, RTC_DTLS_FP_TEXT - 3 * i, "%02X%s", md[i], i + 1 < mdlen ? ":" : "");
	ctx = SSL_CTX_new(DTLS_server_method());
	if (!ctx || !SSL_CTX_set_min_proto_version(ctx, DTLS1_2_VERSION) || !SSL_CTX_use_certificate(ctx, cert) ||
	    !SSL_CTX_use_PrivateKey(ctx, key) || !SSL_CTX_check_private_key(ctx) ||
	    SSL_CTX_set_tlsext_use_srtp(ctx, "SRTP_AES128_CM_SHA1_80") != 0 ||
	    !SSL_CTX_set_cipher_list(ctx, "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:"
					  "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-ECDSA-AES128-SHA"))
		goto fail;
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, verify_any);
	SSL_CTX_set_read_ahead(ctx, 1);
	out_method = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "keeppeek-ice");
	if (!out_method || !BIO_meth_set_write(out_method, out_write) || !BIO_meth_set_ctrl(out_method, out_ctrl) ||
	    !BIO_meth_set_create(out_method, out_create))
		goto fail;
	EVP_PKEY_free(key);
	X509_free(cert);
	return 0;
fail:
	openssl_error(why, sizeof why, "setting up the DTLS context");
	kp_err("dtls: %s", why);
	EVP_PKEY_free(key);
	X509_free(cert);
	SSL_CTX_free(ctx);
	ctx = NULL;
	return -EIO;
}

void rtc_dtls_global_free(void)
{
	SSL_CTX_free(ctx);
	ctx = NULL;
	BIO_meth_free(out_method);
	out_method = NULL;
}

struct rtc_dtls *rtc_dtls_new(const char *peer_fp_alg, const uint8_t *peer_fp, size_t peer_fp_len,
			      rtc_dtls_send_fn send, void *arg)
{
	const EVP_MD *md = NULL;
	if (strcasecmp(peer_fp_alg, "sha-256") == 0)
		md = EVP_sha256();
	else if (strcasecmp(peer_fp_alg, "sha-1") == 0)
		md = EVP_sha1();
	else if (strcasecmp(peer_fp_alg, "sha-384") == 0)
		md = EVP_sha384();
	else if (strcasecmp(peer_fp_alg, "sha-512") == 0)
		md = EVP_sha512();
	if (!md || peer_fp_len != (size_t)EVP_MD_get_size(md) || !ctx) {
		errno = EINVAL;
		return NULL;
	}
	struct rtc_dtls *d = calloc(1, sizeof *d);
	if (!d)
		return NULL;
	d->send = send;
	d->arg = arg;
	d->peer_md = md;
	memcpy(d->peer_fp, peer_fp, peer_fp_len);
	d->peer_fp_len = peer_fp_len;
	d->ssl = SSL_new(ctx);
	d->rbio = BIO_new(BIO_s_mem());
	BIO *wbio = out_method ? BIO_new(out_method) : NULL;
	if (!d->ssl || !d->rbio || !wbio) {
		BIO_free(d->rbio);
		BIO_free(wbio);
		SSL_free(d->ssl);
		free(d);
		errno = ENOMEM;
		return NULL;
	}
	BIO_set_mem_eof_return(d->rbio, -1);
	BIO_set_data(wbio, d);
	SSL_set_bio(d->ssl, d->rbio, wbio);
	SSL_set_options(d->ssl, SSL_OP_NO_QUERY_MTU);
	SSL_set_mtu(d->ssl, DTLS_MTU - 28);
	DTLS_set_link_mtu(d->ssl, DTLS_MTU);
	SSL_set_accept_state(d->ssl);
	d->state = RTC_DTLS_HANDSHAKE;
	return d;
}

void rtc_dtls_free(struct rtc_dtls *d)
{
	if (!d)
		return;
	SSL_free(d->ssl);
	free(d);
}

static enum rtc_dtls_state fail(struct rtc_dtls *d, const char *what)
{
	openssl_error(d->error, sizeof d->error, what);
	d->state = RTC_DTLS_FAILED;
	return d->state;
}

static bool peer_matches(struct rtc_dtls *d)
{
	X509 *peer = SSL_get1_peer_certificate(d->ssl);
	if (!peer)
		return false;
	uint8_t md[EVP_MAX_MD_SIZE];
	unsigned n = 0;
	bool ok = X509_digest(peer, d->peer_md, md, &n) && n == d->peer_fp_len && memcmp(md, d->peer_fp, n) == 0;
	X509_free(peer);
	return ok;
}

static enum rtc_dtls_state step(struct rtc_dtls *d)
{
	if (d->state == RTC_DTLS_HANDSHAKE) {
		int r = SSL_do_handshake(d->ssl);
		if (r == 1) {
			if (!peer_matches(d)) {
				snprintf(d->error, sizeof d->error,
					 "the browser's certificate does not match the fingerprint of its offer");
				d->state = RTC_DTLS_FAILED;
				return d->state;
			}
			const SRTP_PROTECTION_PROFILE *p = SSL_get_selected_srtp_profile(d->ssl);
			if (!p || p->id != SRTP_AES128_CM_SHA1_80) {
				snprintf(d->error, sizeof d->error,
					 "the browser did not negotiate SRTP_AES128_CM_SHA1_80");
				d->state = RTC_DTLS_FAILED;
				return d->state;
			}
			d->state = RTC_DTLS_CONNECTED;
			return d->state;
		}
		int e = SSL_get_error(d->ssl, r);
		if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE)
			return d->state;
		return fail(d, "DTLS handshake failed");
	}
	if (d->state == RTC_DTLS_CONNECTED) {
		uint8_t buf[2048];
		for (;;) {
			int r = SSL_read(d->ssl, buf, sizeof buf);
			if (r > 0)
				continue; /* no application data is expected: discarded */
			int e = SSL_get_error(d->ssl, r);
			if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE)
				break;
			if (e == SSL_ERROR_ZERO_RETURN) {
				d->state = RTC_DTLS_CLOSED;
				break;
			}
			return fail(d, "DTLS read failed");
		}
	}
	return d->state;
}

enum rtc_dtls_state rtc_dtls_input(struct rtc_dtls *d, const uint8_t *data, size_t len)
{
	if (d->state == RTC_DTLS_FAILED || d->state == RTC_DTLS_CLOSED)
		return d->state;
	if (BIO_write(d->rbio, data, (int)len) != (int)len)
		return fail(d, "buffering a DTLS record");
	return step(d);
}

enum rtc_dtls_state rtc_dtls_state(const struct rtc_dtls *d)
{
	return d->state;
}

const char *rtc_dtls_error(const struct rtc_dtls *d)
{
	return d->error[0] ? d->error : NULL;
}

long rtc_dtls_timeout_ms(struct rtc_dtls *d)
{
	struct timeval tv;
	if (d->state != RTC_DTLS_HANDSHAKE || DTLSv1_get_timeout(d->ssl, &tv) != 1)
		return -1;
	return tv.tv_sec * 1000L + tv.tv_usec / 1000;
}

enum rtc_dtls_state rtc_dtls_on_timeout(struct rtc_dtls *d)
{
	if (d->state != RTC_DTLS_HANDSHAKE)
		return d->state;
	if (DTLSv1_handle_timeout(d->ssl) < 0)
		return fail(d, "DTLS retransmission failed");
	return d->state;
}

int rtc_dtls_srtp_keys(struct rtc_dtls *d, struct rtc_srtp_keys *ret)
{
	uint8_t km[2 * (RTC_SRTP_KEY + RTC_SRTP_SALT)];
	static const char label[] = "EXTRACTOR-dtls_srtp";
	if (d->state != RTC_DTLS_CONNECTED ||
	    SSL_export_keying_material(d->ssl, km, sizeof km, label, sizeof label - 1, NULL, 0, 0) != 1)
		return -EIO;
	/* client key, server key, client salt, server salt; we are the server. */
	memcpy(ret->remote_key, km, RTC_SRTP_KEY);
	memcpy(ret->local_key, km + RTC_SRTP_KEY, RTC_SRTP_KEY);
	memcpy(ret->remote_salt, km + 2 * RTC_SRTP_KEY, RTC_SRTP_SALT);
	memcpy(ret->local_salt, km + 2 * RTC_SRTP_KEY + RTC_SRTP_SALT, RTC_SRTP_SALT);
	return 0;
}
