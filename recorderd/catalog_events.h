/* Events in the catalog (docs/catalog.md, "Events"): the latest revision of each event
 * by its publisher's id, the time indexes (all cameras, and per camera) for search and
 * retention, the search terms and the event->keyframe links, all kept in step by
 * cat_event_put and cat_event_delete in the caller's write transaction. */
#ifndef KP_REC_CATALOG_EVENTS_H
#define KP_REC_CATALOG_EVENTS_H

#include <stdint.h>

#include "catalog.h"
#include "keeppeek.pb.h"

#define CAT_EVENT_ID_MAX 64

struct cat_event_row {
	uint64_t seq; /* assigned at each stored revision, from 1: orders equal start times */
	uint32_t revision;
	uint32_t camera_id;
	int64_t start_ms, end_ms, committed_ms;
	uint32_t jpeg_len; /* 0: no JPEG */
	uint32_t pb_len;   /* the EventRecord (nanopb) that follows this header */
};

/* Where an event's keyframe is in one stream: the keyframes row (stream, ms) that
 * belonged to recording_id, fragment seq, when the event was committed. */
struct cat_event_link {
	int64_t ms;
	uint64_t recording_id;
	uint32_t seq;
	uint32_t stream;
};

/* The stored revision of id (0 when none). */
int cat_event_revision(struct cat_txn *t, const char *id, uint32_t *ret);
/* Stores ev (committed_ms set by the caller) as the event's latest revision, replacing
 * the stored one with its terms, time keys and links. -EEXIST when the stored revision
 * is equal or higher. nlinks links (one per stream at most). ret_old (may be NULL) gets
 * the replaced row (revision 0 when there was none). */
int cat_event_put(struct cat_txn *t, uint32_t camera_id, const kp_EventRecord *ev, uint32_t jpeg_len,
		  const struct cat_event_link *links, unsigned nlinks, struct cat_event_row *ret_old);
/* The same, and *ret_pb, *ret_pb_len: ev as the row stores it (nanopb), valid until this
 * thread's next cat_event_put, so that the event log and the fan-out need not encode it
 * again. */
int cat_event_put_pb(struct cat_txn *t, uint32_t camera_id, const kp_EventRecord *ev, uint32_t jpeg_len,
		     const struct cat_event_link *links, unsigned nlinks, struct cat_event_row *ret_old,
		     const uint8_t **ret_pb, size_t *ret_pb_len);
/* ev may be NULL. -ENOENT when unknown. */
int cat_event_get(struct cat_txn *t, const char *id, struct cat_event_row *ret, kp_EventRecord *ev);
/* Removes the event with every key that names it; ret_old gets its row. -ENOENT. */
int cat_event_delete(struct cat_txn *t, const char *id, struct cat_event_row *ret_old);
/* Marks the stored revision as having no JPEG (keeppeekctl check --repair, for a JPEG
 * file that is gone); its keys stay as they are. */
int cat_event_drop_jpeg(struct cat_txn *t, const char *id);
/* -ENOENT when the event has no link for that stream. */
int cat_event_link_get(struct cat_txn *t, uint64_t seq, uint32_t stream, struct cat_event_link *ret);
/* Adds (or replaces) the link of the stored revision with that seq, for l->stream:
 * the keyframe of a GOP indexed after the event's commit (event_link.h). */
int cat_event_link_put(struct cat_txn *t, uint64_t seq, const struct cat_event_link *l);

/* Events by start time then seq, newest first, strictly before (before_ms, before_seq),
 * of one camera (camera_id 0: every camera), until fn returns non-zero. */
int cat_each_event_back(struct cat_txn *t, uint32_t camera_id, int64_t before_ms, uint64_t before_seq,
			int (*fn)(void *arg, int64_t start_ms, uint64_t seq, const char *id), void *arg);
/* Oldest first, every camera. */
int cat_each_event(struct cat_txn *t, int (*fn)(void *arg, int64_t start_ms, uint64_t seq, const char *id), void *arg);
/* Oldest first, every camera, from (from_ms, from_seq) on (itself included). */
int cat_each_event_from(struct cat_txn *t, int64_t from_ms, uint64_t from_seq,
			int (*fn)(void *arg, int64_t start_ms, uint64_t seq, const char *id), void *arg);
/* Every (start, seq) indexed under a term that begins with prefix (exact: equals it). */
int cat_each_term(struct cat_txn *t, const char *prefix, int exact,
		  int (*fn)(void *arg, int64_t start_ms, uint64_t seq), void *arg);
/* The id of the event at (start, seq) in the time index. */
int cat_event_id_at(struct cat_txn *t, int64_t start_ms, uint64_t seq, char id[CAT_EVENT_ID_MAX + 1]);
/* Number of stored events. */
int cat_event_count(struct cat_txn *t, uint64_t *ret);

#endif
