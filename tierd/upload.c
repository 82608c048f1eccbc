/* tierd's copies (upload.h): the copy of one recording and the delete of one object, run
 * on the copies lane (lane.c), whose buffer holds one part. */
#include "upload.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kp_io.h"
#include "log.h"

static struct {
	struct tier_lane lane;
	size_t part;
	int bucket_ok;
} U;

static void post(unsigned gen, const kp_Envelope *env)
{
	tier_lane_post(&U.lane, gen, env);
}

static void progress(const struct tier_job *j, unsigned gen, const char *id, uint32_t done, uint32_t parts)
{
	static kp_Envelope env;
	memset(&env, 0, sizeof env);
	env.which_msg = kp_Envelope_tier_progress_tag;
	kp_TierProgress *p = &env.msg.tier_progress;
	p->recording = j->recording;
	snprintf(p->upload_id, sizeof p->upload_id, "%s", id);
	p->parts_done = done;
	p->parts = parts;
	post(gen, &env);
}

static void failed(const struct tier_job *j, unsigned gen, int r, const char *why, int forget)
{
	static kp_Envelope env;
	memset(&env, 0, sizeof env);
	env.which_msg = kp_Envelope_tier_failed_tag;
	kp_TierFailed *f = &env.msg.tier_failed;
	f->recording = j->recording;
	f->error = (uint32_t)-r;
	snprintf(f->why, sizeof f->why, "%s", why && why[0] ? why : strerror(-r));
	f->forget_upload = forget;
	kp_warn("recording %llu (%s): upload failed: %s (%s)%s", (unsigned long long)j->recording, j->key, f->why,
		strerror(-r), forget ? "; its upload id is given up" : "");
	post(gen, &env);
}

static void uploaded(const struct tier_job *j, unsigned gen, const char *etag)
{
	static kp_Envelope env;
	memset(&env, 0, sizeof env);
	env.which_msg = kp_Envelope_tier_uploaded_tag;
	kp_TierUploaded *u = &env.msg.tier_uploaded;
	u->recording = j->recording;
	snprintf(u->key, sizeof u->key, "%s", j->key);
	u->size = j->size;
	snprintf(u->etag, sizeof u->etag, "%s", etag);
	kp_info("recording %llu: %s stored, %llu bytes, ETag %s", (unsigned long long)j->recording, j->key,
		(unsigned long long)j->size, etag);
	post(gen, &env);
}

/* The object at the job's key has our size and ETag (HEAD). */
static int verify(const struct tier_job *j, const char *etag, struct s3_result *res)
{
	uint64_t size;
	char have[S3_ETAG_MAX];
	int r = s3_head(U.lane.client, j->key, &size, have, res);
	if (r < 0)
		return r;
	if (size != j->size || strcmp(have, etag) != 0) {
		snprintf(res->why, sizeof res->why, "the store holds %llu bytes with ETag %s, not %llu with %s",
			 (unsigned long long)size, have, (unsigned long long)j->size, etag);
		return -EBADMSG;
	}
	return 0;
}

static size_t part_len(const struct tier_job *j, size_t i)
{
	uint64_t off = (uint64_t)i * U.part;
	return j->size - off < U.part ? (size_t)(j->size - off) : U.part;
}

/* Each part's number, size and MD5 read from the file (for s3_mpu_completed). */
static int describe_parts(const struct tier_job *j, struct s3_part *parts, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		size_t len = part_len(j, i);
		int r = kp_pread_all(j->fd, U.lane.buf, len, (uint64_t)i * U.part);
		if (r < 0)
			return r;
		parts[i].number = (uint32_t)(i + 1);
		parts[i].size = len;
		s3_md5_hex(U.lane.buf, len, parts[i].etag);
	}
	return 0;
}

