/* Unit tests of the supervisor's credential store: scrypt hash and verify (right and
 * wrong password, tampered hashes), base64 round trips, tokens by digest, the files'
 * round trip through a fresh load, refusal of files open to others, and an atomic
 * rewrite that fails leaving the old file and the in-memory tables as they were. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "auth_store.h"
#include "test.h"

static char data_dir[] = "/tmp/kp-auth-test-XXXXXX";
static char auth_dir[4200];

static char *slurp(const char *name)
{
	static char buf[65536];
	char path[4300];
	snprintf(path, sizeof path, "%s/%s", auth_dir, name);
	FILE *f = fopen(path, "re");
	if (!f)
		return NULL;
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = '\0';
	return buf;
}

static void test_hash_verify(void)
{
	char h1[AUTH_HASH_STR_MAX], h2[AUTH_HASH_STR_MAX];
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	CHECK_EQ(auth_hash_password("correct horse", 13, h1, sizeof h1), 0);
	clock_gettime(CLOCK_MONOTONIC, &b);
	fprintf(stderr, "one scrypt hash (ln=%d r=%d p=%d) took %.1f ms\n", AUTH_SCRYPT_LN, AUTH_SCRYPT_R,
		AUTH_SCRYPT_P, (double)(b.tv_sec - a.tv_sec) * 1e3 + (double)(b.tv_nsec - a.tv_nsec) / 1e6);
	CHECK(!strncmp(h1, "$scrypt$ln=15,r=8,p=1$", 22));
	CHECK_EQ(auth_verify_password("correct horse", 13, h1), 0);
	CHECK_EQ(auth_verify_password("correct hors", 12, h1), -EACCES);
	CHECK_EQ(auth_verify_password("correct horsf", 13, h1), -EACCES);
	/* The same password gets a new salt each time. */
	CHECK_EQ(auth_hash_password("correct horse", 13, h2, sizeof h2), 0);
	CHECK(strcmp(h1, h2) != 0);
	CHECK_EQ(auth_verify_password("correct horse", 13, h2), 0);
	/* A changed hash byte fails; malformed and too costly hashes are refused unchecked. */
	char t[AUTH_HASH_STR_MAX];
	snprintf(t, sizeof t, "%s", h1);
	size_t last = strlen(t) - 2;
	t[last] = t[last] == 'A' ? 'B' : 'A';
	CHECK_EQ(auth_verify_password("correct horse", 13, t), -EACCES);
	CHECK_EQ(auth_verify_password("x", 1, "plain"), -EINVAL);
	/* The hash unknown users are checked against: the same format and cost (same length,
	 * same parameters), a real scrypt check that fails, a new one each time. */
	char u1[AUTH_HASH_STR_MAX], u2[AUTH_HASH_STR_MAX];
	CHECK_EQ(auth_hash_unmatchable(u1, sizeof u1), 0);
	CHECK_EQ(auth_hash_unmatchable(u2, sizeof u2), 0);
	CHECK(!strncmp(u1, "$scrypt$ln=15,r=8,p=1$", 22) && strlen(u1) == strlen(h1) && strcmp(u1, u2) != 0);
	CHECK_EQ(auth_verify_password("", 0, u1), -EACCES);
	CHECK_EQ(auth_verify_password("correct horse", 13, u1), -EACCES);
	CHECK_EQ(auth_verify_password("x", 1, "$scrypt$ln=30,r=8,p=1$AAAAAAAAAAAAAAAAAAAAAA$AAAAAAAAAAAAAAAAAAAAAA"),
		 -EINVAL);
	CHECK_EQ(auth_verify_password("x", 1, "$scrypt$ln=15,r=8,p=1$AAAAAAAAAAAAAAAAAAAAAA"), -EINVAL);
	char small[20];
	CHECK_EQ(auth_hash_password("x", 1, small, sizeof small), -ENOSPC);
}

