/* The event record log: events/log/<16 hex>.evl segments, what a rebuild of the catalog
 * restores events from (successor of the per-revision .ev files of event_record.h, which
 * stay readable). The commit thread stages, in the order of its transaction, one record
 * per stored event revision and one tombstone per revision it replaces, deletes or lets
 * expire, then writes them with one write and one fdatasync before the transaction
 * commits (jobs.c, retention.c). Segments are appended by one writer only, never after
 * a restart or a failed write (a new segment then), and sealed at
 * REC_EVLOG_SEGMENT_CAP; compaction (event_log_compact.c) removes the oldest ones whose
 * records the catalog no longer stores. Decision: docs/decisions/0023-event-record-log.md.
 *
 * Segment: header "KPEL", format version, segment number (u64), 0 (u32), CRC-32 of the
 * 20 bytes before (REC_EVLOG_HEADER bytes), then items: payload length (u32), kind (u8),
 * three zero bytes, CRC-32 of those 8 bytes and the payload (u32), the payload (an
 * EventRecord, nanopb; a tombstone's has only the event id, revision and committed_ms of
 * the revision it ends). All little-endian. The first item that does not check ends
 * the segment for every reader (a torn tail after a crash mid-append). */
#ifndef KP_REC_EVENT_LOG_H
#define KP_REC_EVENT_LOG_H

#include <stddef.h>
#include <stdint.h>

#include "catalog_events.h"
#include "keeppeek.pb.h"
#include "kp_limits.h"

#define REC_EVLOG_DIR         "events/log"
#define REC_EVLOG_SUFFIX      ".evl"
#define REC_EVLOG_SEGMENT_CAP (8 * KP_MIB) /* a segment is sealed before it grows past this */
#define REC_EVLOG_HEADER      24
#define REC_EVLOG_ITEM_HEADER 12
#define REC_EVLOG_ITEM_MAX    (REC_EVLOG_ITEM_HEADER + kp_EventRecord_size)
#define REC_EVLOG_NAME_MAX    40

enum rec_evlog_kind { REC_EVLOG_RECORD = 1, REC_EVLOG_TOMBSTONE = 2 };

/* ---- format (event_log_format.c: pure, fuzzed) ---- */

/* "events/log/<16 hex>.evl". */
void rec_evlog_segment_path(uint64_t seq, char *out, size_t cap);
/* Whether name is "<16 hex>.evl" (seq > 0); 0 when not. */
int rec_evlog_parse_name(const char *name, uint64_t *ret_seq);
void rec_evlog_header(uint64_t seq, uint8_t out[REC_EVLOG_HEADER]);
/* -EBADMSG when buf does not start with a sound header. */
int rec_evlog_check_header(const uint8_t *buf, size_t len, uint64_t *ret_seq);
/* One item: a record (ev as stored) or a tombstone (ev's event_id, revision and
 * committed_ms only). -ENOSPC when cap is short. */
int rec_evlog_encode(enum rec_evlog_kind kind, const kp_EventRecord *ev, uint8_t *out, size_t cap, size_t *ret_len);
/* The same for a record already encoded (pb, n bytes: kp_EventRecord as nanopb writes
 * it, at most kp_EventRecord_size): the item rec_evlog_encode gives for it. */
int rec_evlog_encode_pb(enum rec_evlog_kind kind, const uint8_t *pb, size_t n, uint8_t *out, size_t cap,
			size_t *ret_len);

struct rec_evlog_item {
	enum rec_evlog_kind kind;
	size_t off, len; /* where the whole item is in the buffer */
};

/* The item at buf[*off]: 0 with *off moved past it and ev decoded (a tombstone's
 * other fields zero); -ENODATA when *off == len (the clean end); -EBADMSG when what
 * is there is not a whole sound item (torn, damaged, foreign): nothing after it is
 * an item. Lengths are checked before any use; len may be anything. */
int rec_evlog_next(const uint8_t *buf, size_t len, size_t *off, struct rec_evlog_item *item, kp_EventRecord *ev);

/* ---- the writer (event_log.c), owned by the commit thread ---- */

struct rec_evlog;

struct rec_evlog_stats {
	uint64_t flushes, records, tombstones, bytes, segments_made;
};

int rec_evlog_new(int data_dirfd, struct rec_evlog **ret);
void rec_evlog_free(struct rec_evlog *l);
/* Stages an item for the next rec_evlog_flush. When the segment would grow past the
 * cap, what is staged is written and synced first and the segment sealed (the items
 * staged after go to a new one). */
int rec_evlog_add(struct rec_evlog *l, enum rec_evlog_kind kind, const kp_EventRecord *ev);
/* A record already encoded (rec_evlog_encode_pb). */
int rec_evlog_add_pb(struct rec_evlog *l, enum rec_evlog_kind kind, const uint8_t *pb, size_t n);
/* An item as read from another segment (compaction): buf holds it whole. */
int rec_evlog_add_raw(struct rec_evlog *l, const uint8_t *item, size_t len);
/* Writes what is staged (one write) and fdatasyncs it; a new segment's directory entry
 * is synced too. On failure the segment is given up (the next flush starts a new one)
 * and nothing staged is kept. 0 when nothing was staged. */
