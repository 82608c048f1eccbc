/* Credential primitives for the supervisor: scrypt password hashes stored as
 * "$scrypt$ln=L,r=R,p=P$SALT$HASH" (base64 without padding, so that the cost can be raised
 * later without breaking stored hashes), constant-time comparison, random session and
 * token values, and their SHA-256 digests. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include "auth_hash.h"

/* Ceilings for hashes read back from the users file: a tampered or future entry must
 * not make the supervisor spend gigabytes or minutes on one login. */
#define LN_MIN 10
#define LN_MAX 20
#define R_MAX  32
#define P_MAX  16

static const char b64_std[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
static const char b64_url[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

int auth_b64_encode(const uint8_t *in, size_t len, bool url, char *ret, size_t retlen)
{
	const char *a = url ? b64_url : b64_std;
	size_t need = (len * 4 + 2) / 3;
	if (need + 1 > retlen)
		return -ENOSPC;
	size_t o = 0;
	for (size_t i = 0; i < len; i += 3) {
		uint32_t v = (uint32_t)in[i] << 16;
		if (i + 1 < len)
			v |= (uint32_t)in[i + 1] << 8;
		if (i + 2 < len)
			v |= in[i + 2];
		ret[o++] = a[(v >> 18) & 63];
		ret[o++] = a[(v >> 12) & 63];
		if (i + 1 < len)
			ret[o++] = a[(v >> 6) & 63];
		if (i + 2 < len)
			ret[o++] = a[v & 63];
	}
	ret[o] = '\0';
	return 0;
}

int auth_b64_decode(const char *in, size_t len, bool url, uint8_t *ret, size_t retlen)
{
	const char *a = url ? b64_url : b64_std;
	if (len % 4 == 1 || (len * 3) / 4 > retlen)
		return -EINVAL;
	uint32_t acc = 0;
	unsigned bits = 0;
	size_t o = 0;
	for (size_t i = 0; i < len; i++) {
		const char *p = in[i] ? memchr(a, in[i], 64) : NULL;
		if (!p)
			return -EINVAL;
		acc = (acc << 6) | (uint32_t)(p - a);
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			ret[o++] = (uint8_t)(acc >> bits);
		}
	}
	if (acc & ((1u << bits) - 1))
		return -EINVAL; /* non-canonical: leftover bits must be zero */
	return (int)o;
}

static int scrypt(const char *password, size_t len, const uint8_t *salt, size_t saltlen, unsigned ln, unsigned r,
		  unsigned p, uint8_t *out, size_t outlen)
{
	uint64_t n = (uint64_t)1 << ln;
	/* scrypt needs 128 * r * (N + p + 2) bytes; OpenSSL's default ceiling is 32 MiB. */
	uint64_t maxmem = 128ull * r * (n + p + 2) + (1u << 20);
	if (!EVP_PBE_scrypt(password, len, salt, saltlen, n, r, p, maxmem, out, outlen))
		return -ENOMEM;
	return 0;
}

int auth_hash_password(const char *password, size_t len, char *ret, size_t retlen)
{
	uint8_t salt[AUTH_SALT_LEN], dk[AUTH_DIGEST_LEN];
	char salt_s[32], dk_s[48];
	if (RAND_bytes(salt, sizeof salt) != 1)
		return -EIO;
	int e = scrypt(password, len, salt, sizeof salt, AUTH_SCRYPT_LN, AUTH_SCRYPT_R, AUTH_SCRYPT_P, dk, sizeof dk);
	if (e == 0)
		e = auth_b64_encode(salt, sizeof salt, false, salt_s, sizeof salt_s);
	if (e == 0)
		e = auth_b64_encode(dk, sizeof dk, false, dk_s, sizeof dk_s);
	OPENSSL_cleanse(dk, sizeof dk);
	if (e < 0)
		return e;
	int n = snprintf(ret, retlen, "$scrypt$ln=%d,r=%d,p=%d$%s$%s", AUTH_SCRYPT_LN, AUTH_SCRYPT_R, AUTH_SCRYPT_P,
			 salt_s, dk_s);
	return n > 0 && (size_t)n < retlen ? 0 : -ENOSPC;
}

int auth_hash_unmatchable(char *ret, size_t retlen)
{
	uint8_t salt[AUTH_SALT_LEN], dk[AUTH_DIGEST_LEN];
	char salt_s[32], dk_s[48];
	if (RAND_bytes(salt, sizeof salt) != 1 || RAND_bytes(dk, sizeof dk) != 1)
		return -EIO;
	int e = auth_b64_encode(salt, sizeof salt, false, salt_s, sizeof salt_s);
	if (e == 0)
		e = auth_b64_encode(dk, sizeof dk, false, dk_s, sizeof dk_s);
	if (e < 0)
		return e;
	int n = snprintf(ret, retlen, "$scrypt$ln=%d,r=%d,p=%d$%s$%s", AUTH_SCRYPT_LN, AUTH_SCRYPT_R, AUTH_SCRYPT_P,
			 salt_s, dk_s);
	return n > 0 && (size_t)n < retlen ? 0 : -ENOSPC;
}

int auth_verify_password(const char *password, size_t len, const char *encoded)
{
	unsigned ln, r, p;
	int used = 0;
	if (sscanf(encoded, "$scrypt$ln=%u,r=%u,p=%u$%n", &ln, &r, &p, &used) != 3 || used == 0)
		return -EINVAL;
	if (ln < LN_MIN || ln > LN_MAX || r < 1 || r > R_MAX || p < 1 || p > P_MAX)
		return -EINVAL;
	const char *salt_s = encoded + used;
	const char *dollar = strchr(salt_s, '$');
	if (!dollar)
		return -EINVAL;
	const char *dk_s = dollar + 1;
	uint8_t salt[64], want[64], got[64];
	int saltlen = auth_b64_decode(salt_s, (size_t)(dollar - salt_s), false, salt, sizeof salt);
	int dklen = auth_b64_decode(dk_s, strlen(dk_s), false, want, sizeof want);
	if (saltlen < 8 || dklen < 16)
		return -EINVAL;
	int e = scrypt(password, len, salt, (size_t)saltlen, ln, r, p, got, (size_t)dklen);
	if (e == 0 && CRYPTO_memcmp(got, want, (size_t)dklen) != 0)
		e = -EACCES;
	OPENSSL_cleanse(got, sizeof got);
	return e;
}

int auth_random_string(const char *prefix, char *ret, size_t retlen)
{
	uint8_t rnd[AUTH_RANDOM_LEN];
	size_t pl = strlen(prefix);
	if (pl >= retlen)
		return -ENOSPC;
	if (RAND_bytes(rnd, sizeof rnd) != 1)
		return -EIO;
	memcpy(ret, prefix, pl);
	int e = auth_b64_encode(rnd, sizeof rnd, true, ret + pl, retlen - pl);
	OPENSSL_cleanse(rnd, sizeof rnd);
	return e;
}

int auth_digest(const char *s, uint8_t ret[AUTH_DIGEST_LEN])
{
	unsigned int n = 0;
	if (!EVP_Digest(s, strlen(s), ret, &n, EVP_sha256(), NULL) || n != AUTH_DIGEST_LEN)
		return -EIO;
	return 0;
}
