/* Tiering, recorderd's half (docs/tier.md, decision 0035): picks closed recordings
 * older than [tier] after, hands each to tierd as an open descriptor (TierUpload), keeps
 * where each copy stands in the catalog's tier journal (written through the group
 * commit, so that the loop never waits for the catalog's writer) and retries a failed
 * copy with backoff. After a crash of either process the journal says what to send again:
 * a row queued or uploading goes to tierd again with its multipart upload id. The local
 * file stays: nothing reads a recording from the store yet. A recording deleted
 * (retention) leaves its row in the catalog's deletes, and its object is deleted from the
 * store (TierDelete, decision 0036) before the row goes. */
#ifndef KP_REC_TIER_H
#define KP_REC_TIER_H

#include "catalog.h"
#include "commit.h"
#include "ipc.h"
#include "jbuf.h"
#include "worker.h"

#define REC_TIER_INFLIGHT     2      /* recordings handed to tierd at once */
#define REC_TIER_SCAN_MS      1000   /* how often closed recordings are looked for */
#define REC_TIER_SCAN_ROWS    1024   /* recordings one look visits at most */
#define REC_TIER_RETRY_MIN_MS 2000   /* the first retry of a failed copy ... */
#define REC_TIER_RETRY_MAX_MS 600000 /* ... doubling up to this */
#define REC_TIER_DONE_KEEP_MS 30000  /* a copied one's slot waits this long at most for its row */
#define REC_TIER_DELETES      4      /* objects of deleted recordings being deleted at once */
#define REC_TIER_STRIPS       4      /* recordings marked remote, and files stripped, per look */

/* The wait before the next try after attempts failed ones (attempts >= 1): the first
 * REC_TIER_RETRY_MIN_MS, doubling up to REC_TIER_RETRY_MAX_MS. */
uint64_t rec_tier_retry_wait(uint32_t attempts);
/* Hand tierd the copy of id (a recording, or an event JPEG: REC_TIER_EVENT_ID) as row's
 * key, size and upload id, from fd (still the caller's), or the delete of row's key (and
 * upload id): 0 or -errno (-ENOTCONN: tierd is not linked). */
int rec_tier_send_upload(uint64_t id, const struct cat_tier *row, int fd);
int rec_tier_send_delete(uint64_t id, const struct cat_tier *row);
/* Starts tiering when the WorkerConfig has [tier] (else does nothing). */
void rec_tier_open(struct kp_worker *w, struct cat *cat, struct rec_committer *commit, int data_dirfd);
void rec_tier_close(void);
/* TierProgress, TierUploaded, TierFailed, TierDeleted from tierd. */
void rec_tier_frame(struct kp_ipc_frame *f);
/* The link to tierd came up (up = 1) or dropped. */
void rec_tier_link(kp_Peer peer, int up);
/* keeppeekctl tier status: whether tiering is on, the copies and deletes under way, the
 * counts since recorderd started and the catalog's rows, as text or JSON. */
void rec_tier_status(struct jbuf *b, struct cat *cat, int json);
/* keeppeek_tier_* for /metrics (nothing when tiering is off). */
void rec_tier_metrics(struct jbuf *b);

#endif