static void run_single(const struct tier_job *j, unsigned gen)
{
	struct s3_result res = {0};
	char etag[S3_ETAG_MAX];
	int r = kp_pread_all(j->fd, U.lane.buf, (size_t)j->size, 0);
	if (r < 0) {
		failed(j, gen, r, "reading the recording failed", 0);
		return;
	}
	r = s3_put(U.lane.client, j->key, U.lane.buf, (size_t)j->size, etag, &res);
	if (r == 0)
		r = verify(j, etag, &res);
	if (r < 0)
		failed(j, gen, r, res.why, 0);
	else
		uploaded(j, gen, etag);
}

/* The upload id the job names, if the store still has it: -ENOENT when it is gone and
 * the object is not its completion (start anew), 1 when the object is (done, etag set). */
static int resume(const struct tier_job *j, struct s3_part *parts, size_t n, struct s3_part *have, size_t *nhave,
		  char etag[S3_ETAG_MAX], struct s3_result *res)
{
	int r = s3_mpu_list(U.lane.client, j->key, j->upload_id, have, n, nhave, res);
	if (r == -E2BIG) {
		*nhave = 0; /* more parts than ours: none of them is trusted, each is sent again */
		return 0;
	}
	if (r != -ENOENT)
		return r;
	/* Gone: a completion whose answer never came may have completed it. */
	r = describe_parts(j, parts, n);
	if (r == 0)
		r = s3_mpu_completed(U.lane.client, j->key, parts, n, etag, res);
	return r == 0 ? 1 : r;
}

static void run_multipart(const struct tier_job *j, unsigned gen)
{
	struct s3_result res = {0};
	char etag[S3_ETAG_MAX], id[S3_UPLOAD_ID_MAX];
	size_t n = (size_t)((j->size + U.part - 1) / U.part), nhave = 0;
	int r;
	if (n > S3_PARTS_MAX) {
		failed(j, gen, -EFBIG, "more than 10000 parts of part_size", 1);
		return;
	}
	struct s3_part *parts = calloc(n, sizeof *parts), *have = calloc(n, sizeof *have);
	if (!parts || !have) {
		failed(j, gen, -ENOMEM, "no memory for the part list", 0);
		goto out;
	}
	snprintf(id, sizeof id, "%s", j->upload_id);
	if (id[0]) {
		r = resume(j, parts, n, have, &nhave, etag, &res);
		if (r == 1) {
			kp_info("recording %llu: upload %.16s... had completed before",
				(unsigned long long)j->recording, id);
			r = verify(j, etag, &res);
			if (r < 0)
				failed(j, gen, r, res.why, 1);
			else
				uploaded(j, gen, etag);
			goto out;
		}
		if (r == -ENOENT) {
			kp_notice("recording %llu: upload %.16s... is gone from the store; starting a new one",
				  (unsigned long long)j->recording, id);
			id[0] = '\0';
		} else if (r < 0) {
			failed(j, gen, r, res.why, r == -EBADMSG);
			goto out;
		} else {
			kp_info("recording %llu: resuming upload %.16s..., %zu parts on the store",
				(unsigned long long)j->recording, id, nhave);
		}
	}
	if (!id[0]) {
		r = s3_mpu_initiate(U.lane.client, j->key, id, &res);
		if (r < 0) {
			failed(j, gen, r, res.why, 0);
			goto out;
		}
		nhave = 0;
		kp_info("recording %llu: multipart upload of %zu parts begun: %s", (unsigned long long)j->recording, n,
			id);
		progress(j, gen, id, 0, (uint32_t)n);
	}
	for (size_t i = 0; i < n; i++) {
		if (tier_lane_cancelled(&U.lane, gen))
			goto out;
		size_t len = part_len(j, i);
		r = kp_pread_all(j->fd, U.lane.buf, len, (uint64_t)i * U.part);
		if (r < 0) {
			failed(j, gen, r, "reading the recording failed", 0);
			goto out;
		}
		parts[i].number = (uint32_t)(i + 1);
		parts[i].size = len;
		s3_md5_hex(U.lane.buf, len, parts[i].etag);
		int kept = 0;
		/* A part the store holds is kept only when it is ours byte for byte (its ETag is
		 * our MD5); another is replaced (a PUT of the same number). */
		for (size_t k = 0; k < nhave && !kept; k++)
			kept = have[k].number == parts[i].number && have[k].size == len &&
			       strcmp(have[k].etag, parts[i].etag) == 0;
		if (!kept) {
			char got[S3_ETAG_MAX];
			r = s3_mpu_part(U.lane.client, j->key, id, parts[i].number, U.lane.buf, len, got, &res);
			if (r < 0) {
				failed(j, gen, r, res.why, 0);
				goto out;
			}
		}
		progress(j, gen, id, (uint32_t)(i + 1), (uint32_t)n);
	}
	r = s3_mpu_complete(U.lane.client, j->key, id, parts, n, etag, &res);
	if (r == -ENOENT) /* a retried completion that had completed */
		r = s3_mpu_completed(U.lane.client, j->key, parts, n, etag, &res);
	if (r == 0)
		r = verify(j, etag, &res);
	if (r < 0)
		failed(j, gen, r, res.why, r == -EBADMSG);
	else
		uploaded(j, gen, etag);
out:
	free(parts);
	free(have);
}

