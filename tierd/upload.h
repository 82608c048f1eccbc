/* tierd's copies (decision 0035), on their own lane (lane.h): takes the recordings
 * recorderd hands over (their open file descriptors), copies each to the store with the
 * S3 client (one PUT up to one part size, else a multipart upload that resumes an upload
 * id it is given), checks the object with HEAD, and reports each step back as a message
 * for recorderd. It also deletes the objects of deleted recordings, in the same order.
 * One job at a time; at most TIER_QUEUE_MAX wait. */
#ifndef TIER_UPLOAD_H
#define TIER_UPLOAD_H

#include <stddef.h>
#include <stdint.h>
#include "lane.h"

#define TIER_CONNECT_MS      5000 /* connecting to the store */
#define TIER_LOW_SPEED_BYTES 1024 /* a request slower than this many bytes a second ... */
#define TIER_LOW_SPEED_SECS  10   /* ... for this long ends (a stalled OSD answers nothing) */

/* Starts the copies lane with client (owned by it from now on) and parts of part_size
 * bytes (tier_lanes_init first). */
int tier_upload_start(struct s3_client *client, size_t part_size);
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
