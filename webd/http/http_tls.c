/* The core's TLS: one OpenSSL server context loaded from the certificate and key files
 * handed to web_server_open (before confinement), and per connection an SSL object on
 * memory BIOs, so that libuv moves the ciphertext and the HTTP code above sees plaintext
 * only. */
#include <errno.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <stdlib.h>
#include <string.h>

#include "http_conn.h"
#include "log.h"

#define TLS_SCRATCH (16 * 1024)

static SSL_CTX *ctx;

static const char *tls_error(void)
{
	static char buf[160];
	unsigned long e = ERR_get_error();
	if (!e)
		return "unknown error";
	ERR_error_string_n(e, buf, sizeof buf);
	ERR_clear_error();
	return buf;
}

static int alpn_select(SSL *ssl, const unsigned char **out, unsigned char *outlen, const unsigned char *in,
		       unsigned int inlen, void *arg)
{
	static const unsigned char h1[] = "\x08http/1.1";
	(void)ssl;
	(void)arg;
	if (SSL_select_next_proto((unsigned char **)out, outlen, h1, sizeof h1 - 1, in, inlen) !=
	    OPENSSL_NPN_NEGOTIATED)
		return SSL_TLSEXT_ERR_NOACK;
	return SSL_TLSEXT_ERR_OK;
}

int tls_open(const char *cert, const char *key)
{
	if (!cert[0] || !key[0]) {
		kp_err("[web] TLS needs both tls_cert and tls_key");
		return -EINVAL;
	}
	ctx = SSL_CTX_new(TLS_server_method());
	if (!ctx) {
		kp_err("TLS context: %s", tls_error());
		return -ENOMEM;
	}
	SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
	SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
	SSL_CTX_set_alpn_select_cb(ctx, alpn_select, NULL);
	if (SSL_CTX_use_certificate_chain_file(ctx, cert) != 1) {
		kp_err("[web] tls_cert %s: %s", cert, tls_error());
		goto fail;
	}
	if (SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM) != 1) {
		kp_err("[web] tls_key %s: %s", key, tls_error());
		goto fail;
	}
	if (SSL_CTX_check_private_key(ctx) != 1) {
		kp_err("[web] tls_key %s does not match tls_cert %s: %s", key, cert, tls_error());
		goto fail;
	}
	kp_info("TLS certificate %s loaded", cert);
	return 0;
fail:
	SSL_CTX_free(ctx);
	ctx = NULL;
	return -EINVAL;
}

void tls_close(void)
{
	SSL_CTX_free(ctx);
	ctx = NULL;
}

bool tls_enabled(void)
{
	return ctx != NULL;
}

int tls_conn_init(struct conn *c)
{
	SSL *ssl = SSL_new(ctx);
	BIO *rb = BIO_new(BIO_s_mem()), *wb = BIO_new(BIO_s_mem());
	c->tls_scratch = malloc(TLS_SCRATCH);
	if (!ssl || !rb || !wb || !c->tls_scratch) {
		SSL_free(ssl);
		BIO_free(rb);
		BIO_free(wb);
		free(c->tls_scratch);
		c->tls_scratch = NULL;
		kp_err("client %s: no memory for TLS", c->addr);
		return -ENOMEM;
	}
	SSL_set_bio(ssl, rb, wb);
	SSL_set_accept_state(ssl);
	c->tls = ssl;
	return 0;
}

void tls_conn_free(struct conn *c)
{
	SSL_free(c->tls);
	c->tls = NULL;
	free(c->tls_scratch);
	c->tls_scratch = NULL;
}

/* Sends whatever ciphertext OpenSSL produced (handshake records, alerts, data). */
static int flush(struct conn *c, struct web_ws *ws, size_t ws_len)
{
	BIO *wb = SSL_get_wbio(c->tls);
	size_t pending = BIO_ctrl_pending(wb);
	if (!pending)
		return 0;
	char *buf = malloc(pending);
	if (!buf)
		return -ENOMEM;
	int n = BIO_read(wb, buf, (int)pending);
	int r = n > 0 ? conn_write_raw(c, buf, (size_t)n, ws, ws_len) : 0;
	free(buf);
	return r;
}

int tls_drain(struct conn *c)
{
	SSL *ssl = c->tls;
	while (c->in_len < CONN_IN_CAP && c->state != CONN_DRAIN) {
		int n = SSL_read(ssl, c->in + c->in_len, (int)(CONN_IN_CAP - c->in_len));
		if (n > 0) {
			c->in_len += (size_t)n;
			continue;
		}
		int e = SSL_get_error(ssl, n);
		if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE)
			break;
		if (e == SSL_ERROR_ZERO_RETURN)
			return -ECONNRESET;
		kp_debug("client %s: TLS: %s", c->addr, tls_error());
		flush(c, NULL, 0);
		return -EPROTO;
	}
	return flush(c, NULL, 0);
}

int tls_input(struct conn *c, const uint8_t *data, size_t len)
{
	if (BIO_write(SSL_get_rbio(c->tls), data, (int)len) != (int)len)
		return -ENOMEM;
	return tls_drain(c);
}

int tls_send(struct conn *c, const void *data, size_t len, struct web_ws *ws)
{
	if (!SSL_is_init_finished(c->tls)) {
		kp_warn("client %s: answer before the TLS handshake completed", c->addr);
		return -EPROTO;
	}
	size_t done = 0;
	while (done < len) {
		size_t w = 0;
		if (SSL_write_ex(c->tls, (const char *)data + done, len - done, &w) != 1) {
			kp_debug("client %s: TLS write: %s", c->addr, tls_error());
			c->failed = true;
			return -EPROTO;
		}
		done += w;
	}
	int r = flush(c, ws, len);
	return r;
}
