/* libsrtp2's two primitives for SRTP_AES128_CM_SHA1_80 (AES-128 counter mode, RFC 3711
 * section 4.1.1, and HMAC-SHA1, section 4.2.1) done by OpenSSL's EVP, registered in place
 * of the build's own with srtp_replace_cipher_type / srtp_replace_auth_type. Debian's
 * libsrtp2 does them through NSS, which creates a PK11 context per packet: that was 38 %
 * of rtcd's CPU when sending (docs/perf/RESULTS.md, rtc-fanout). libsrtp keeps the
 * protocol (key derivation, index and ROC, replay list); the state here is what libsrtp's
 * own OpenSSL backend (crypto/cipher/aes_icm_ossl.c, crypto/hash/hmac_ossl.c) keeps.
 * Why this and not a libsrtp2 of our own: decision 0020. */
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>
#include <srtp2/auth.h>
#include <srtp2/cipher.h>

#include "srtp_crypto.h"

#define ICM_KEY  16 /* AES-128 */
#define ICM_SALT 14 /* RFC 3711 section 4.1.1: the 112-bit salt */
#define SHA1_LEN 20

struct icm {
	EVP_CIPHER_CTX *ctx;
	uint8_t offset[16]; /* the salt, shifted left 16 bits: IV = offset XOR nonce */
};

struct hmac {
	EVP_MAC_CTX *ctx;
};

static const srtp_cipher_type_t icm_type;
static const srtp_auth_type_t hmac_type;
static EVP_MAC *hmac_mac;

static srtp_err_status_t icm_alloc(srtp_cipher_pointer_t *cp, int key_len, int tag_len)
{
	(void)tag_len;
	if (key_len != SRTP_AES_ICM_128_KEY_LEN_WSALT)
		return srtp_err_status_bad_param;
	srtp_cipher_t *c = calloc(1, sizeof *c);
	struct icm *st = calloc(1, sizeof *st);
	if (!c || !st || !(st->ctx = EVP_CIPHER_CTX_new())) {
		free(st);
		free(c);
		return srtp_err_status_alloc_fail;
	}
	c->type = &icm_type;
	c->state = st;
	c->key_len = key_len;
	c->algorithm = SRTP_AES_ICM_128;
	*cp = c;
	return srtp_err_status_ok;
}

static srtp_err_status_t icm_dealloc(srtp_cipher_pointer_t c)
{
	struct icm *st = c->state;
	EVP_CIPHER_CTX_free(st->ctx);
	OPENSSL_cleanse(st, sizeof *st);
	free(st);
	free(c);
	return srtp_err_status_ok;
}

/* key is the 16-byte key followed by the 14-byte salt. */
static srtp_err_status_t icm_init(void *state, const uint8_t *key)
{
	struct icm *st = state;
	memset(st->offset, 0, sizeof st->offset);
	memcpy(st->offset, key + ICM_KEY, ICM_SALT);
	if (EVP_EncryptInit_ex(st->ctx, EVP_aes_128_ctr(), NULL, key, NULL) != 1)
		return srtp_err_status_init_fail;
	return srtp_err_status_ok;
}

static srtp_err_status_t icm_set_iv(void *state, uint8_t *iv, srtp_cipher_direction_t dir)
{
	struct icm *st = state;
	uint8_t counter[16];
	(void)dir;
	for (unsigned i = 0; i < sizeof counter; i++)
		counter[i] = st->offset[i] ^ iv[i];
	if (EVP_EncryptInit_ex(st->ctx, NULL, NULL, NULL, counter) != 1)
		return srtp_err_status_init_fail;
	return srtp_err_status_ok;
}

/* Counter mode: encrypting and decrypting are the same XOR with the keystream. */
static srtp_err_status_t icm_crypt(void *state, uint8_t *buf, unsigned int *len)
{
	struct icm *st = state;
	int out = 0;
	if (*len > (unsigned)INT32_MAX || EVP_EncryptUpdate(st->ctx, buf, &out, buf, (int)*len) != 1)
		return srtp_err_status_cipher_fail;
	*len = (unsigned)out;
	return srtp_err_status_ok;
}

/* RFC 3711 appendix B.2: the keystream for an all-zero IV. */
static const uint8_t icm_key[SRTP_AES_ICM_128_KEY_LEN_WSALT] = {
    0x2b, 0x7e, 0x15, 0x16, 0x28, 0xae, 0xd2, 0xa6, 0xab, 0xf7, 0x15, 0x88, 0x09, 0xcf, 0x4f,
    0x3c, 0xf0, 0xf1, 0xf2, 0xf3, 0xf4, 0xf5, 0xf6, 0xf7, 0xf8, 0xf9, 0xfa, 0xfb, 0xfc, 0xfd};
static uint8_t icm_nonce[16];
static const uint8_t icm_plain[32];
static const uint8_t icm_cipher[32] = {0xe0, 0x3e, 0xad, 0x09, 0x35, 0xc9, 0x5e, 0x80, 0xe1, 0x66, 0xb1,
				       0x6d, 0xd9, 0x2b, 0x4e, 0xb4, 0xd2, 0x35, 0x13, 0x16, 0x2b, 0x02,
				       0xd0, 0xf7, 0x2a, 0x43, 0xa2, 0xfe, 0x4a, 0x5f, 0x97, 0xab};
