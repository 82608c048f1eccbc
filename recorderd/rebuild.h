/* The catalog against what is on disk: whether data_dir/catalog may be opened at all
 * (before LMDB maps it), and rebuilding it from the files when it may not. Decision:
 * docs/decisions/0003-catalog-rebuild.md. */
#ifndef KP_REC_REBUILD_H
#define KP_REC_REBUILD_H

#include <stddef.h>
#include <stdint.h>

struct cat;

/* The catalog environment, relative to data_dir. */
#define REC_CATALOG_DIR "catalog"

/* Whether the catalog's data file may be handed to LMDB: 0 when it is sound, or absent
 * while the data directory holds no recording or event file (a new catalog). Otherwise
 * why gets the reason (a phrase naming the file) and: -EBADMSG damaged (truncated,
 * zeroed or overwritten pages: catalog_verify.h); -ENOENT absent, or -ENODATA empty,
 * while recordings or events are on disk (a new catalog would know none of them, and
 * start-up recovery and the event sweep would remove them); another -errno when it
 * cannot be read. */
int rec_catalog_assess(int data_dirfd, char *why, size_t cap);

/* Whether data_dir holds a recording file or an event file (1), none (0), or -errno. */
int rec_data_has_files(int data_dirfd);

/* Where a rebuild puts what it cannot index (relative to data_dir): the same relative
 * path below it. Nothing a rebuild finds is deleted. */
#define REC_UNINDEXED_DIR "unindexed"

struct rec_rebuild_result {
	unsigned cameras;               /* camera names found in recordings/ and event records */
	unsigned files;                 /* recordings/<camera>/<main|sub>/<ms>.mp4 files found */
	unsigned recordings;            /* of those, indexed */
	uint64_t fragments;             /* complete fragments indexed */
	unsigned remote;                /* of the recordings, with their media in the store (a sidecar) */
	unsigned files_set_aside;       /* recording files that are not this writer's: moved to unindexed/ */
	unsigned records;               /* event records found (every revision; .ev files and the event log) */
	unsigned tombstones;            /* event log tombstones found (revisions replaced, deleted, expired) */
	unsigned log_segments;          /* event log segments read */
	unsigned log_segments_refused;  /* named like one, with a header that does not check: ignored */
	unsigned log_records_refused;   /* log records naming no valid camera or stream: not restored */
	uint64_t log_bytes_ignored;     /* after the first item that does not check, in every segment */
	unsigned events;                /* events stored: the newest revision with a sound record each */
	unsigned events_jpeg_gone;      /* of those, a record says JPEG but the file is gone: stored without */
	unsigned event_files_set_aside; /* damaged records and JPEGs without a record: to unindexed/ */
	char moved_to[64];              /* the replaced data.mdb's new name in catalog/, "" when none was there */
};

/* Indexes what data_dir holds into cat, an empty catalog (unit-tested): every recording
 * file in start order (its fragments, keyframes and coverage, exactly as recording
 * indexed them: the fragment times come from each file's prft box; files are only
 * read), then the newest revision of every event that has a sound record no tombstone
 * ends (.ev files of older catalogs, then the event log in the order written: event_log.h),
 * oldest commit first, with its JPEG when that is on disk and its keyframe links. Camera ids are
 * given anew (names from the directories and records), recording ids in start order. */
int rec_rebuild_into(struct cat *cat, int data_dirfd, struct rec_rebuild_result *ret);

/* The whole rebuild, with no environment open on data_dir/catalog: a new catalog built
 * in data_dir/catalog.rebuild/ (without a sync per transaction; synced once at the end),
 * the old data.mdb, if any, renamed to data.mdb.<tag>-<UTC time> (never deleted), the new
 * one moved into its place. A rebuild interrupted by a crash leaves at worst no data.mdb
 * (refused at the next start, and rebuilt again). why gets a phrase on failure. */
int rec_rebuild(int data_dirfd, const char *data_dir, size_t map_size, const char *tag, struct rec_rebuild_result *ret,
		char *why, size_t cap);

#endif