int rec_evlog_flush(struct rec_evlog *l);
/* Drops what is staged. */
void rec_evlog_discard(struct rec_evlog *l);
/* The number of the segment being appended, 0 when none is open. */
uint64_t rec_evlog_open_segment(const struct rec_evlog *l);
void rec_evlog_get_stats(const struct rec_evlog *l, struct rec_evlog_stats *ret);

/* ---- reading ---- */

/* The segment numbers in events/log/, ascending (malloc'ed; *ret NULL when none). */
int rec_evlog_list(int data_dirfd, uint64_t **ret, size_t *ret_n);
/* Reads segment seq whole (at most REC_EVLOG_SEGMENT_CAP + REC_EVLOG_ITEM_MAX bytes;
 * malloc'ed). -EBADMSG when its header is not sound. */
int rec_evlog_read_segment(int data_dirfd, uint64_t seq, uint8_t **ret, size_t *ret_len);

struct rec_evlog_scan {
	unsigned segments, bad_segments; /* read; with a header that does not check */
	uint64_t records, tombstones;
	uint64_t bytes_ignored; /* after the first item that does not check, in every segment */
	uint64_t last;          /* the newest segment number listed */
};

/* Every item of every segment, oldest segment first, in the order written: fn gets
 * the segment, the item (offsets in that segment) and its decoded record; a non-zero
 * return stops. A segment whose items end before its end (torn tail) is logged. */
int rec_evlog_each(int data_dirfd,
		   int (*fn)(void *arg, uint64_t seq, const struct rec_evlog_item *item, const kp_EventRecord *ev),
		   void *arg, struct rec_evlog_scan *ret);
/* The same, of the segments numbered after after only. */
int rec_evlog_each_after(int data_dirfd, uint64_t after,
			 int (*fn)(void *arg, uint64_t seq, const struct rec_evlog_item *item,
				   const kp_EventRecord *ev),
			 void *arg, struct rec_evlog_scan *ret);
/* The revisions the log holds a record of that no tombstone ends (keeppeekctl check),
 * read while compaction may move records on: segments made during the read are read
 * too (event_log_index.c). */
struct rec_evlog_key {
	char id[CAT_EVENT_ID_MAX + 1];
	uint32_t revision;
	int64_t committed_ms;
	uint64_t seg, off; /* where it was written: segment and offset (seg 0: a .ev file) */
	int tombstone;
};
struct rec_evlog_index {
	struct rec_evlog_key *k;
	size_t n, cap;
};
int rec_evlog_index_load(int data_dirfd, struct rec_evlog_index *ret);
int rec_evlog_index_has(const struct rec_evlog_index *x, const char *id, uint32_t revision, int64_t committed_ms);
void rec_evlog_index_free(struct rec_evlog_index *x);
/* The parts, also for rebuild (which adds the old .ev files' records as seg 0): one more
 * key; then sorted by revision and commit in the order written, keeping of each the last
 * item written when it is a record (a tombstone ends it). */
int rec_evlog_index_add(struct rec_evlog_index *x, const kp_EventRecord *ev, uint64_t seg, uint64_t off, int tombstone);
void rec_evlog_index_settle(struct rec_evlog_index *x);

/* The item at off of segment seq (a rebuild reads each record it keeps again). */
int rec_evlog_read_item(int data_dirfd, uint64_t seq, uint64_t off, kp_EventRecord *ev);

/* ---- compaction (event_log_compact.c), on the commit thread ---- */

struct cat;

struct rec_evlog_compact_result {
	unsigned segments_removed;
	uint64_t records_copied, bytes_freed, bytes_ignored;
};

/* The oldest sealed segments, oldest first, at most REC_EVLOG_COMPACT_SEGMENTS per
 * call: one whose records the catalog stores none of is removed; one whose stored
 * records take at most half its bytes has them appended again (to l, synced) and is
 * removed; the first other one stops the call (the segments after it wait for it:
 * tombstones may end records in older segments). */
#define REC_EVLOG_COMPACT_SEGMENTS 4
#define REC_EVLOG_COMPACT_EVERY_MS (60 * 1000) /* commit.c: at most this often, after tombstones */
int rec_evlog_compact(struct rec_evlog *l, struct cat *cat, int data_dirfd, struct rec_evlog_compact_result *ret);

/* At start, before l has written anything: the last REC_EVLOG_RECONCILE_SEGMENTS
 * segments an earlier run wrote, against the catalog. A crash between the log's
 * fdatasync and the transaction's commit leaves records the catalog never stored (their
 * publications were not acknowledged: tombstones for them) and tombstones of revisions
 * it still stores (their records again); a pass is never split over more than two
 * segments. Written and synced; the log and the catalog agree after it. */
#define REC_EVLOG_RECONCILE_SEGMENTS 2

struct rec_evlog_reconcile_result {
	unsigned tombstones, records;
};
int rec_evlog_reconcile(struct rec_evlog *l, struct cat *cat, int data_dirfd, struct rec_evlog_reconcile_result *ret);

#endif
