/* tierd's fetches for playback (docs/tier.md, step 7), on their own lane (lane.h) so that
 * a read never waits behind a copy: bytes of an object read with ranged GETs of at most
 * TIER_FETCH_CHUNK bytes and written at the same offsets of the cache file recorderd
 * handed over. The range must begin with the bytes recorderd expects (the fragment's
 * header, which it keeps locally), else nothing is written: the object is not the
 * recording it names. */
#ifndef TIER_FETCH_H
#define TIER_FETCH_H

#include "lane.h"

#define TIER_FETCH_CHUNK (4u * 1024 * 1024)  /* one GET's bytes, the lane's buffer */
#define TIER_FETCH_MAX   (64u * 1024 * 1024) /* one fetch's bytes at most */

/* Starts the fetch lane with client (owned by it from now on). */
int tier_fetch_start(struct s3_client *client);
/* Checks job (a fetch: its fd a regular file, a length of 1..TIER_FETCH_MAX, an offset
 * whose end does not overflow) and queues it: NULL, or why not (*ret_err the errno). */
const char *tier_fetch_push(const struct tier_job *job, int *ret_err);
void tier_fetch_cancel_all(void);
void tier_fetch_stop(void);

#endif
