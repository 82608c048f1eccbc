/* The LMDB catalog: one environment at data_dir/catalog with named sub-databases for
 * cameras, streams, recordings (and per stream by start time), fragments, keyframes,
 * coverage summaries and counters (meta); events are in catalog_events.h. Only this
 * file and catalog_events.c talk to LMDB. Writes happen in one transaction per group commit (commit.c), recovery
 * or retention; a write transaction stays on the thread that began it. Layout and
 * reasons: docs/catalog.md. */
#ifndef KP_REC_CATALOG_H
#define KP_REC_CATALOG_H

#include <stddef.h>
#include <stdint.h>

#include "coverage.h"

#define CAT_PATH_MAX 160

/* The layout version this build reads and writes (meta/version). 2: events keyed by
 * their publisher's id, with revisions, terms and keyframe links; version 1 stored
 * camera alarms only (see cat_open_full). */
#define CAT_SCHEMA_VERSION 2

struct cat;
struct cat_txn;

struct cat_recording {
	uint64_t id;
	uint32_t stream_id;
	uint32_t codec; /* enum kp_codec */
	uint16_t width, height;
	uint32_t open; /* still being written: recovery checks its tail */
	int64_t start_ms, end_ms;
	uint64_t bytes; /* file offset after the last indexed fragment */
	uint32_t fragments;
	uint32_t flags; /* CAT_REC_* */
	/* Wall time of the fragments: anchor_ms + (anchor_offset + tfdt) / 90 ms, so that
	 * consecutive fragments and files of one continuous run meet exactly. */
	int64_t anchor_ms;
	uint64_t anchor_offset;  /* 90 kHz from the run's first keyframe to this file's */
	char path[CAT_PATH_MAX]; /* relative to data_dir */
};

/* Its media is in the object store only (docs/tier.md): the local file keeps the init
 * segment and each fragment's header, and playback reads the rest back through the
 * read cache. It then counts nothing towards total_bytes. */
#define CAT_REC_REMOTE 1u

struct cat_fragment {
	uint64_t recording_id;
	uint32_t seq;
	uint32_t samples;
	int64_t start_ms, end_ms;
	uint64_t base_time; /* 90 kHz, tfdt */
	uint64_t duration;  /* 90 kHz */
	uint64_t offset;    /* prft + moof + mdat */
	uint64_t length;
	uint64_t keyframe_offset; /* the first sample's bytes, when it is a keyframe */
	uint32_t keyframe_length; /* 0: the fragment does not start at a keyframe */
	uint32_t reserved;
};

struct cat_keyframe {
	uint64_t recording_id;
	uint64_t offset;
	uint32_t length;
	uint32_t seq;
};

/* What opening the catalog found and changed. */
struct cat_open_report {
	uint64_t found_version; /* meta/version as found; 0: a new catalog */
	uint32_t version;       /* CAT_SCHEMA_VERSION */
	int created;            /* the catalog was empty and got CAT_SCHEMA_VERSION */
	/* Migrated from version 1: the version 1 rows dropped (camera alarms and their time
	 * index, a layout that cannot be converted); everything else is kept. */
	int migrated;
	uint64_t dropped_events, dropped_event_times;
	/* When opening failed in LMDB: the call and LMDB's own words for it. */
	char error[96];
};

/* Opens (creating) the environment in dir with a map of map_size bytes. A catalog of a
 * newer version than CAT_SCHEMA_VERSION is not changed at all: -EPROTONOSUPPORT, with
 * found_version set in ret_report (which may be NULL, and is also set on success). */
int cat_open_full(const char *dir, size_t map_size, struct cat_open_report *ret_report, struct cat **ret);
int cat_open(const char *dir, size_t map_size, struct cat **ret);
/* A catalog being built from scratch (a rebuild): commits are not synced, cat_sync makes
 * everything committed durable at once. */
int cat_open_bulk(const char *dir, size_t map_size, struct cat **ret);
int cat_sync(struct cat *c);
void cat_close(struct cat *c);

int cat_begin(struct cat *c, int write, struct cat_txn **ret);
/* Commits (durably: LMDB syncs its data file before the meta page) and frees t. */
int cat_commit(struct cat_txn *t);
void cat_abort(struct cat_txn *t);

/* The id of a camera, creating it (and updating its retention) when needed. */
int cat_camera(struct cat_txn *t, const char *name, uint32_t retention_days, uint32_t *ret_id);
/* -ENOENT when the camera is unknown. */
int cat_camera_lookup(struct cat_txn *t, const char *name, uint32_t *ret_id, uint32_t *ret_retention_days);

