/* tierd's upload thread (decision 0035): takes the recordings recorderd hands over
 * (their open file descriptors), copies each to the store with the S3 client (one PUT up
 * to one part size, else a multipart upload that resumes an upload id it is given),
 * checks the object with HEAD, and reports each step back as a message for recorderd,
 * which the loop thread sends. It also deletes the objects of deleted recordings. One job at a time; at most
 * TIER_QUEUE_MAX wait. */
#ifndef TIER_UPLOAD_H
#define TIER_UPLOAD_H

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "keeppeek.pb.h"
#include "s3.h"

#define TIER_QUEUE_MAX       16   /* jobs waiting behind the one being uploaded */
#define TIER_CONNECT_MS      5000 /* connecting to the store */
#define TIER_LOW_SPEED_BYTES 1024 /* a request slower than this many bytes a second ... */
#define TIER_LOW_SPEED_SECS  10   /* ... for this long ends (a stalled OSD answers nothing) */

struct tier_job {
	int remove; /* delete the object (and abort upload_id), not copy */
	uint64_t recording;
	char key[S3_KEY_MAX];
	uint64_t size;
	char upload_id[S3_UPLOAD_ID_MAX]; /* "": a new upload */
	int fd;                           /* owned by the job (-1: a delete) */
	struct tier_job *next;
};

/* What the thread reports: one Envelope (TierProgress, TierUploaded, TierFailed or
 * TierDeleted). */
typedef void (*tier_report_fn)(const kp_Envelope *env);

/* Starts the thread with client (owned by it from now on) and parts of part_size bytes;
 * report runs on loop's thread. */
int tier_upload_start(uv_loop_t *loop, struct s3_client *client, size_t part_size, tier_report_fn report);
/* Queues job, a copy (its fd taken over) or a delete; -EBUSY when TIER_QUEUE_MAX wait
 * already, and then the caller keeps the fd. Jobs run in the order they came, so a
 * delete sent after a copy of the same object runs after it. */
int tier_upload_push(const struct tier_job *job);
/* Whether fd is a regular file of size bytes, as a copy's must be (its part count and
 * last part's length are computed from the size): NULL, or why not. */
const char *tier_upload_check_fd(int fd, uint64_t size);
/* Drops every waiting job and asks the running one to stop after its current request
 * (recorderd's link dropped: it sends them again from its journal). */
void tier_upload_cancel_all(void);
/* Stops the thread (after its current request) and frees everything. */
void tier_upload_stop(void);
/* Jobs waiting or running. */
unsigned tier_upload_pending(void);

#endif