/* The object of a deleted recording, and an upload of it that may be unfinished; a
 * missing one is success (s3.c). */
static void run_delete(const struct tier_job *j, unsigned gen)
{
	struct s3_result res = {0};
	int r = j->upload_id[0] ? s3_mpu_abort(U.lane.client, j->key, j->upload_id, &res) : 0;
	if (r == 0)
		r = s3_delete(U.lane.client, j->key, &res);
	static kp_Envelope env;
	memset(&env, 0, sizeof env);
	env.which_msg = kp_Envelope_tier_deleted_tag;
	kp_TierDeleted *d = &env.msg.tier_deleted;
	d->recording = j->recording;
	if (r < 0) {
		d->error = (uint32_t)-r;
		snprintf(d->why, sizeof d->why, "%s", res.why[0] ? res.why : strerror(-r));
		kp_warn("recording %llu (%s): delete failed: %s (%s)", (unsigned long long)j->recording, j->key, d->why,
			strerror(-r));
	}
	post(gen, &env);
}

static void run(struct tier_lane *l, const struct tier_job *j, unsigned gen)
{
	(void)l;
	if (j->kind == TIER_JOB_REMOVE) {
		run_delete(j, gen);
		return;
	}
	if (!U.bucket_ok) {
		/* Made when missing. Keys allowed to write objects but not to make buckets (a
		 * common policy) are answered 403: the bucket is taken to exist, and a PUT to a
		 * missing one fails with its own error. */
		struct s3_result res = {0};
		int r = s3_bucket_create(U.lane.client, &res);
		if (r == -EACCES)
			kp_notice("making the bucket was refused (%s); copying into it as it is", res.why);
		else if (r < 0) {
			failed(j, gen, r, res.why, 0);
			return;
		}
		U.bucket_ok = 1;
	}
	if (j->size <= U.part)
		run_single(j, gen);
	else
		run_multipart(j, gen);
}

int tier_upload_start(struct s3_client *client, size_t part_size)
{
	U.part = part_size;
	return tier_lane_start(&U.lane, "copies", run, client, part_size);
}

const char *tier_upload_check_fd(int fd, uint64_t size)
{
	struct stat st;
	if (fstat(fd, &st) < 0)
		return "the descriptor cannot be examined";
	if (!S_ISREG(st.st_mode))
		return "the descriptor is not a regular file";
	if ((uint64_t)st.st_size != size)
		return "the file is not of the size given";
	return NULL;
}

int tier_upload_push(const struct tier_job *job)
{
	return tier_lane_push(&U.lane, job);
}

void tier_upload_cancel_all(void)
{
	tier_lane_cancel_all(&U.lane);
}

unsigned tier_upload_pending(void)
{
	return tier_lane_pending(&U.lane);
}

void tier_upload_stop(void)
{
	tier_lane_stop(&U.lane);
	U.bucket_ok = 0;
}
