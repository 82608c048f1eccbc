/* The read path of tiered recordings (docs/tier.md, step 7): a recording marked remote
 * keeps only its headers locally, and the bytes a reader needs are fetched back from the
 * store by tierd (TierFetch, ranged GETs) into a sparse cache file per recording,
 * data_dir/tier-cache/<id>, at the same offsets as in the recording. The cache is bounded
 * in bytes ([tier] cache_size) and evicts the recording read least recently (its file
 * unlinked: a reader that holds it keeps reading). A request that needs bytes not cached
 * is parked, its handler having answered nothing, and run again when its fetches end,
 * or answered with an error when one fails or REC_TIER_WAIT_MS passes: the loop never
 * waits for the store. Everything runs on the loop thread. */
#ifndef KP_REC_TIER_CACHE_H
#define KP_REC_TIER_CACHE_H

#include "catalog.h"
#include "jbuf.h"
#include "keyframe.h"
#include "ipc.h"
#include <uv.h>

#define REC_TIER_CACHED_MAX     256                 /* recordings with bytes in the cache */
#define REC_TIER_RANGES_MAX     64                  /* separate byte ranges of one cached recording */
#define REC_TIER_FETCHES_MAX    16                  /* fetches asked of tierd and not answered */
#define REC_TIER_PARKED_MAX     32                  /* requests waiting for fetches */
#define REC_TIER_REQ_FETCHES    8                   /* fetches one request waits for at once */
#define REC_TIER_FETCH_BYTES    (32u * 1024 * 1024) /* one fetch (adjacent pieces merged) at most */
#define REC_TIER_PLAYBACK_BYTES (8u * 1024 * 1024)  /* fetched for one playback answer at most */
#define REC_TIER_WAIT_MS        8000                /* a parked request is answered within this */
#define REC_TIER_ATTEMPTS       8                   /* runs of one request that may ask for fetches */
#define REC_TIER_PINNED_MAX     64                  /* recordings one request keeps from eviction */

/* Runs a parked request again (err 0), or answers it with an error: err (an errno) and
 * why. env is the request as it came. */
typedef void (*rec_tier_again_fn)(kp_Peer from, const kp_Envelope *env, int err, const char *why);

/* Hands a TierFetch and the cache file (fd, still the caller's) to tierd: 0 or -errno. */
typedef int (*rec_tier_send_fn)(const kp_Envelope *env, int fd);

/* Starts the cache on loop with cache_bytes of room, emptying data_dir/tier-cache of
 * what a previous run left; fetches go to tierd through send. */
int rec_tier_cache_open(uv_loop_t *loop, struct cat *cat, int data_dirfd, uint64_t cache_bytes, rec_tier_send_fn send);
void rec_tier_cache_close(void);

/* Around one request's handler: begin clears what the handler may ask for; end parks the
 * request when the handler asked for fetches (returns 1: the handler answered nothing),
 * or answers it through again with an error when it cannot be parked (returns 1 too);
 * 0 when nothing was asked. attempt is how many times this request was run before. */
void rec_tier_cache_begin(unsigned attempt);
int rec_tier_cache_end(kp_Peer from, const kp_Envelope *env, rec_tier_again_fn again);
/* Forgets what the handler asked for, when it answers the request itself after all (an
 * error of another piece). */
void rec_tier_cache_cancel(void);

/* Bytes [off, off + len) of rec for a reader. 1: rec is local, read its own file. 0: they
 * are cached, *ret_fd is the cache file (the caller closes it). -EINPROGRESS: a fetch is
 * asked or under way for them, the handler answers nothing (rec_tier_cache_end parks it).
 * from_local: the bytes are in the stripped file (the init segment): copied at once.
 * Other errors: -ENOSPC (the cache cannot hold them), -ENOTCONN (tierd is not there),
 * -EBUSY (too many fetches), -errno of the files. */
int rec_tier_cache_need(const struct cat_recording *rec, uint64_t off, uint64_t len, int from_local, int *ret_fd);
/* The whole of an event JPEG whose file went to the store (docs/tier.md, step 8), cached
 * as id (REC_TIER_EVENT_ID of its revision's seq); side is its sidecar. 0 (*ret_fd the
 * cache file, of side->size bytes), -EINPROGRESS or an error as above. tierd checks the
 * bytes against the sidecar's ETag when it is an MD5 (the JPEG went up in one PUT: one of
 * at most part_size, the default 16 MiB being KP_ANALYSIS_JPEG_MAX), and that they begin
 * as a JPEG. */
int rec_tier_cache_need_jpeg(uint64_t id, const struct cat_tier *side, int *ret_fd);
/* A keyframe's bytes into buf, from its recording's file or, remote, from the cache
 * (its whole fragment fetched): 0, -EINPROGRESS as above, or an error. */
int rec_tier_keyframe_read(int data_dirfd, const struct rec_keyframe *k, uint8_t *buf);

/* The error code of an answer to a read of a remote recording that failed with r:
 * cache_full (-ENOSPC), busy (-EBUSY), else store_unavailable. */
const char *rec_tier_error_code(int r);

/* TierFetched from tierd. */
void rec_tier_cache_fetched(const kp_TierFetched *m);
/* tierd's link came up or dropped (every fetch under way fails). */
void rec_tier_cache_link(int up);
/* keeppeek_tier_cache_* and _fetch_* for /metrics. */
void rec_tier_cache_metrics(struct jbuf *b);
/* One line (text) or members (JSON, each preceded by a comma) for tier status. */
void rec_tier_cache_status(struct jbuf *b, int json);

#endif