static const srtp_cipher_test_case_t icm_test = {
    .key_length_octets = SRTP_AES_ICM_128_KEY_LEN_WSALT,
    .key = icm_key,
    .idx = icm_nonce,
    .plaintext_length_octets = sizeof icm_plain,
    .plaintext = icm_plain,
    .ciphertext_length_octets = sizeof icm_cipher,
    .ciphertext = icm_cipher,
};

static const srtp_cipher_type_t icm_type = {
    .alloc = icm_alloc,
    .dealloc = icm_dealloc,
    .init = icm_init,
    .encrypt = icm_crypt,
    .decrypt = icm_crypt,
    .set_iv = icm_set_iv,
    .description = "AES-128 integer counter mode (OpenSSL EVP)",
    .test_data = &icm_test,
    .id = SRTP_AES_ICM_128,
};

static srtp_err_status_t hmac_alloc(srtp_auth_pointer_t *ap, int key_len, int out_len)
{
	if (key_len < 0 || key_len > SHA1_LEN || out_len < 0 || out_len > SHA1_LEN)
		return srtp_err_status_bad_param;
	srtp_auth_t *a = calloc(1, sizeof *a);
	struct hmac *st = calloc(1, sizeof *st);
	if (!a || !st || !(st->ctx = EVP_MAC_CTX_new(hmac_mac))) {
		free(st);
		free(a);
		return srtp_err_status_alloc_fail;
	}
	a->type = &hmac_type;
	a->state = st;
	a->out_len = out_len;
	a->key_len = key_len;
	*ap = a;
	return srtp_err_status_ok;
}

static srtp_err_status_t hmac_dealloc(srtp_auth_pointer_t a)
{
	struct hmac *st = a->state;
	EVP_MAC_CTX_free(st->ctx);
	free(st);
	free(a);
	return srtp_err_status_ok;
}

static srtp_err_status_t hmac_init(void *state, const uint8_t *key, int key_len)
{
	struct hmac *st = state;
	OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, (char *)"SHA1", 0),
			       OSSL_PARAM_construct_end()};
	return EVP_MAC_init(st->ctx, key, (size_t)key_len, params) == 1 ? srtp_err_status_ok
									: srtp_err_status_auth_fail;
}

/* A new message under the same key (OpenSSL keeps the keyed inner and outer states). */
static srtp_err_status_t hmac_start(void *state)
{
	struct hmac *st = state;
	return EVP_MAC_init(st->ctx, NULL, 0, NULL) == 1 ? srtp_err_status_ok : srtp_err_status_auth_fail;
}

static srtp_err_status_t hmac_update(void *state, const uint8_t *buf, int len)
{
	struct hmac *st = state;
	if (len < 0 || EVP_MAC_update(st->ctx, buf, (size_t)len) != 1)
		return srtp_err_status_auth_fail;
	return srtp_err_status_ok;
}

static srtp_err_status_t hmac_compute(void *state, const uint8_t *buf, int len, int tag_len, uint8_t *tag)
{
	struct hmac *st = state;
	uint8_t md[SHA1_LEN];
	size_t mdlen = 0;
	if (tag_len < 0 || tag_len > SHA1_LEN || hmac_update(state, buf, len) != srtp_err_status_ok ||
	    EVP_MAC_final(st->ctx, md, &mdlen, sizeof md) != 1 || mdlen != SHA1_LEN)
		return srtp_err_status_auth_fail;
	memcpy(tag, md, (size_t)tag_len);
	return srtp_err_status_ok;
}

/* RFC 2202 section 3, test case 1. */
static const uint8_t hmac_key[20] = {0x0b, 0x0b, 0x0b, 0x0b, 0x0b, 0x0b, 0x0b, 0x0b, 0x0b, 0x0b,
				     0x0b, 0x0b, 0x0b, 0x0b, 0x0b, 0x0b, 0x0b, 0x0b, 0x0b, 0x0b};
static const uint8_t hmac_data[8] = {'H', 'i', ' ', 'T', 'h', 'e', 'r', 'e'};
static const uint8_t hmac_tag[20] = {0xb6, 0x17, 0x31, 0x86, 0x55, 0x05, 0x72, 0x64, 0xe2, 0x8b,
				     0xc0, 0xb6, 0xfb, 0x37, 0x8c, 0x8e, 0xf1, 0x46, 0xbe, 0x00};
static const srtp_auth_test_case_t hmac_test = {
    .key_length_octets = sizeof hmac_key,
    .key = hmac_key,
    .data_length_octets = sizeof hmac_data,
    .data = hmac_data,
    .tag_length_octets = sizeof hmac_tag,
    .tag = hmac_tag,
};

static const srtp_auth_type_t hmac_type = {
    .alloc = hmac_alloc,
    .dealloc = hmac_dealloc,
    .init = hmac_init,
    .compute = hmac_compute,
    .update = hmac_update,
    .start = hmac_start,
    .description = "HMAC-SHA1 (OpenSSL EVP_MAC)",
    .test_data = &hmac_test,
    .id = SRTP_HMAC_SHA1,
};

int rtc_srtp_crypto_init(void)
{
	if (!hmac_mac && !(hmac_mac = EVP_MAC_fetch(NULL, "HMAC", NULL)))
		return -1;
	/* Each replacement runs its self-test (the vectors above) before libsrtp uses it. */
	if (srtp_replace_cipher_type(&icm_type, SRTP_AES_ICM_128) != srtp_err_status_ok ||
	    srtp_replace_auth_type(&hmac_type, SRTP_HMAC_SHA1) != srtp_err_status_ok)
		return -1;
	return 0;
}
