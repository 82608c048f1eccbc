/* A lane of tierd (decision 0035): one thread with its own S3 client and buffer, taking
 * jobs from a bounded queue in order, and the reports every lane hands to the loop
 * thread (one list and one uv_async for all lanes). A job whose generation was cancelled
 * (recorderd's link dropped) stops after its current request and reports nothing:
 * recorderd sends it again. tierd has two lanes, copies and deletes (upload.c) and
 * fetches for playback (fetch.c), so that a read never waits behind a copy. */
#ifndef TIER_LANE_H
#define TIER_LANE_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "keeppeek.pb.h"
#include "s3.h"

#define TIER_QUEUE_MAX 16 /* jobs waiting behind the running one, per lane */

enum tier_job_kind { TIER_JOB_COPY, TIER_JOB_REMOVE, TIER_JOB_FETCH };

struct tier_job {
	enum tier_job_kind kind;
	uint64_t recording;
	char key[S3_KEY_MAX];
	uint64_t size;                    /* a copy's bytes */
	char upload_id[S3_UPLOAD_ID_MAX]; /* a copy's or delete's multipart upload ("": none) */
	int fd;                           /* owned by the job (-1: a delete) */
	uint64_t offset;                  /* a fetch's range ... */
	uint32_t length;
	uint32_t fetch;     /* ... recorderd's id of it ... */
	uint8_t expect[16]; /* ... and the bytes its range must begin with */
	size_t expect_len;
	char etag[40]; /* ... and, when set, the MD5 of the whole object it is (longer: refused) */
};

struct tier_lane;
/* Runs one job on the lane's thread; gen is for tier_lane_post and tier_lane_cancelled. */
typedef void (*tier_lane_run_fn)(struct tier_lane *l, const struct tier_job *job, unsigned gen);
/* What a lane reports, on the loop's thread: one Envelope for recorderd. */
typedef void (*tier_report_fn)(const kp_Envelope *env);

struct tier_queued;
struct tier_lane {
	const char *name;
	tier_lane_run_fn run;
	struct s3_client *client;
	unsigned char *buf;
	size_t buf_len;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct tier_queued *head, *tail;
	unsigned nqueued, running, stop, gen;
	int started;
};

/* Sets up the reports of every lane (once, before the first lane starts). */
int tier_lanes_init(uv_loop_t *loop, tier_report_fn report);
/* Frees what is left of the reports (after every lane stopped). */
void tier_lanes_done(void);
/* Starts l's thread with client (owned by the lane from now on) and a buffer of buf_len
 * bytes. */
int tier_lane_start(struct tier_lane *l, const char *name, tier_lane_run_fn run, struct s3_client *client,
		    size_t buf_len);
/* Queues a copy of job (its fd taken over); -EBUSY when TIER_QUEUE_MAX wait already,
 * and then the caller keeps the fd. */
int tier_lane_push(struct tier_lane *l, const struct tier_job *job);
/* Drops every waiting job and asks the running one to stop after its current request. */
void tier_lane_cancel_all(struct tier_lane *l);
/* Jobs waiting or running. */
unsigned tier_lane_pending(struct tier_lane *l);
/* Whether the job of generation gen was cancelled (or the lane stops). */
int tier_lane_cancelled(struct tier_lane *l, unsigned gen);
/* Hands env to the loop thread, dropped there if gen was cancelled meanwhile. */
void tier_lane_post(struct tier_lane *l, unsigned gen, const kp_Envelope *env);
/* Stops the thread (after its current request) and frees the client and buffer. */
void tier_lane_stop(struct tier_lane *l);

#endif
