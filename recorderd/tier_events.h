/* Tiering of event JPEGs (docs/tier.md, step 8; decision 0038), recorderd's half, on the
 * loop thread. A walk over the events, oldest first, finds stored revisions whose JPEG is
 * still local and whose start is older than [tier] after + keep_local; each JPEG is
 * copied to the store in one PUT (TierUpload, its ETag checked by tierd), then its
 * sidecar `<jpeg>.tier` is written and synced and the JPEG removed. Reads fetch it back
 * whole through the read cache (tier_cache.h). A deleted revision's sidecar is retired to
 * tier-deletes/ (tier_local.h), where this module finds it, deletes the object
 * (TierDelete) and then the file. No catalog rows: the files say where each JPEG is, so
 * a crash at any step leaves a step that is done again. */
#ifndef KP_REC_TIER_EVENTS_H
#define KP_REC_TIER_EVENTS_H

#include "catalog.h"
#include "ipc.h"
#include "jbuf.h"
#include "worker.h"

#define REC_TIER_EV_INFLIGHT 2                /* JPEGs handed to tierd at once */
#define REC_TIER_EV_LOOK     256              /* events one look visits at most */
#define REC_TIER_EV_DELETES  4                /* objects of deleted JPEGs being deleted at once */
#define REC_TIER_EV_PASS_MS  (10 * 60 * 1000) /* a walk at the young events starts over after this */

/* age_ms: how old (by start) an event is when its JPEG moves. */
void rec_tier_events_open(struct cat *cat, int data_dirfd, int64_t age_ms);
/* One look: walks on, fills the free slots, looks at tier-deletes, sends what is due. */
void rec_tier_events_look(void);
/* A revision with a JPEG was stored for an event that starts at start_ms: a walk already
 * past that time goes back to it (a new revision of an old event). */
void rec_tier_events_stored(int64_t start_ms);
/* TierProgress, TierUploaded, TierFailed of an event JPEG, TierDeleted of a retired one. */
void rec_tier_events_frame(const kp_Envelope *env);
/* The link to tierd came up or dropped: what was sent is sent again. */
void rec_tier_events_link(int up);
/* keeppeek_tier_events_* for /metrics. */
void rec_tier_events_metrics(struct jbuf *b);
/* One line (text) or members (JSON, each preceded by a comma) for tier status. */
void rec_tier_events_status(struct jbuf *b, int json);

#endif
