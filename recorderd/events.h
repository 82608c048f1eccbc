/* Events on the loop thread: EventPublish from webd is checked (event_check.h), its
 * JPEG copied, and handed as a job to the commit thread; camera motion alarms become
 * events the same way (source "camera"). When the commit is durable the asker gets its
 * CatalogReply (a CatalogAck record) and webd an EventCommitted with the JPEG (a lost
 * fan-out is counted, never retried). DeleteRequest goes the same way (a DeleteResult
 * record). At most REC_EVENTS_INFLIGHT jobs and REC_EVENTS_INFLIGHT_BYTES of JPEG wait
 * for a commit; beyond, CATALOG_UNAVAILABLE "busy". */
#ifndef KP_REC_EVENTS_H
#define KP_REC_EVENTS_H

#include "catalog.h"
#include "commit.h"
#include "jbuf.h"
#include "kp_limits.h"
#include "worker.h"

#define REC_EVENTS_INFLIGHT       64
#define REC_EVENTS_INFLIGHT_BYTES (256ull * KP_MIB)

/* arm: called with an analysis event's camera and end, so that a camera recording on
 * events records it (handed in by the recording core, which owns the streams). */
void rec_events_open(struct kp_worker *w, struct cat *cat, struct rec_committer *commit,
		     void (*arm)(const char *camera, int64_t event_end_ms));
/* The committer has stopped (rec_commit_stop): answers the jobs it finished. */
void rec_events_finish(void);
/* Before the committer is freed: no more answers are sent. */
void rec_events_close(void);
void rec_event_publish(kp_Peer from, const kp_EventPublish *p, const uint8_t *jpeg, size_t len);
void rec_event_camera(const kp_CameraEvent *e);
void rec_event_delete(kp_Peer from, const kp_DeleteRequest *d);
/* Prometheus lines of the event counters. */
void rec_events_metrics(struct jbuf *b);

#endif
