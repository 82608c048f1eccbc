/* keeppeek-tierd: copies closed recordings to an S3-compatible store (docs/tier.md,
 * decision 0035). Started by keeppeekd only when [tier] has an endpoint, linked to
 * recorderd only, it sees no file system of KeepPeek's: recorderd hands it each
 * recording as an open descriptor (TierUpload) and is told each step (TierProgress,
 * TierUploaded, TierFailed), which it keeps in its journal; the objects of recordings
 * deleted since are deleted on its word (TierDelete, TierDeleted), and the bytes playback
 * needs of a recording whose local media is gone are read back into the cache file it
 * hands over (TierFetch, TierFetched). It connects to the store's address that keeppeekd
 * resolved, and nowhere else. This file declares the worker and
 * routes the messages to the upload thread (upload.c). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "fetch.h"
#include "kp_limits.h"
#include "log.h"
#include "sandbox.h"
#include "upload.h"
#include "worker.h"

static struct kp_worker *worker;
/* made before confinement, then the lanes' */
static struct s3_client *copy_client, *fetch_client;
static size_t part_size;

static void report(const kp_Envelope *env)
{
	int r = kp_worker_send_peer(worker, kp_Peer_PEER_RECORDERD, env, NULL, 0);
	if (r < 0)
		kp_warn("telling recorderd about an upload failed: %s (it asks again from its journal)", strerror(-r));
}

/* The S3 client from [tier], before confinement: libcurl's and OpenSSL's start read
 * their configuration files. */
static int before_confine(struct kp_worker *w)
{
	const kp_WorkerConfig *cfg = kp_worker_config(w);
	if (!cfg->has_tier || !cfg->tier.endpoint[0]) {
		kp_err("no [tier] endpoint in the configuration; tierd has nothing to do");
		return -EINVAL;
	}
	const kp_TierConfig *t = &cfg->tier;
	if (!t->address[0]) {
		/* keeppeekd resolves it again when it starts tierd after the backoff. */
		kp_err("the address of %s is not known (keeppeekd could not resolve it)", t->endpoint);
		return -EHOSTUNREACH;
	}
	struct s3_conf conf = {
	    .endpoint = t->endpoint,
	    .region = t->region,
	    .bucket = t->bucket,
	    .access_key = t->access_key,
	    .secret = t->secret,
	    .address = t->address,
	    .connect_timeout_ms = TIER_CONNECT_MS,
	    .timeout_ms = (long)t->timeout_secs * 1000,
	    .low_speed_bytes = TIER_LOW_SPEED_BYTES,
	    .low_speed_secs = TIER_LOW_SPEED_SECS,
	};
	int r = s3_client_new(&conf, &copy_client);
	if (r == 0)
		r = s3_client_new(&conf, &fetch_client);
	if (r < 0) {
		kp_err("[tier] endpoint %s, bucket %s: the S3 client refused them: %s", t->endpoint, t->bucket,
		       strerror(-r));
		return r;
	}
	if (t->part_size_mib < 5 || t->part_size_mib > 64) {
		kp_err("[tier] part_size %u MiB is outside 5..64", (unsigned)t->part_size_mib);
		return -EINVAL;
	}
	part_size = (size_t)t->part_size_mib * KP_MIB;
	kp_info("copying recordings to %s (at %s), bucket %s, parts of %u MiB", t->endpoint, t->address, t->bucket,
		(unsigned)t->part_size_mib);
	return 0;
}

static int confined(struct kp_worker *w)
{
	worker = w;
	int r = tier_lanes_init(kp_worker_loop(w), report);
	if (r == 0) {
		r = tier_upload_start(copy_client, part_size);
		if (r == 0)
			copy_client = NULL;
	}
	if (r == 0) {
		r = tier_fetch_start(fetch_client);
		if (r == 0)
			fetch_client = NULL;
	}
	if (r < 0)
		kp_err("starting the copy and fetch threads failed: %s", strerror(-r));
	return r;
}

/* Why a job was not queued: the check's reason, else the queue's. */
static const char *refused_why(int r, const char *why)
{
	return why ? why : r == -EBUSY ? "tierd's queue is full" : strerror(-r);
}

