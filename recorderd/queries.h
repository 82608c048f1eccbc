/* recorderd's answers to webd and rtcd (docs/queries.md): coverage snapshots and
 * recording lists from the catalog, event search and event parts, media spans as
 * descriptors plus byte ranges (MediaOpen -> MediaPiece), and its own metrics. Each is
 * answered on the loop thread with one read transaction: every one reads summaries or
 * a bounded page of rows, never a scan of fragments. Publications and deletes go to
 * events.c (they wait for a commit). */
#ifndef KP_REC_QUERIES_H
#define KP_REC_QUERIES_H

#include "catalog.h"
#include "worker.h"

#define REC_RECORDINGS_DEFAULT 1000
#define REC_RECORDINGS_MAX     10000
#define REC_ANSWER_JSON_MAX    (16 * 1024 * 1024)

void rec_queries_open(struct kp_worker *w, struct cat *cat, int data_dirfd);
void rec_queries_close(void);
/* A frame from webd or rtcd. */
void rec_query_frame(kp_Peer from, struct kp_ipc_frame *f);

#endif