/* The next unused recording id (larger than every id in the catalog). */
int cat_next_recording_id(struct cat_txn *t, uint64_t *ret_id);

/* Indexes a fragment of rec (created, open, when it is not yet in the catalog), adds its
 * keyframe and its coverage, and moves the recording's end and byte count. */
int cat_add_fragment(struct cat_txn *t, const struct cat_recording *rec, const struct cat_fragment *f);
/* Marks a recording complete (no longer open). */
int cat_close_recording(struct cat_txn *t, uint64_t id);

int cat_get_recording(struct cat_txn *t, uint64_t id, struct cat_recording *ret);
int cat_get_fragment(struct cat_txn *t, uint64_t recording_id, uint32_t seq, struct cat_fragment *ret);

/* Removes a recording with its fragments, keyframes and coverage. */
int cat_delete_recording(struct cat_txn *t, uint64_t id, struct cat_recording *ret_deleted);

/* Calls fn for every recording in id order (oldest first) until fn returns non-zero
 * (which is returned; 1 stops without error). */
int cat_each_recording(struct cat_txn *t, int (*fn)(void *arg, const struct cat_recording *r), void *arg);
/* The same from the recording id from_id on. */
int cat_each_recording_from(struct cat_txn *t, uint64_t from_id, int (*fn)(void *arg, const struct cat_recording *r),
			    void *arg);
/* Recordings of one stream starting in [from_ms, to_ms), in start order. */
int cat_each_stream_recording(struct cat_txn *t, uint32_t stream_id, int64_t from_ms, int64_t to_ms,
			      int (*fn)(void *arg, const struct cat_recording *r), void *arg);
/* Fragments of one recording in sequence order. */
int cat_each_fragment(struct cat_txn *t, uint64_t recording_id, int (*fn)(void *arg, const struct cat_fragment *f),
		      void *arg);
/* Every fragment row of recording_id, in seq order, as a malloc'ed array (*ret, free it;
 * NULL and 0 when there is none). */
int cat_fragments_of(struct cat_txn *t, uint64_t recording_id, struct cat_fragment **ret, size_t *ret_n);

/* The newest keyframe of a stream at or before ms; -ENOENT when none. */
int cat_keyframe_at(struct cat_txn *t, uint32_t stream_id, int64_t ms, int64_t *ret_ms, struct cat_keyframe *ret);

/* The oldest keyframe of a stream at or after ms; -ENOENT when none. */
int cat_keyframe_from(struct cat_txn *t, uint32_t stream_id, int64_t ms, int64_t *ret_ms, struct cat_keyframe *ret);
/* The newest recording of a stream that starts before ms; -ENOENT when none. */
int cat_stream_recording_before(struct cat_txn *t, uint32_t stream_id, int64_t ms, struct cat_recording *ret);
/* Bytes of the catalog's data file in use. */
int cat_size(struct cat *c, uint64_t *ret_bytes);
/* A consistent, compacted copy of the whole environment's data file written to fd, from
 * one read transaction of its own (writers go on); the file is synced. */
int cat_copy_to(struct cat *c, int fd);
/* The structure of the data file under a read transaction of its own (catalog_verify.h):
 * 0 sound, -EBADMSG damaged (ret->why says where). Writers go on meanwhile. */
struct cat_verify_report;
int cat_verify(struct cat *c, struct cat_verify_report *ret);
/* How many recordings the catalog holds. */
int cat_recording_count(struct cat_txn *t, uint64_t *ret);

int cat_coverage(struct cat_txn *t, uint32_t stream_id, struct rec_cov *ret);
/* Covered milliseconds of the stored bucket starting at bucket_ms (0 when none). */
int cat_coverage_bucket(struct cat_txn *t, uint32_t stream_id, int64_t bucket_ms, int64_t *ret_ms);

/* Calls fn for every camera (name, id, retention days) until fn returns non-zero. */
int cat_each_camera(struct cat_txn *t, int (*fn)(void *arg, const char *name, uint32_t id, uint32_t days), void *arg);
/* The newest recording id of a stream (0 when none). */
int cat_stream_last_recording(struct cat_txn *t, uint32_t stream_id, uint64_t *ret_id);

/* A counter or flag in meta (0 when absent), and setting one. */
int cat_meta_get(struct cat_txn *t, const char *name, uint64_t *ret);
int cat_meta_set(struct cat_txn *t, const char *name, uint64_t v);

/* Bytes of all indexed recordings. */
int cat_total_bytes(struct cat_txn *t, uint64_t *ret);

