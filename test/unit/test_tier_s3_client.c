/* tierd/s3.c before the network: the configuration it refuses, and each ceiling of a
 * request at its bound and one past it (a PUT or part of 64 MiB, part numbers 1..10000,
 * 1..10000 parts in a completion, keys of 511 bytes). A request within its bounds goes
 * to a loopback port nobody listens on and ends in ECONNREFUSED, which shows it passed
 * the check; one past the bound never gets there. The requests against a real store are
 * test/integration/test_tier_s3.py's. */
#include "test.h"

#include <errno.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "s3.h"

static char endpoint[64];

/* A loopback port that refuses: bound, then closed. */
static void pick_refusing_port(void)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(a);
	CHECK(fd >= 0);
	CHECK_EQ(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	CHECK_EQ(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	snprintf(endpoint, sizeof(endpoint), "http://127.0.0.1:%u", ntohs(a.sin_port));
	close(fd);
}

static struct s3_conf conf_of(const char *ep, const char *bucket)
{
	return (struct s3_conf){ep, "us-east-1", bucket, "AK", "SECRET", 2000, 2000, 0, 0};
}

static void test_conf(void)
{
	struct s3_client *c = NULL;
	const char *bad_ep[] = {"ftp://h", "h:80", "http://", "http://h/path", "http://u@h", "http://h ?", NULL};
	for (int i = 0; bad_ep[i]; i++) {
		struct s3_conf k = conf_of(bad_ep[i], "keeppeek");
		CHECK_EQ(s3_client_new(&k, &c), -EINVAL);
	}
	const char *bad_bucket[] = {"", "ab", "Upper", "a_b", "a/b", NULL};
	for (int i = 0; bad_bucket[i]; i++) {
		struct s3_conf k = conf_of("http://127.0.0.1:1", bad_bucket[i]);
		CHECK_EQ(s3_client_new(&k, &c), -EINVAL);
	}
	struct s3_conf k = conf_of("http://127.0.0.1:1", "keeppeek");
	k.secret = NULL;
	CHECK_EQ(s3_client_new(&k, &c), -EINVAL);
	k = conf_of("https://store.example:8443", "keep.peek-1");
	CHECK_EQ(s3_client_new(&k, &c), 0);
	s3_client_free(c);
	s3_client_free(NULL);
}

static void test_ceilings(void)
{
	struct s3_conf k = conf_of(endpoint, "keeppeek");
	struct s3_client *c;
	struct s3_result res;
	char etag[S3_ETAG_MAX];
	static struct s3_part parts[S3_PARTS_MAX + 1];
	CHECK_EQ(s3_client_new(&k, &c), 0);

	unsigned char *big = calloc(1, (size_t)S3_PART_MAX + 1);
	CHECK(big != NULL);
	CHECK_EQ(s3_put(c, "k", big, S3_PART_MAX, etag, &res), -ECONNREFUSED);
	CHECK_EQ(s3_put(c, "k", big, (size_t)S3_PART_MAX + 1, etag, &res), -E2BIG);
	CHECK_EQ(s3_mpu_part(c, "k", "u", 1, big, S3_PART_MAX, etag, &res), -ECONNREFUSED);
	CHECK_EQ(s3_mpu_part(c, "k", "u", 1, big, (size_t)S3_PART_MAX + 1, etag, &res), -EINVAL);
	CHECK_EQ(s3_mpu_part(c, "k", "u", S3_PARTS_MAX, big, 1, etag, &res), -ECONNREFUSED);
	CHECK_EQ(s3_mpu_part(c, "k", "u", S3_PARTS_MAX + 1, big, 1, etag, &res), -EINVAL);
	CHECK_EQ(s3_mpu_part(c, "k", "u", 0, big, 1, etag, &res), -EINVAL);
	free(big);

	char key[S3_KEY_MAX + 1];
	memset(key, 'k', S3_KEY_MAX - 1);
	key[S3_KEY_MAX - 1] = '\0';
	CHECK_EQ(s3_delete(c, key, &res), -ECONNREFUSED);
	key[S3_KEY_MAX - 1] = 'k';
	key[S3_KEY_MAX] = '\0';
	CHECK_EQ(s3_delete(c, key, &res), -EINVAL);
	CHECK_EQ(s3_delete(c, "", &res), -EINVAL);

	for (uint32_t i = 0; i <= S3_PARTS_MAX; i++) {
		parts[i].number = i + 1;
		snprintf(parts[i].etag, sizeof(parts[i].etag), "%032x", i);
	}
	CHECK_EQ(s3_mpu_complete(c, "k", "u", parts, S3_PARTS_MAX, etag, &res), -ECONNREFUSED);
	CHECK_EQ(s3_mpu_complete(c, "k", "u", parts, S3_PARTS_MAX + 1, etag, &res), -EINVAL);
	CHECK_EQ(s3_mpu_complete(c, "k", "u", parts, 0, etag, &res), -EINVAL);
	struct s3_part desc[2] = {parts[1], parts[0]};
	CHECK_EQ(s3_mpu_complete(c, "k", "u", desc, 2, etag, &res), -EINVAL);
	struct s3_part notmd5 = {.number = 1, .etag = "xyz"};
	CHECK_EQ(s3_mpu_complete(c, "k", "u", &notmd5, 1, etag, &res), -EPROTO);

	unsigned char buf[8];
	size_t got;
	CHECK_EQ(s3_get(c, "k", 0, 0, buf, &got, &res), -EINVAL);
	CHECK_EQ(s3_get(c, "k", UINT64_MAX, 2, buf, &got, &res), -EINVAL);
	CHECK_EQ(s3_get(c, "k", UINT64_MAX - 1, 2, buf, &got, &res), -ECONNREFUSED);
	CHECK_STR_CONTAINS(res.why, "cannot connect");
	s3_client_free(c);
}

/* The ETag of a multipart object, as S3 and RGW compute it (the values RGW answered for
 * the 3-part object of test_tier_s3.py are checked there; this is the arithmetic). */
static void test_multipart_etag(void)
{
	struct s3_part p[2] = {{.number = 1}, {.number = 2}};
	char out[S3_ETAG_MAX], a[33];
	s3_md5_hex("", 0, a);
	CHECK_STR_EQ(a, "d41d8cd98f00b204e9800998ecf8427e");
	memcpy(p[0].etag, a, 33);
	memcpy(p[1].etag, a, 33);
	CHECK_EQ(s3_multipart_etag(p, 2, out), 0);
	/* MD5 of the 16 bytes d41d8cd9...427e twice, then "-2" (Python: hashlib.md5(d + d)). */
	CHECK_STR_EQ(out, "5873dd45edd01f09c1ef2e7819369e8e-2");
	CHECK_EQ(s3_multipart_etag(p, 0, out), -EINVAL);
}

/* A name pinned to an address (tierd's [tier] endpoint, resolved by keeppeekd) goes to
 * that address without a lookup: the refusing loopback port answers for a name that
 * resolves nowhere (.invalid, RFC 6761), and without the pin the same name fails to
 * resolve. An address that is no IP literal is refused. */
static void test_pinned_address(void)
{
	const char *port = strrchr(endpoint, ':') + 1;
	char ep[96];
	snprintf(ep, sizeof(ep), "http://store.invalid:%s", port);
	struct s3_client *c = NULL;
	struct s3_result res;
	uint64_t size;
	char etag[S3_ETAG_MAX];
	struct s3_conf k = conf_of(ep, "keeppeek");
	k.address = "127.0.0.1";
	CHECK_EQ(s3_client_new(&k, &c), 0);
	CHECK_EQ(s3_head(c, "a", &size, etag, &res), -ECONNREFUSED);
	s3_client_free(c);
	k.address = NULL;
	CHECK_EQ(s3_client_new(&k, &c), 0);
	int r = s3_head(c, "a", &size, etag, &res);
	CHECK(r < 0 && r != -ECONNREFUSED);
	s3_client_free(c);
	k.address = "store.example";
	CHECK_EQ(s3_client_new(&k, &c), -EINVAL);
	k.address = "::1";
	CHECK_EQ(s3_client_new(&k, &c), 0);
	s3_client_free(c);
}

int main(void)
{
	pick_refusing_port();
	RUN(test_conf);
	RUN(test_ceilings);
	RUN(test_multipart_etag);
	RUN(test_pinned_address);
	return TEST_EXIT();
}