static void test_base64_and_tokens(void)
{
	const uint8_t in[] = {0xfb, 0xff, 0x00, 0x10, 0x83};
	for (size_t n = 0; n <= sizeof in; n++) {
		char s[16];
		uint8_t out[8];
		CHECK_EQ(auth_b64_encode(in, n, true, s, sizeof s), 0);
		CHECK_EQ(auth_b64_decode(s, strlen(s), true, out, sizeof out), (int)n);
		CHECK(!memcmp(in, out, n));
	}
	char s[16];
	CHECK_EQ(auth_b64_encode(in, 3, false, s, sizeof s), 0);
	CHECK(!strcmp(s, "+/8A"));
	CHECK_EQ(auth_b64_encode(in, 3, true, s, sizeof s), 0);
	CHECK(!strcmp(s, "-_8A"));
	uint8_t out[8];
	CHECK_EQ(auth_b64_decode("+/8A", 4, true, out, sizeof out), -EINVAL);
	CHECK_EQ(auth_b64_decode("QR", 2, false, out, sizeof out), -EINVAL); /* leftover bits set */

	char a[AUTH_SECRET_STRMAX], b[AUTH_SECRET_STRMAX];
	CHECK_EQ(auth_random_string(AUTH_TOKEN_PREFIX, a, sizeof a), 0);
	CHECK_EQ(auth_random_string(AUTH_TOKEN_PREFIX, b, sizeof b), 0);
	CHECK_EQ(strlen(a), 3 + 43);
	CHECK(!strncmp(a, "kp_", 3));
	CHECK(strcmp(a, b) != 0);
	CHECK(strspn(a + 3, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_") == 43);
}

static void test_names(void)
{
	CHECK(auth_name_valid("admin"));
	CHECK(auth_name_valid("ci.bot-1@home"));
	CHECK(!auth_name_valid(""));
	CHECK(!auth_name_valid("-rf"));
	CHECK(!auth_name_valid(".hidden"));
	CHECK(!auth_name_valid("two words"));
	CHECK(!auth_name_valid("a\nb"));
	CHECK(!auth_name_valid("0123456789012345678901234567890123"));
	kp_Role r;
	CHECK_EQ(auth_role_parse("viewer", &r), 0);
	CHECK_EQ(r, kp_Role_ROLE_VIEWER);
	CHECK_EQ(auth_role_parse("root", &r), -EINVAL);
}

static void test_round_trip(void)
{
	static struct auth_store st, again;
	char err[512] = "";
	CHECK_EQ(auth_store_open(&st, data_dir, err, sizeof err), 0);
	CHECK_EQ(st.nusers, 0);
	struct stat sb;
	CHECK_EQ(stat(auth_dir, &sb), 0);
	CHECK_EQ(sb.st_mode & 0777, 0700);

	char h[AUTH_HASH_STR_MAX];
	CHECK_EQ(auth_hash_password("password-1", 10, h, sizeof h), 0);
	CHECK_EQ(auth_store_user_add(&st, "alice", kp_Role_ROLE_ADMIN, h), 0);
	CHECK_EQ(auth_store_user_add(&st, "bob", kp_Role_ROLE_VIEWER, h), 0);
	CHECK_EQ(auth_store_user_add(&st, "bob", kp_Role_ROLE_VIEWER, h), -EEXIST);
	CHECK_EQ(auth_store_user_add(&st, "bad name", kp_Role_ROLE_VIEWER, h), -EINVAL);
	CHECK_EQ(auth_store_user_add(&st, "carol", kp_Role_ROLE_NONE, h), -EINVAL);
	char token[AUTH_SECRET_STRMAX];
	uint8_t d[AUTH_DIGEST_LEN];
	CHECK_EQ(auth_random_string(AUTH_TOKEN_PREFIX, token, sizeof token), 0);
	CHECK_EQ(auth_digest(token, d), 0);
	CHECK_EQ(auth_store_token_add(&st, "ci", kp_Role_ROLE_VIEWER, d, 1764470000123), 0);
	CHECK_EQ(auth_store_token_add(&st, "ci", kp_Role_ROLE_VIEWER, d, 1), -EEXIST);

	CHECK_EQ(stat(data_dir, &sb), 0);
	char path[4300];
	snprintf(path, sizeof path, "%s/users", auth_dir);
	CHECK_EQ(stat(path, &sb), 0);
	CHECK_EQ(sb.st_mode & 0777, 0600);
	const char *text = slurp("tokens");
	CHECK(text && !strstr(text, token)); /* only the digest is stored */

	CHECK_EQ(auth_store_open(&again, data_dir, err, sizeof err), 0);
	CHECK_EQ(again.nusers, 2);
	const struct auth_user *u = auth_store_user(&again, "alice");
	CHECK(u && u->role == kp_Role_ROLE_ADMIN && !strcmp(u->hash, h));
	u = auth_store_user(&again, "bob");
	CHECK(u && u->role == kp_Role_ROLE_VIEWER);
	CHECK_EQ(again.ntokens, 1);
	const struct auth_token *t = auth_store_token_match(&again, token);
	CHECK(t && !strcmp(t->name, "ci") && t->role == kp_Role_ROLE_VIEWER && t->created_ms == 1764470000123);
	token[5] ^= 1;
	CHECK(auth_store_token_match(&again, token) == NULL);
	CHECK(auth_store_token_match(&again, "") == NULL);

	CHECK_EQ(auth_store_user_del(&again, "alice"), 0);
	CHECK_EQ(auth_store_user_del(&again, "alice"), -ENOENT);
	CHECK_EQ(auth_store_token_del(&again, "ci"), 0);
	CHECK_EQ(auth_store_token_del(&again, "ci"), -ENOENT);
	CHECK_EQ(auth_store_open(&st, data_dir, err, sizeof err), 0);
	CHECK_EQ(st.nusers, 1);
	CHECK(auth_store_user(&st, "bob") && !auth_store_user(&st, "alice"));
	CHECK_EQ(st.ntokens, 0);
}

/* The temporary file's name is taken by a directory, so the rewrite fails before the
 * rename: the old file is intact and memory is as it was, for add, change and delete. */
static void test_failed_write_keeps_old(void)
{
	static struct auth_store st, again;
	char err[512] = "", h[AUTH_HASH_STR_MAX], tmp[4300];
	CHECK_EQ(auth_store_open(&st, data_dir, err, sizeof err), 0);
	char before[65536];
	snprintf(before, sizeof before, "%s", slurp("users"));
	snprintf(tmp, sizeof tmp, "%s/users.tmp", auth_dir);
	CHECK_EQ(mkdir(tmp, 0700), 0);
	CHECK_EQ(auth_hash_password("password-2", 10, h, sizeof h), 0);
	CHECK(auth_store_user_add(&st, "dave", kp_Role_ROLE_ADMIN, h) < 0);
	CHECK(auth_store_user(&st, "dave") == NULL);
	CHECK(auth_store_user_set_hash(&st, "bob", h) < 0);
	CHECK(strcmp(auth_store_user(&st, "bob")->hash, h) != 0);
	CHECK(auth_store_user_del(&st, "bob") < 0);
	CHECK(auth_store_user(&st, "bob") != NULL);
	CHECK_EQ(st.nusers, 1);
	CHECK(!strcmp(slurp("users"), before));
	CHECK_EQ(rmdir(tmp), 0);
	CHECK_EQ(auth_store_user_set_hash(&st, "bob", h), 0);
	CHECK_EQ(auth_store_open(&again, data_dir, err, sizeof err), 0);
	CHECK(auth_store_user(&again, "bob") && !strcmp(auth_store_user(&again, "bob")->hash, h));
}

static void test_refuses_open_files(void)
{
	static struct auth_store st;
	char err[512] = "", path[4300];
	snprintf(path, sizeof path, "%s/users", auth_dir);
	CHECK_EQ(chmod(path, 0644), 0);
	CHECK_EQ(auth_store_open(&st, data_dir, err, sizeof err), -EPERM);
	CHECK_STR_CONTAINS(err, "open to group or others");
	CHECK_EQ(chmod(path, 0600), 0);
	CHECK_EQ(chmod(auth_dir, 0755), 0);
	CHECK_EQ(auth_store_open(&st, data_dir, err, sizeof err), -EPERM);
	CHECK_EQ(chmod(auth_dir, 0700), 0);
	FILE *f = fopen(path, "we");
	CHECK(f != NULL);
	if (f) {
		fputs("mallory superuser $scrypt$\n", f);
		fclose(f);
	}
	CHECK_EQ(auth_store_open(&st, data_dir, err, sizeof err), -EINVAL);
	CHECK_STR_CONTAINS(err, "entry 1");
}

int main(void)
{
	if (!mkdtemp(data_dir)) {
		perror("mkdtemp");
		return 1;
	}
	snprintf(auth_dir, sizeof auth_dir, "%s/auth", data_dir);
	RUN(test_hash_verify);
	RUN(test_base64_and_tokens);
	RUN(test_names);
	RUN(test_round_trip);
	RUN(test_failed_write_keeps_old);
	RUN(test_refuses_open_files);
	char cmd[4300];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", data_dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", data_dir);
	return TEST_EXIT();
}
