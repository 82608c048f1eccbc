/* recorderd's answers to webd and rtcd (docs/queries.md): coverage snapshots and
 * recording lists from the catalog, event search and event parts, media spans as
 * descriptors plus byte ranges (MediaOpen -> MediaPiece), and its own metrics. Each is
 * answered on the loop thread with one read transaction: every one reads summaries or
 * a bounded page of rows, never a scan of fragments. The answers are result codes and
 * protobuf records (reply.h), never HTTP statuses or JSON: webd renders those.
 * Publications and deletes go to events.c (they wait for a commit). */
#ifndef KP_REC_QUERIES_H
#define KP_REC_QUERIES_H

#include "catalog.h"
#include "jbuf.h"
#include "worker.h"

#define REC_RECORDINGS_DEFAULT 1000
#define REC_RECORDINGS_MAX     10000
#define REC_QUERY_ANSWER_MAX   (16 * 1024 * 1024) /* records of one answer (reply.h) */

/* What the answers hand on to the event jobs (events.c) and the recording core
 * (recorder.c): handed in by main.c before the loop runs, so that this file includes
 * neither. Without a table, publications and deletes get 503 and metrics hold only
 * the answer counters. */
struct rec_query_hooks {
	void (*publish)(kp_Peer from, const kp_EventPublish *p, const uint8_t *jpeg, size_t len);
	void (*remove)(kp_Peer from, const kp_DeleteRequest *d);
	void (*core_metrics)(struct jbuf *b, struct cat *cat);
	void (*event_metrics)(struct jbuf *b);
};

void rec_queries_hooks(const struct rec_query_hooks *h);
void rec_queries_open(struct kp_worker *w, struct cat *cat, int data_dirfd);
void rec_queries_close(void);
/* A frame from webd or rtcd. */
void rec_query_frame(kp_Peer from, struct kp_ipc_frame *f);

#endif
