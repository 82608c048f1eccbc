/* tierd's fetches (fetch.h). */
#include "fetch.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "kp_io.h"
#include "log.h"

static struct tier_lane F;

static void report(struct tier_lane *l, const struct tier_job *j, unsigned gen, int r, const char *why)
{
	static kp_Envelope env;
	memset(&env, 0, sizeof env);
	env.which_msg = kp_Envelope_tier_fetched_tag;
	kp_TierFetched *m = &env.msg.tier_fetched;
	m->recording = j->recording;
	m->fetch = j->fetch;
	if (r < 0) {
		m->error = (uint32_t)-r;
		snprintf(m->why, sizeof m->why, "%s", why && why[0] ? why : strerror(-r));
		kp_warn("recording %llu (%s): fetching %u bytes at %llu failed: %s", (unsigned long long)j->recording,
			j->key, (unsigned)j->length, (unsigned long long)j->offset, m->why);
	}
	tier_lane_post(l, gen, &env);
}

/* Whether the MD5 of what ctx took is etag (lower-case hex, as the store gives it). */
static int md5_is(EVP_MD_CTX *ctx, const char *etag)
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned n = 0;
	char hex[2 * EVP_MAX_MD_SIZE + 1];
	if (EVP_DigestFinal_ex(ctx, md, &n) != 1)
		return 0;
	for (unsigned i = 0; i < n; i++)
		snprintf(hex + 2 * i, 3, "%02x", md[i]);
	return n == 16 && strcmp(hex, etag) == 0;
}

static void run(struct tier_lane *l, const struct tier_job *j, unsigned gen)
{
	struct s3_result res = {0};
	uint64_t done = 0;
	int r = 0;
	const char *why = NULL;
	EVP_MD_CTX *md5 = NULL;
	if (j->etag[0] && (!(md5 = EVP_MD_CTX_new()) || EVP_DigestInit_ex(md5, EVP_md5(), NULL) != 1)) {
		r = -ENOMEM;
		why = "no memory to check the object's MD5";
	}
	while (r == 0 && done < j->length) {
		if (tier_lane_cancelled(l, gen)) {
			EVP_MD_CTX_free(md5);
			return;
		}
		size_t want = j->length - done < l->buf_len ? (size_t)(j->length - done) : l->buf_len;
		size_t got = 0;
		r = s3_get(l->client, j->key, j->offset + done, want, l->buf, &got, &res);
		why = res.why;
		if (r == 0 && got != want) {
			r = -ENODATA;
			why = "the object is shorter than the recording";
		}
		if (r == 0 && done == 0 &&
		    memcmp(l->buf, j->expect, j->expect_len < want ? j->expect_len : want) != 0) {
			r = -EBADMSG;
			why = "the object's bytes there are not the fragment's header";
		}
		if (r == 0 && md5 && EVP_DigestUpdate(md5, l->buf, want) != 1) {
			r = -ENOMEM;
			why = "computing the object's MD5 failed";
		}
		if (r == 0) {
			r = kp_pwrite_all(j->fd, l->buf, want, j->offset + done);
			why = "writing the cache file failed";
		}
		done += want;
	}
	if (r == 0 && md5 && !md5_is(md5, j->etag)) {
		r = -EBADMSG;
		why = "the object's MD5 is not the ETag it was stored with";
	}
	EVP_MD_CTX_free(md5);
	report(l, j, gen, r, r < 0 ? why : NULL);
}

int tier_fetch_start(struct s3_client *client)
{
	return tier_lane_start(&F, "fetches", run, client, TIER_FETCH_CHUNK);
}

const char *tier_fetch_push(const struct tier_job *j, int *ret_err)
{
	struct stat st;
	uint64_t end;
	*ret_err = EINVAL;
	if (!j->key[0])
		return "no object key";
	if (fstat(j->fd, &st) < 0 || !S_ISREG(st.st_mode))
		return "the descriptor is not a regular file";
	if (!j->length || j->length > TIER_FETCH_MAX)
		return "a fetch is 1 byte to 64 MiB";
	if (__builtin_add_overflow(j->offset, (uint64_t)j->length, &end) || end > INT64_MAX)
		return "the range ends past any file";
	if (j->etag[0] && (j->offset || strlen(j->etag) != 32 || strspn(j->etag, "0123456789abcdef") != 32))
		return "an ETag is checked on a whole object, as 32 lower-case hex digits";
	int r = tier_lane_push(&F, j);
	*ret_err = -r;
	return r == 0 ? NULL : r == -EBUSY ? "tierd's fetch queue is full" : strerror(-r);
}

void tier_fetch_cancel_all(void)
{
	tier_lane_cancel_all(&F);
}

void tier_fetch_stop(void)
{
	tier_lane_stop(&F);
}
