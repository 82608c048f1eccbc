/* tierd/sigv4.c against AWS's published Signature Version 4 test suite and the S3 API
 * reference's examples (tier_sigv4_vectors.h): the canonical request, the string to sign
 * and the Authorization header of each, byte for byte; then the ceilings (one header and
 * one parameter past them, a buffer one byte short) and the encoding. */
#include "test.h"
#include "tier_sigv4_vectors.h"

#include <errno.h>

static const struct sigv4_key suite_key = {"AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "us-east-1",
					   "service"};
static const struct sigv4_key s3_key = {"AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "us-east-1",
					"s3"};

static void request_of(const struct sigv4_vector *v, struct sigv4_request *req, char hash[65])
{
	sigv4_sha256_hex(v->body, strlen(v->body), hash);
	*req = (struct sigv4_request){v->method, v->path, v->params, v->n_params, v->headers, v->n_headers, hash};
}

static void test_published_vectors(void)
{
	for (size_t i = 0; i < sizeof(sigv4_vectors) / sizeof(sigv4_vectors[0]); i++) {
		const struct sigv4_vector *v = &sigv4_vectors[i];
		const struct sigv4_key *key = v->s3 ? &s3_key : &suite_key;
		const char *date = v->s3 ? "20130524T000000Z" : SUITE_DATE;
		struct sigv4_request req;
		char hash[65], creq[4096], sts[1024], authz[1024];
		request_of(v, &req, hash);
		fprintf(stderr, "  %s\n", v->name);
		CHECK_EQ(sigv4_canonical_request(&req, creq, sizeof(creq), NULL, 0), 0);
		CHECK_STR_EQ(creq, v->creq);
		CHECK_EQ(sigv4_string_to_sign(&req, key, date, sts, sizeof(sts)), 0);
		CHECK_STR_EQ(sts, v->sts);
		CHECK_EQ(sigv4_authorization(&req, key, date, authz, sizeof(authz)), 0);
		CHECK_STR_EQ(authz, v->authz);
	}
}

/* A one-bit change anywhere that is signed changes the signature. */
static void test_signature_binds_request(void)
{
	const struct sigv4_vector *v = &sigv4_vectors[0];
	struct sigv4_request req;
	char hash[65], a[512], b[512];
	request_of(v, &req, hash);
	CHECK_EQ(sigv4_authorization(&req, &suite_key, SUITE_DATE, a, sizeof(a)), 0);
	req.path = "/x";
	CHECK_EQ(sigv4_authorization(&req, &suite_key, SUITE_DATE, b, sizeof(b)), 0);
	CHECK(strcmp(a, b) != 0);
	req.path = "/";
	req.payload_hash = "UNSIGNED-PAYLOAD";
	CHECK_EQ(sigv4_authorization(&req, &suite_key, SUITE_DATE, b, sizeof(b)), 0);
	CHECK(strcmp(a, b) != 0);
	req.payload_hash = hash;
	CHECK_EQ(sigv4_authorization(&req, &suite_key, "20150830T123601Z", b, sizeof(b)), 0);
	CHECK(strcmp(a, b) != 0);
}

static void test_ceilings(void)
{
	struct sigv4_header h[SIGV4_MAX_HEADERS + 1];
	struct sigv4_param p[SIGV4_MAX_PARAMS + 1];
	char out[8192], authz[512];
	for (size_t i = 0; i <= SIGV4_MAX_HEADERS; i++)
		h[i] = (struct sigv4_header){"X-A", "b"};
	for (size_t i = 0; i <= SIGV4_MAX_PARAMS; i++)
		p[i] = (struct sigv4_param){"a", "b"};
	struct sigv4_request req = {"GET", "/", p, SIGV4_MAX_PARAMS, h, SIGV4_MAX_HEADERS, EMPTY_SHA256};
	CHECK_EQ(sigv4_canonical_request(&req, out, sizeof(out), NULL, 0), 0);
	req.n_headers++;
	CHECK_EQ(sigv4_canonical_request(&req, out, sizeof(out), NULL, 0), -E2BIG);
	req.n_headers--;
	req.n_params++;
	CHECK_EQ(sigv4_canonical_request(&req, out, sizeof(out), NULL, 0), -E2BIG);
	req.n_params--;

	/* Exactly enough room, then one byte less. */
	size_t need = strlen(out) + 1;
	CHECK_EQ(sigv4_canonical_request(&req, out, need, NULL, 0), 0);
	CHECK_EQ(sigv4_canonical_request(&req, out, need - 1, NULL, 0), -ENOSPC);
	CHECK_EQ(sigv4_authorization(&req, &suite_key, SUITE_DATE, authz, sizeof(authz)), 0);
	need = strlen(authz) + 1;
	CHECK_EQ(sigv4_authorization(&req, &suite_key, SUITE_DATE, authz, need - 1), -ENOSPC);

	/* A parameter too long to encode, a path without its slash, a bad date. */
	char longv[600];
	memset(longv, 'a', sizeof(longv) - 1);
	longv[sizeof(longv) - 1] = '\0';
	struct sigv4_param lp = {"a", longv};
	struct sigv4_request bad = {"GET", "/", &lp, 1, NULL, 0, EMPTY_SHA256};
	CHECK_EQ(sigv4_canonical_request(&bad, out, sizeof(out), NULL, 0), -E2BIG);
	bad = (struct sigv4_request){"GET", "x", NULL, 0, NULL, 0, EMPTY_SHA256};
	CHECK_EQ(sigv4_canonical_request(&bad, out, sizeof(out), NULL, 0), -EINVAL);
	bad.path = "/";
	CHECK_EQ(sigv4_authorization(&bad, &suite_key, "2015-08-30", authz, sizeof(authz)), -EINVAL);
}

static void test_encoding(void)
{
	char out[64];
	CHECK_EQ(sigv4_encode("cam 1/2024+x=y", 1, out, sizeof(out)), 0);
	CHECK_STR_EQ(out, "cam%201/2024%2Bx%3Dy");
	CHECK_EQ(sigv4_encode("a/b", 0, out, sizeof(out)), 0);
	CHECK_STR_EQ(out, "a%2Fb");
	CHECK_EQ(sigv4_encode("abc", 0, out, 4), 0);
	CHECK_EQ(sigv4_encode("abc", 0, out, 3), -ENOSPC);
	CHECK_EQ(sigv4_encode(" ", 0, out, 3), -ENOSPC);

	char date[17];
	CHECK_EQ(sigv4_amz_date(1440938160, date), 0);
	CHECK_STR_EQ(date, SUITE_DATE);
	CHECK_EQ(sigv4_amz_date(1369353600, date), 0);
	CHECK_STR_EQ(date, "20130524T000000Z");
}

int main(void)
{
	RUN(test_published_vectors);
	RUN(test_signature_binds_request);
	RUN(test_ceilings);
	RUN(test_encoding);
	return TEST_EXIT();
}