static void on_upload(struct kp_ipc_frame *f)
{
	const kp_TierUpload *m = &f->env->msg.tier_upload;
	struct tier_job j = {.recording = m->recording, .size = m->size, .fd = f->fds[0]};
	snprintf(j.key, sizeof j.key, "%s", m->key);
	snprintf(j.upload_id, sizeof j.upload_id, "%s", m->upload_id);
	/* The size is the descriptor's, not only the message's. */
	const char *why = m->key[0] ? tier_upload_check_fd(j.fd, m->size) : "no object key";
	int r = why ? -EINVAL : tier_upload_push(&j);
	if (r == 0) {
		f->fds[0] = -1; /* the job's now */
		return;
	}
	kp_Envelope env = kp_Envelope_init_zero;
	env.which_msg = kp_Envelope_tier_failed_tag;
	env.msg.tier_failed.recording = m->recording;
	env.msg.tier_failed.error = (uint32_t)-r;
	snprintf(env.msg.tier_failed.why, sizeof env.msg.tier_failed.why, "%s", refused_why(r, why));
	report(&env);
}

static void on_delete(struct kp_ipc_frame *f)
{
	const kp_TierDelete *m = &f->env->msg.tier_delete;
	struct tier_job j = {.kind = TIER_JOB_REMOVE, .recording = m->recording, .fd = -1};
	snprintf(j.key, sizeof j.key, "%s", m->key);
	snprintf(j.upload_id, sizeof j.upload_id, "%s", m->upload_id);
	int r = m->key[0] ? tier_upload_push(&j) : -EINVAL;
	if (r == 0)
		return;
	kp_Envelope env = kp_Envelope_init_zero;
	env.which_msg = kp_Envelope_tier_deleted_tag;
	env.msg.tier_deleted.recording = m->recording;
	env.msg.tier_deleted.error = (uint32_t)-r;
	snprintf(env.msg.tier_deleted.why, sizeof env.msg.tier_deleted.why, "%s",
		 refused_why(r, m->key[0] ? NULL : "no object key"));
	report(&env);
}

static void on_fetch(struct kp_ipc_frame *f)
{
	const kp_TierFetch *m = &f->env->msg.tier_fetch;
	struct tier_job j = {.kind = TIER_JOB_FETCH,
			     .recording = m->recording,
			     .fd = f->fds[0],
			     .offset = m->offset,
			     .length = m->length,
			     .fetch = m->fetch};
	snprintf(j.key, sizeof j.key, "%s", m->key);
	j.expect_len = m->expect.size <= sizeof j.expect ? m->expect.size : sizeof j.expect;
	memcpy(j.expect, m->expect.bytes, j.expect_len);
	snprintf(j.etag, sizeof j.etag, "%s", m->etag);
	int err;
	const char *why = tier_fetch_push(&j, &err);
	if (!why) {
		f->fds[0] = -1; /* the job's now */
		return;
	}
	kp_Envelope env = kp_Envelope_init_zero;
	env.which_msg = kp_Envelope_tier_fetched_tag;
	env.msg.tier_fetched.recording = m->recording;
	env.msg.tier_fetched.fetch = m->fetch;
	env.msg.tier_fetched.error = (uint32_t)err;
	snprintf(env.msg.tier_fetched.why, sizeof env.msg.tier_fetched.why, "%s", why);
	report(&env);
}

static void on_peer_frame(struct kp_worker *w, kp_Peer from, struct kp_ipc_frame *f)
{
	(void)w;
	(void)from;
	if (f->env->which_msg == kp_Envelope_tier_upload_tag)
		on_upload(f);
	else if (f->env->which_msg == kp_Envelope_tier_delete_tag)
		on_delete(f);
	else if (f->env->which_msg == kp_Envelope_tier_fetch_tag)
		on_fetch(f);
}

/* recorderd's jobs end with its link: it sends them again from its journal. */
static void on_peer_lost(struct kp_worker *w, kp_Peer peer)
{
	(void)w;
	(void)peer;
	tier_upload_cancel_all();
	tier_fetch_cancel_all();
}

static void on_stop(struct kp_worker *w)
{
	(void)w;
	tier_upload_stop();
	tier_fetch_stop();
	tier_lanes_done();
	s3_client_free(copy_client);
	s3_client_free(fetch_client);
	copy_client = fetch_client = NULL;
}

static const struct kp_worker_def tierd = {
    .name = "tierd",
    .self = kp_Peer_PEER_TIER,
    .peers = {kp_Peer_PEER_RECORDERD},
    .npeers = 1,
    .fs = KP_WORKER_FS_NONE,
    .read_path = "/etc/ssl/certs", /* the CA bundle of an https:// endpoint */
    .rlimit_as = KP_TIERD_AS,
    .rlimit_nofile = 64,
    .syscalls = KP_SYSCALLS_NET,
    .on_before_confine = before_confine,
    .on_confined = confined,
    .on_peer_frame = on_peer_frame,
    .on_peer_lost = on_peer_lost,
    .on_stop = on_stop,
};

int main(int argc, char **argv)
{
	return kp_worker_main(&tierd, argc, argv);
}
