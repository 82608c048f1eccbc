/* The supervisor's credential primitives (OpenSSL): scrypt password hashes in a
 * self-describing string, random session and API token values, token digests and
 * base64. No files, no logging; every function returns 0 or a negative errno. */
#ifndef KP_AUTH_HASH_H
#define KP_AUTH_HASH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* scrypt cost of new hashes: N = 2^15, r = 8, p = 1 (32 MiB of memory per hash). */
#define AUTH_SCRYPT_LN  15
#define AUTH_SCRYPT_R   8
#define AUTH_SCRYPT_P   1
#define AUTH_SALT_LEN   16
#define AUTH_DIGEST_LEN 32
/* "$scrypt$ln=15,r=8,p=1$" + 22 salt + "$" + 43 hash characters, with room to spare. */
#define AUTH_HASH_STR_MAX 160
/* Random values: 32 bytes in base64url (43 characters); tokens add "kp_". */
#define AUTH_RANDOM_LEN    32
#define AUTH_SECRET_STRMAX 48
#define AUTH_TOKEN_PREFIX  "kp_"

/* Hashes password with a fresh random salt into ret (NUL-terminated). */
int auth_hash_password(const char *password, size_t len, char *ret, size_t retlen);

/* A hash in the same format and at the same cost as auth_hash_password's, of no password:
 * random salt and random digest, made without running scrypt. Checking a password
 * against it costs what checking a real one does (the cost is in deriving the key) and
 * fails but for a 2^-256 chance; the caller refuses an unknown user whatever the check
 * says. Returns 0 or a negative errno. */
int auth_hash_unmatchable(char *ret, size_t retlen);
/* 0 when password matches encoded, -EACCES when it does not, -EINVAL when encoded is not
 * a hash this code understands (or asks for more than its cost ceilings). */
int auth_verify_password(const char *password, size_t len, const char *encoded);
/* A new random value in base64url (AUTH_RANDOM_LEN bytes), with prefix in front. */
int auth_random_string(const char *prefix, char *ret, size_t retlen);
/* SHA-256 of a token or session string, as stored and compared. */
int auth_digest(const char *s, uint8_t ret[AUTH_DIGEST_LEN]);

/* base64 without padding: url selects the -_ alphabet instead of +/. */
int auth_b64_encode(const uint8_t *in, size_t len, bool url, char *ret, size_t retlen);
/* Returns the decoded length, or -EINVAL. */
int auth_b64_decode(const char *in, size_t len, bool url, uint8_t *ret, size_t retlen);

#endif
