/* The Baichuan ciphers and hashes (BAICHUAN.md section 2), on OpenSSL's EVP API. */
#include <errno.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <string.h>

#include "bc_crypto.h"

static const uint8_t bc_xor_key[8] = {0x1f, 0x2d, 0x3c, 0x4b, 0x5a, 0x69, 0x78, 0xff};
static const uint8_t bc_aes_iv[16] = "0123456789abcdef";

void bc_xor(uint8_t offset, uint8_t *buf, size_t len)
{
	for (size_t i = 0; i < len; i++)
		buf[i] ^= bc_xor_key[(offset + i) % 8] ^ offset;
}

int bc_aes(const uint8_t key[BC_AES_KEY_LEN], bool encrypt, uint8_t *buf, size_t len)
{
	EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
	int err = -EIO, outl = 0;
	if (!ctx)
		return -ENOMEM;
	if (EVP_CipherInit_ex(ctx, EVP_aes_128_cfb128(), NULL, key, bc_aes_iv, encrypt ? 1 : 0) != 1)
		goto out_free;
	/* CFB is a stream mode: in-place works and the output length equals the input. */
	for (size_t done = 0; done < len;) {
		int chunk = len - done > (1u << 30) ? 1 << 30 : (int)(len - done);
		if (EVP_CipherUpdate(ctx, buf + done, &outl, buf + done, chunk) != 1 || outl != chunk)
			goto out_free;
		done += (size_t)chunk;
	}
	err = 0;
out_free:
	EVP_CIPHER_CTX_free(ctx);
	return err;
}

/* Uppercase hex MD5 of the concatenation a‖sep‖b. */
static int md5_upper_hex(const char *a, const char *sep, const char *b, char ret[33])
{
	uint8_t d[16];
	unsigned dl = 0;
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	if (!ctx)
		return -ENOMEM;
	int ok = EVP_DigestInit_ex(ctx, EVP_md5(), NULL) == 1 && EVP_DigestUpdate(ctx, a, strlen(a)) == 1 &&
		 EVP_DigestUpdate(ctx, sep, strlen(sep)) == 1 && EVP_DigestUpdate(ctx, b, strlen(b)) == 1 &&
		 EVP_DigestFinal_ex(ctx, d, &dl) == 1 && dl == 16;
	EVP_MD_CTX_free(ctx);
	if (!ok)
		return -EIO;
	static const char hex[] = "0123456789ABCDEF";
	for (int i = 0; i < 16; i++) {
		ret[2 * i] = hex[d[i] >> 4];
		ret[2 * i + 1] = hex[d[i] & 15];
	}
	ret[32] = '\0';
	return 0;
}

int bc_md5_hex31(const char *a, const char *b, char ret[BC_MD5_HEX_LEN + 1])
{
	char full[33];
	int err = md5_upper_hex(a, "", b, full);
	if (err < 0)
		return err;
	memcpy(ret, full, BC_MD5_HEX_LEN);
	ret[BC_MD5_HEX_LEN] = '\0';
	return 0;
}

int bc_aes_key(const char *nonce, const char *password, uint8_t ret_key[BC_AES_KEY_LEN])
{
	char full[33];
	int err;
	if ((err = md5_upper_hex(nonce, "-", password, full)) < 0)
		return err;
	memcpy(ret_key, full, BC_AES_KEY_LEN);
	return 0;
}

int bc_cipher_xml(const struct bc_cipher *c, bool encrypt, uint8_t channel, uint8_t *buf, size_t len)
{
	switch (c->mode) {
	case BC_ENC_NONE:
		return 0;
	case BC_ENC_BC:
		bc_xor(channel, buf, len);
		return 0;
	case BC_ENC_AES:
	case BC_ENC_FULL_AES:
		return bc_aes(c->key, encrypt, buf, len);
	}
	return -EINVAL;
}

/* The low byte of the 0xDDxx reply and of the 0xDCxx offer names the same modes. */
static int mode_from_selector(uint8_t sel, enum bc_enc *ret)
{
	switch (sel) {
	case 0x00:
		*ret = BC_ENC_NONE;
		return 0;
	case 0x01:
		*ret = BC_ENC_BC;
		return 0;
	case 0x02:
	case 0x03:
		*ret = BC_ENC_AES;
		return 0;
	case 0x12:
		*ret = BC_ENC_FULL_AES;
		return 0;
	}
	return -EPROTONOSUPPORT;
}

int bc_enc_from_reply(uint16_t word, enum bc_enc *ret, const char **ret_reason)
{
	if (word >> 8 != 0xdd) {
		*ret_reason = "login reply carries no 0xDDxx encryption word";
		return -EPROTONOSUPPORT;
	}
	if (mode_from_selector(word & 0xff, ret) < 0) {
		*ret_reason = "unknown encryption selector in the login reply";
		return -EPROTONOSUPPORT;
	}
	return 0;
}

uint16_t bc_enc_reply_word(enum bc_enc mode)
{
	static const uint16_t words[] = {0xdd00, 0xdd01, 0xdd02, 0xdd12};
	return words[mode];
}

int bc_enc_from_offer(uint16_t word, enum bc_enc *ret, const char **ret_reason)
{
	if (word >> 8 != 0xdc) {
		*ret_reason = "login carries no 0xDCxx encryption offer";
		return -EPROTONOSUPPORT;
	}
	if (mode_from_selector(word & 0xff, ret) < 0) {
		*ret_reason = "unknown encryption offer in the login";
		return -EPROTONOSUPPORT;
	}
	return 0;
}

uint16_t bc_enc_offer_word(enum bc_enc max)
{
	static const uint16_t words[] = {0xdc00, 0xdc01, 0xdc12, 0xdc12};
	return words[max];
}

int bc_decrypt_partial(const uint8_t key[BC_AES_KEY_LEN], uint8_t *payload, size_t len, uint64_t encrypt_len,
		       const char **ret_reason)
{
	if (encrypt_len > len) {
		*ret_reason = "encryptLen exceeds the payload";
		return -ERANGE;
	}
	int err = bc_aes(key, false, payload, (size_t)encrypt_len);
	if (err < 0)
		*ret_reason = "AES failure";
	return err;
}
