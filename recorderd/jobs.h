/* Catalog work that webd (publish, delete) and cameras (motion alarms) ask for, run on
 * the commit thread (commit.c) so that it shares the group commit: every job waiting
 * when the thread wakes (at once, not after the commit interval) goes into one
 * transaction, after the JPEG files it references are written and fdatasync'ed, and
 * whose event records and tombstones are appended to the event log (event_log.h) with
 * one write and one fdatasync before it commits. The finished jobs go back to the loop
 * thread (events.c), which answers and fans out. */
#ifndef KP_REC_JOBS_H
#define KP_REC_JOBS_H

#include <stddef.h>
#include <stdint.h>

#include "catalog.h"
#include "catalog_events.h"
#include "keeppeek.pb.h"

enum rec_job_kind { REC_JOB_EVENT, REC_JOB_DELETE };
enum rec_job_state { REC_JOB_PENDING, REC_JOB_DONE, REC_JOB_FAILED };

struct rec_job {
	struct rec_job *next;
	enum rec_job_kind kind;
	kp_Peer asker; /* kp_Peer_PEER_NONE: nobody waits (camera alarm) */
	uint32_t query_id;

	/* REC_JOB_EVENT */
	uint32_t camera_id;
	kp_EventRecord ev; /* committed_ms set by the commit thread */
	uint8_t *jpeg;     /* malloc'ed, jpeg_len bytes; NULL: none */
	size_t jpeg_len;
	kp_EventKeyframe keyframes[2]; /* the links stored with it, set by the commit thread */
	pb_size_t nkeyframes;
	uint8_t *pb; /* ev as stored (nanopb), malloc'ed by the commit thread; NULL: not kept */
	size_t pb_len;

	/* REC_JOB_DELETE: malloc'ed (a DeleteRequest holds up to 128 ids: a job of each
	 * publication would otherwise carry, and clear, its room) */
	kp_DeleteRequest *del;

	/* the result, set by the commit thread */
	int wrote;                /* its JPEG (if any) is on disk: it went into the transaction */
	enum rec_job_state state; /* REC_JOB_PENDING until the commit thread decides */
	kp_CatalogResult result;  /* when failed: CONFLICT, FAILED, UNAVAILABLE */
	char code[32];            /* error code when failed */
	char why[200];            /* a sentence when failed */
	uint8_t *body;            /* a delete's DeleteResult record (catalog_records.h), malloc'ed */
	size_t body_len;
	int64_t commit_us; /* time from push to durable commit */
	int64_t pushed_mono_us;
};

/* The JPEG of an event revision, relative to data_dir: events/<2 hex>/<id>-<rev>.jpg
 * (the hex is a hash of the id, so that no directory grows past ~1/256 of the events). */
void rec_event_jpeg_path(const char *id, uint32_t revision, char *out, size_t cap);
/* Its thumbnail cache file: the same with .thumb.jpg. */
void rec_event_thumb_path(const char *id, uint32_t revision, char *out, size_t cap);
/* Its record file as older catalogs wrote it (event_record.h): the same with .ev. */
void rec_event_record_path(const char *id, uint32_t revision, char *out, size_t cap);

/* fsync(2) of the directory dir below data_dirfd (so that new or removed names in it
 * are durable): 0 or a negative errno. */
int rec_fsync_dir(int data_dirfd, const char *dir);

struct rec_evlog;
/* Commit thread: runs the jobs (a list), filling in each one's result; their records
 * and tombstones go to log. */
void rec_jobs_run(struct cat *cat, int data_dirfd, struct rec_evlog *log, struct rec_job *list);
/* After a transaction whose records and tombstones were logged but that did not
 * commit: tombstones for the records in ended (not stored after all), then the stored
 * revision of each of ids logged again (the tombstones logged for them did not
 * happen), written and synced. Logs what failed. */
int rec_evlog_restore(struct rec_evlog *log, struct cat *cat, const kp_EventRecord *const *ended, size_t nended,
		      const char (*ids)[CAT_EVENT_ID_MAX + 1], size_t nids);
void rec_job_free(struct rec_job *j);
/* A committed event's EventCommitted (its record and keyframe links) as nanopb encodes
 * it, from the record's bytes kept at commit (j->pb) without encoding the record
 * again; -ENOENT when they were not kept, -ENOSPC when cap is short. */
int rec_job_committed_encode(const struct rec_job *j, uint8_t *out, size_t cap, size_t *ret_len);

#endif
