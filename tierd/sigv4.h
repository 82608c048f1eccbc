/* AWS Signature Version 4 for S3-compatible stores: the canonical request, the string to
 * sign and the Authorization header of one request, from its method, raw path, raw query
 * parameters, headers and payload hash. Pure (OpenSSL's HMAC-SHA256 and SHA-256 only),
 * no logging, no allocation: every output goes into a buffer the caller sized, and a
 * buffer too small is -ENOSPC. Checked against AWS's published SigV4 test suite
 * (test/unit/test_tier_sigv4.c). */
#ifndef TIER_SIGV4_H
#define TIER_SIGV4_H

#include <stddef.h>
#include <stdint.h>

/* Ceilings: a request with more headers or parameters than this is -E2BIG. */
#define SIGV4_MAX_HEADERS 16
#define SIGV4_MAX_PARAMS  8

/* A header as it will be sent (any case; the value is trimmed and its runs of spaces
 * folded for signing, as the suite requires). Headers of the same name are joined with
 * commas in the order given. Every header given is signed. */
struct sigv4_header {
	const char *name;
	const char *value;
};

/* A query parameter, raw (not yet percent-encoded); value "" for "?uploads=". */
struct sigv4_param {
	const char *name;
	const char *value;
};

struct sigv4_request {
	const char *method;
	const char *path; /* raw, starting with '/'; each segment is encoded, '/' kept */
	const struct sigv4_param *params;
	size_t n_params;
	const struct sigv4_header *headers;
	size_t n_headers;
	const char *payload_hash; /* 64 hex digits, or "UNSIGNED-PAYLOAD" */
};

struct sigv4_key {
	const char *access_key;
	const char *secret;
	const char *region;
	const char *service; /* "s3" */
};

/* Percent-encodes src as SigV4 wants (unreserved A-Z a-z 0-9 - . _ ~ kept, the rest %XX
 * in upper case; '/' kept when keep_slash). Writes a NUL-terminated string. */
int sigv4_encode(const char *src, int keep_slash, char *out, size_t cap);

/* The canonical request of req (the suite's .creq), NUL-terminated, and its signed
 * header list ("host;x-amz-date") into signed (may be NULL). */
int sigv4_canonical_request(const struct sigv4_request *req, char *out, size_t cap, char *signed_hdrs,
			    size_t signed_cap);

/* The string to sign (the suite's .sts) for amz_date ("20150830T123600Z"). */
int sigv4_string_to_sign(const struct sigv4_request *req, const struct sigv4_key *key, const char *amz_date, char *out,
			 size_t cap);

/* The Authorization header's value (the suite's .authz). */
int sigv4_authorization(const struct sigv4_request *req, const struct sigv4_key *key, const char *amz_date, char *out,
			size_t cap);

/* Lower-case hex of SHA-256 of len bytes (65 bytes with the NUL). */
void sigv4_sha256_hex(const void *data, size_t len, char out[65]);

/* "20150830T123600Z" for a Unix time in seconds (17 bytes with the NUL). */
int sigv4_amz_date(int64_t unix_s, char out[17]);

#endif
