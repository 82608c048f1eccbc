/* Pictures of events that have no JPEG of their own (issue 20, decision 0021) and of a
 * stream at a time (the timeline's hover preview, decision 0025): the keyframe (an
 * event's linked one, sub for the thumbnail, main for the snapshot; at a time the sub
 * stream's at or before it, else the main's) is decoded in the transcoder (a
 * TRANSCODE_PICTURE job over recorderd's link to it; keeppeekd starts it while
 * recorderd's TranscoderDemand is above 0) and the JPEG answers webd's EventGet or
 * PictureQuery. Thumbnails are kept in a cache in memory (picture_cache.c), least
 * recently used first out, bounded by REC_PICTURE_CACHE_BYTES, swept of the pictures
 * of what retention or a delete removed; snapshots are made for each request. At most
 * KP_TRANSCODE_PICTURE_JOBS jobs are in the transcoder at once (it refuses more), the
 * rest wait here, oldest first, up to REC_PICTURE_PENDING in all. A picture
 * not made (the keyframe did not decode, the transcoder did not answer within
 * REC_PICTURE_WAIT_MS) is an error answer and a count, never more. The picture of an
 * event that has no JPEG and whose GOP is still being written (a camera alarm comes at
 * once; its GOP commits when the next keyframe comes) waits for it, up to
 * REC_PICTURE_GOP_WAITING requests, until REC_PICTURE_GOP_WAIT_MS after the event's
 * start (webd's answer deadline is 30 s: this and REC_PICTURE_WAIT_MS fit in it); then it
 * is a 404 like any event without a picture. Loop thread only, but rec_picture_removed. */
#ifndef KP_REC_PICTURE_H
#define KP_REC_PICTURE_H

#include <stdint.h>

#include "catalog.h"
#include "jbuf.h"
#include "keeppeek.pb.h"
#include "worker.h"

#define REC_PICTURE_CACHE_BYTES (8 * 1024 * 1024) /* thumbnails kept in memory */
#define REC_PICTURE_PENDING     16                /* requests waiting for the transcoder */
#define REC_PICTURE_WAIT_MS     20000             /* its start (KP_TRANSCODER_START_MS) and the decode */
#define REC_PICTURE_GOP_WAITING 32                /* fresh events' pictures waiting for their GOP */
#define REC_PICTURE_GOP_WAIT_MS 8000              /* from the event's start, for its GOP to commit */
#define REC_PICTURE_TICK_MS     250               /* how often waiting pictures are looked at */

/* The worker (sending to the transcoder and the supervisor); called before any other. */
void rec_picture_worker(struct kp_worker *w);
/* Answers webd's EventGet (g->part THUMBNAIL or SNAPSHOT) of the event's stored
 * revision from the cache or through the transcoder, once its GOP is recorded. */
void rec_picture_ask(int data_dirfd, kp_Peer from, const kp_EventGet *g, uint32_t revision);
/* Answers webd's PictureQuery: a thumbnail of the keyframe at or before q->time_ms,
 * with the span of its GOP, from the cache or through the transcoder. */
void rec_picture_at(struct cat *cat, int data_dirfd, kp_Peer from, const kp_PictureQuery *q);
/* The catalog is open (sweeps read it) / about to close (the cache is emptied). */
void rec_picture_open(struct kp_worker *w, struct cat *cat);
void rec_picture_close(void);
/* Retention or a delete removed events or recordings: the loop thread drops their
 * pictures from the cache soon. Any thread, between open and close. */
void rec_picture_removed(void);
/* TranscodeOutput and TranscodeEnded from the transcoder. */
void rec_picture_frame(struct kp_ipc_frame *f);
/* The link to the transcoder came up or was lost. */
void rec_picture_link(kp_Peer peer, int up);
void rec_picture_metrics(struct jbuf *b);

#endif