/* Every stream id with a row in streams, in order, until fn returns non-zero. */
int cat_each_stream(struct cat_txn *t, int (*fn)(void *arg, uint32_t stream_id), void *arg);
/* The keyframe rows of one stream in time order. */
int cat_each_keyframe(struct cat_txn *t, uint32_t stream_id,
		      int (*fn)(void *arg, int64_t ms, const struct cat_keyframe *k), void *arg);
/* The stored coverage buckets of one stream starting in [from_ms, to_ms), in order. */
int cat_each_coverage_bucket(struct cat_txn *t, uint32_t stream_id, int64_t from_ms, int64_t to_ms,
			     int (*fn)(void *arg, int64_t bucket_ms, int64_t covered_ms), void *arg);

/* The tier journal (sub-database tier, docs/tier.md, decision 0035): where the copy of
 * each recording to the object store stands. Removed with its recording. */
/* queued -> uploading -> uploaded (the copy verified) -> remote (the recording's row says
 * CAT_REC_REMOTE, committed in the same transaction) -> stripped (the local file holds
 * headers only). */
enum cat_tier_state {
	CAT_TIER_QUEUED = 1,
	CAT_TIER_UPLOADING = 2,
	CAT_TIER_UPLOADED = 3,
	CAT_TIER_REMOTE = 4,
	CAT_TIER_STRIPPED = 5
};

struct cat_tier {
	uint32_t state; /* enum cat_tier_state */
	uint32_t attempts;
	uint32_t parts_done, parts;
	uint64_t size;
	int64_t queued_ms;      /* wall time it was picked */
	int64_t done_ms;        /* wall time the store's copy was verified */
	char key[CAT_PATH_MAX]; /* the object key: the recording's path */
	char upload_id[256];    /* a multipart upload under way ("": none) */
	char etag[80];          /* the object's, once uploaded */
};

/* -ENOENT when the recording has no row. */
int cat_tier_get(struct cat_txn *t, uint64_t id, struct cat_tier *ret);
int cat_tier_put(struct cat_txn *t, uint64_t id, const struct cat_tier *row);
/* Marks recording id CAT_REC_REMOTE (no more bytes of total_bytes); nothing when it is
 * already. */
int cat_mark_remote(struct cat_txn *t, uint64_t id);
/* How many rows the tier journal and the deletes hold (LMDB's count: no walk). */
int cat_tier_counts(struct cat_txn *t, uint64_t *ret_rows, uint64_t *ret_deletes);
/* The deletes (decision 0036): the tier rows of deleted recordings, whose objects (or
 * unfinished uploads) the store may still hold. cat_delete_recording moves a recording's
 * row here; the row goes when tierd reports the object gone. */
int cat_tier_delete_put(struct cat_txn *t, uint64_t id, const struct cat_tier *row);
int cat_tier_delete_get(struct cat_txn *t, uint64_t id, struct cat_tier *ret);
int cat_tier_delete_done(struct cat_txn *t, uint64_t id);
/* The deletes from recording id from_id on, in id order, until fn returns non-zero (1
 * stops without error). */
int cat_each_tier_delete(struct cat_txn *t, uint64_t from_id,
			 int (*fn)(void *arg, uint64_t id, const struct cat_tier *row), void *arg);
/* The tier journal's rows likewise. */
int cat_each_tier(struct cat_txn *t, uint64_t from_id, int (*fn)(void *arg, uint64_t id, const struct cat_tier *row),
		  void *arg);

/* Repairs (keeppeekctl check --repair). Each keeps the byte total and, except the
 * last two, the coverage in step. */
/* Drops the fragments of a recording from sequence from_seq on, with their keyframes;
 * a recording left without fragments is deleted (its file is left to recovery). */
int cat_truncate_recording(struct cat_txn *t, uint64_t id, uint32_t from_seq);
/* Forgets that fragment (recording_id, seq) starts with a keyframe: its keyframe row goes. */
int cat_drop_keyframe(struct cat_txn *t, uint64_t recording_id, uint32_t seq);
/* Removes the keyframe row of a stream at ms (one naming no fragment). */
int cat_delete_keyframe_row(struct cat_txn *t, uint32_t stream_id, int64_t ms);
/* Rewrites a stream's coverage summaries from its fragments. */
int cat_rebuild_coverage(struct cat_txn *t, uint32_t stream_id);
/* The bytes of the recordings kept locally (a remote one's media is in the store), what
 * total_bytes must say; cat_recount_bytes sets it to that. */
int cat_sum_local_bytes(struct cat_txn *t, uint64_t *ret);
int cat_recount_bytes(struct cat_txn *t);

#endif
