/* Baichuan payload ciphers and login hashes (BAICHUAN.md section 2): the BC XOR cipher,
 * AES-128-CFB128 restarting from the fixed IV for every segment, the AES key from the
 * login nonce, the truncated uppercase MD5 hex of the login, and the 0xDDxx / 0xDCxx
 * encryption words of msg 1. */
#ifndef KP_BC_CRYPTO_H
#define KP_BC_CRYPTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum bc_enc { BC_ENC_NONE = 0, BC_ENC_BC = 1, BC_ENC_AES = 2, BC_ENC_FULL_AES = 3 };

#define BC_AES_KEY_LEN 16
#define BC_MD5_HEX_LEN 31 /* characters kept of the 32-character hex digest */

/* The cipher state of one direction of a session. */
struct bc_cipher {
	enum bc_enc mode;
	uint8_t key[BC_AES_KEY_LEN]; /* valid for AES and full AES */
};

/* XORs buf in place with the BC key stream at channel offset o (its own inverse). */
void bc_xor(uint8_t offset, uint8_t *buf, size_t len);

/* AES-128-CFB128 in place with IV "0123456789abcdef", from the IV on every call.
 * Returns 0 or -EIO (OpenSSL failure). */
int bc_aes(const uint8_t key[BC_AES_KEY_LEN], bool encrypt, uint8_t *buf, size_t len);

/* Key = the first 16 characters of the uppercase hex MD5 of "<nonce>-<password>". */
int bc_aes_key(const char *nonce, const char *password, uint8_t ret_key[BC_AES_KEY_LEN]);

/* Uppercase hex MD5 of a‖b, truncated to 31 characters, NUL-terminated. */
int bc_md5_hex31(const char *a, const char *b, char ret[BC_MD5_HEX_LEN + 1]);

/* Encrypts or decrypts one XML segment (extension or payload) in place per mode:
 * BC uses the channel offset, AES and full AES the key. */
int bc_cipher_xml(const struct bc_cipher *c, bool encrypt, uint8_t channel, uint8_t *buf, size_t len);

/* The camera's msg 1 answer word 0xDDxx → mode: 00 none, 01 BC, 02/03 AES, 12 full AES.
 * Returns 0, or -EPROTONOSUPPORT for another high byte or an unknown selector. */
int bc_enc_from_reply(uint16_t word, enum bc_enc *ret, const char **ret_reason);
uint16_t bc_enc_reply_word(enum bc_enc mode); /* 0xdd00, 0xdd01, 0xdd02, 0xdd12 */
/* The client's offer 0xDCxx → the highest mode it accepts. */
int bc_enc_from_offer(uint16_t word, enum bc_enc *ret, const char **ret_reason);
uint16_t bc_enc_offer_word(enum bc_enc max); /* 0xdc00, 0xdc01, 0xdc12 */

/* Full AES: decrypts the first encrypt_len bytes of a binary payload in place. Returns
 * 0 or -ERANGE when encrypt_len exceeds the payload. */
int bc_decrypt_partial(const uint8_t key[BC_AES_KEY_LEN], uint8_t *payload, size_t len, uint64_t encrypt_len,
		       const char **ret_reason);

#endif
