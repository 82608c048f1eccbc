/* Known-answer tests of the Baichuan ciphers and hashes. Expected values were computed
 * independently: python3 hashlib for the MD5s, `openssl enc -aes-128-cfb -K .. -iv ..`
 * for the AES ciphertext, and the XOR formula of BAICHUAN.md in python3. */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "bc_crypto.h"
#include "test.h"

static const char nonce[] = "5F3C7A1B9E2D";
static const char plain[] = "<?xml version=\"1.0\" encoding=\"UTF-8\" ?>\n<body>hello baichuan</body>\n";

static void hex_to(const char *hex, uint8_t *out)
{
	for (size_t i = 0; hex[2 * i]; i++) {
		unsigned v;
		sscanf(hex + 2 * i, "%2x", &v);
		out[i] = (uint8_t)v;
	}
}

static void test_md5_hex31(void)
{
	char h[32];
	CHECK_EQ(bc_md5_hex31("admin", "", h), 0);
	CHECK(strcmp(h, "21232F297A57A5A743894A0E4A801FC") == 0);
	CHECK_EQ(strlen(h), 31);
	CHECK_EQ(bc_md5_hex31("admin", nonce, h), 0);
	CHECK(strcmp(h, "09DD01A9E6BCD12BD23EB26BCD41B7F") == 0);
	CHECK_EQ(bc_md5_hex31("secret", nonce, h), 0);
	CHECK(strcmp(h, "1FB5F4FBBED13D3A5BBF2B17F341426") == 0);
}

static void test_aes_key(void)
{
	uint8_t key[16];
	CHECK_EQ(bc_aes_key(nonce, "secret", key), 0);
	CHECK(memcmp(key, "FB7A492740936955", 16) == 0);
}

static void test_aes_known_answer(void)
{
	static const char ct_hex[] = "f71b9d630f29de5e26a74b62707d25e75adbfebee5b1973670fb1bbbe6ce6d912927c16608f99b8a"
				     "4942dcfbbad18cd243eca8cf2ee4491c4548c48037e3138fbf1e5caf";
	uint8_t key[16], ct[68], buf[68];
	size_t n = strlen(plain);
	CHECK_EQ(n, 68);
	hex_to(ct_hex, ct);
	CHECK_EQ(bc_aes_key(nonce, "secret", key), 0);
	memcpy(buf, plain, n);
	CHECK_EQ(bc_aes(key, true, buf, n), 0);
	CHECK(memcmp(buf, ct, n) == 0);
	CHECK_EQ(bc_aes(key, false, buf, n), 0);
	CHECK(memcmp(buf, plain, n) == 0);
	/* The cipher restarts from the IV each call: a prefix encrypts to a prefix. */
	memcpy(buf, plain, 20);
	CHECK_EQ(bc_aes(key, true, buf, 20), 0);
	CHECK(memcmp(buf, ct, 20) == 0);
}

static void test_xor_known_answer(void)
{
	uint8_t buf[8] = "<?xml ok", want[8];
	hex_to("74661216903c4154", want);
	bc_xor(3, buf, 8);
	CHECK(memcmp(buf, want, 8) == 0);
	bc_xor(3, buf, 8);
	CHECK(memcmp(buf, "<?xml ok", 8) == 0);
}

static void test_selectors(void)
{
	enum bc_enc m = BC_ENC_NONE;
	const char *why = NULL;
	CHECK_EQ(bc_enc_from_reply(0xdd00, &m, &why), 0);
	CHECK_EQ(m, BC_ENC_NONE);
	CHECK_EQ(bc_enc_from_reply(0xdd01, &m, &why), 0);
	CHECK_EQ(m, BC_ENC_BC);
	CHECK_EQ(bc_enc_from_reply(0xdd02, &m, &why), 0);
	CHECK_EQ(m, BC_ENC_AES);
	CHECK_EQ(bc_enc_from_reply(0xdd03, &m, &why), 0);
	CHECK_EQ(m, BC_ENC_AES);
	CHECK_EQ(bc_enc_from_reply(0xdd12, &m, &why), 0);
	CHECK_EQ(m, BC_ENC_FULL_AES);
	CHECK_EQ(bc_enc_from_reply(0xdd04, &m, &why), -EPROTONOSUPPORT);
	CHECK_STR_CONTAINS(why, "unknown encryption selector");
	CHECK_EQ(bc_enc_from_reply(0xdc12, &m, &why), -EPROTONOSUPPORT);
	CHECK_EQ(bc_enc_from_reply(200, &m, &why), -EPROTONOSUPPORT);
	CHECK_EQ(bc_enc_from_offer(0xdc12, &m, &why), 0);
	CHECK_EQ(m, BC_ENC_FULL_AES);
	CHECK_EQ(bc_enc_from_offer(0xdc77, &m, &why), -EPROTONOSUPPORT);
	for (int i = BC_ENC_NONE; i <= BC_ENC_FULL_AES; i++) {
		CHECK_EQ(bc_enc_from_reply(bc_enc_reply_word((enum bc_enc)i), &m, &why), 0);
		CHECK_EQ(m, i);
	}
	CHECK_EQ(bc_enc_offer_word(BC_ENC_FULL_AES), 0xdc12);
}

static void test_partial(void)
{
	uint8_t key[16], buf[68];
	const char *why = NULL;
	CHECK_EQ(bc_aes_key(nonce, "secret", key), 0);
	memcpy(buf, plain, 68);
	CHECK_EQ(bc_aes(key, true, buf, 16), 0);
	CHECK(memcmp(buf + 16, plain + 16, 52) == 0);
	CHECK_EQ(bc_decrypt_partial(key, buf, 68, 69, &why), -ERANGE);
	CHECK_STR_CONTAINS(why, "encryptLen");
	CHECK_EQ(bc_decrypt_partial(key, buf, 68, 16, &why), 0);
	CHECK(memcmp(buf, plain, 68) == 0);
	CHECK_EQ(bc_decrypt_partial(key, buf, 68, 0, &why), 0);
}

static void test_cipher_xml(void)
{
	struct bc_cipher c = {.mode = BC_ENC_BC};
	uint8_t buf[68];
	memcpy(buf, plain, 68);
	CHECK_EQ(bc_cipher_xml(&c, true, 0, buf, 68), 0);
	CHECK(memcmp(buf, plain, 68) != 0);
	CHECK_EQ(bc_cipher_xml(&c, false, 0, buf, 68), 0);
	CHECK(memcmp(buf, plain, 68) == 0);
	c.mode = BC_ENC_NONE;
	CHECK_EQ(bc_cipher_xml(&c, true, 0, buf, 68), 0);
	CHECK(memcmp(buf, plain, 68) == 0);
}

int main(void)
{
	RUN(test_md5_hex31);
	RUN(test_aes_key);
	RUN(test_aes_known_answer);
	RUN(test_xor_known_answer);
	RUN(test_selectors);
	RUN(test_partial);
	RUN(test_cipher_xml);
	return TEST_EXIT();
}
