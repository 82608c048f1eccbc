/* Publications, camera alarms and deletes on the commit thread (see jobs.h): JPEG files
 * first (all written, then all fdatasync'ed, then each directory fsync'ed once), then one
 * transaction for every job whose records and tombstones go to the event log in the
 * transaction's order, written and synced before it commits, then the files the
 * transaction stopped referencing are unlinked. */
#include "jobs.h"

#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <pb_encode.h>

#include "catalog_events.h"
#include "catalog_keys.h"
#include "catalog_records.h"
#include "event_log.h"
#include "keyframe.h"
#include "kp_io.h"
#include "kp_time.h"
#include "log.h"
#include "tier_local.h"

#define JOB_BODY_MAX (64 * 1024)

static uint8_t id_hash(const char *id)
{
	uint32_t h = 2166136261u;
	for (; *id; id++)
		h = (h ^ (uint8_t)*id) * 16777619u;
	return (uint8_t)(h ^ h >> 8 ^ h >> 16 ^ h >> 24);
}

void rec_event_jpeg_path(const char *id, uint32_t revision, char *out, size_t cap)
{
	snprintf(out, cap, "events/%02x/%s-%u.jpg", id_hash(id), id, (unsigned)revision);
}

void rec_event_thumb_path(const char *id, uint32_t revision, char *out, size_t cap)
{
	snprintf(out, cap, "events/%02x/%s-%u.thumb.jpg", id_hash(id), id, (unsigned)revision);
}

void rec_event_record_path(const char *id, uint32_t revision, char *out, size_t cap)
{
	snprintf(out, cap, "events/%02x/%s-%u.ev", id_hash(id), id, (unsigned)revision);
}

void rec_job_free(struct rec_job *j)
{
	if (!j)
		return;
	free(j->jpeg);
	free(j->body);
	free(j->del);
	free(j->pb);
	free(j);
}

int rec_job_committed_encode(const struct rec_job *j, uint8_t *out, size_t cap, size_t *ret_len)
{
	if (!j->pb)
		return -ENOENT;
	pb_ostream_t o = pb_ostream_from_buffer(out, cap);
	bool ok =
	    pb_encode_tag(&o, PB_WT_STRING, kp_EventCommitted_event_tag) && pb_encode_string(&o, j->pb, j->pb_len);
	for (pb_size_t i = 0; ok && i < j->nkeyframes; i++)
		ok = pb_encode_tag(&o, PB_WT_STRING, kp_EventCommitted_keyframes_tag) &&
		     pb_encode_submessage(&o, kp_EventKeyframe_fields, &j->keyframes[i]);
	if (!ok)
		return -ENOSPC;
	*ret_len = o.bytes_written;
	return 0;
}

static void fail(struct rec_job *j, kp_CatalogResult result, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void fail(struct rec_job *j, kp_CatalogResult result, const char *code, const char *fmt, ...)
{
	j->state = REC_JOB_FAILED;
	j->result = result;
	snprintf(j->code, sizeof j->code, "%s", code);
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(j->why, sizeof j->why, fmt, ap);
	va_end(ap);
}

int rec_fsync_dir(int data_dirfd, const char *dir)
{
	int fd = openat(data_dirfd, dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int r = fsync(fd) < 0 ? -errno : 0;
	close(fd);
	return r;
}

/* events/ and events/<hh>/, creating them (and syncing their parents) when new. */
static int make_dirs(int data_dirfd, const char *path)
{
	char dir[CAT_PATH_MAX];
	snprintf(dir, sizeof dir, "%.9s", path); /* "events/hh" */
	int r = 0;
	if (mkdirat(data_dirfd, "events", 0750) == 0)
		r = rec_fsync_dir(data_dirfd, ".");
	else if (errno != EEXIST)
		return -errno;
	if (r == 0 && mkdirat(data_dirfd, dir, 0750) == 0)
		r = rec_fsync_dir(data_dirfd, "events");
	else if (r == 0 && errno != EEXIST)
		r = -errno;
	return r;
}

/* Creates path and writes the JPEG; the descriptor is returned for the batch's sync. */
static int write_jpeg(int data_dirfd, const struct rec_job *j, const char *path, int *ret_fd)
{
	int r = make_dirs(data_dirfd, path);
	if (r < 0)
		return r;
	int fd = openat(data_dirfd, path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0640);
	if (fd < 0)
		return -errno;
	r = kp_write_all(fd, j->jpeg, j->jpeg_len);
	if (r < 0) {
		close(fd);
		unlinkat(data_dirfd, path, 0);
		return r;
	}
	*ret_fd = fd;
	return 0;
}

/* Before any file is written: the revision rule against the catalog and against the
 * jobs ahead in this batch (the commit thread is the only writer of events, so what
 * this read sees holds until the transaction below). */
static void precheck(struct cat *cat, struct rec_job *list)
{
	struct cat_txn *t;
	int r = cat_begin(cat, 0, &t);
	for (struct rec_job *j = list; j; j = j->next) {
		if (j->kind != REC_JOB_EVENT || j->state)
			continue;
		uint32_t stored = 0;
		if (r == 0)
			r = cat_event_revision(t, j->ev.event_id, &stored);
		if (r < 0) {
			fail(j, kp_CatalogResult_CATALOG_FAILED, "catalog_error", "catalog read failed: %s",
			     strerror(-r));
			continue;
		}
		for (struct rec_job *k = list; k != j; k = k->next)
			if (k->kind == REC_JOB_EVENT && !k->state && !strcmp(k->ev.event_id, j->ev.event_id) &&
			    k->ev.revision > stored)
				stored = k->ev.revision;
		if (j->ev.revision <= stored)
			fail(j, kp_CatalogResult_CATALOG_CONFLICT, "revision_conflict",
			     "event %s has revision %u; publish a higher one", j->ev.event_id, (unsigned)stored);
	}
	if (r == 0)
		cat_abort(t);
}

struct unlink_list {
	char (*path)[CAT_PATH_MAX];
	size_t n, cap;
};

static void later(struct unlink_list *u, const char *path)
{
	if (u->n == u->cap) {
		size_t cap = u->cap ? u->cap * 2 : 16;
		void *np = realloc(u->path, cap * sizeof *u->path);
		if (!np) {
			kp_err("%s: no memory to remember it for removal; it stays on disk", path);
			return;
		}
		u->path = np;
		u->cap = cap;
	}
	snprintf(u->path[u->n++], CAT_PATH_MAX, "%s", path);
}

/* The tombstone of the revision row of id ends (event_log.h). */
static int tombstone(struct rec_evlog *log, const char *id, const struct cat_event_row *row)
{
	static kp_EventRecord tomb;
	tomb = (kp_EventRecord)kp_EventRecord_init_zero;
	snprintf(tomb.event_id, sizeof tomb.event_id, "%s", id);
	tomb.revision = row->revision;
	tomb.committed_ms = row->committed_ms;
	return rec_evlog_add(log, REC_EVLOG_TOMBSTONE, &tomb);
}

static int run_event(struct cat_txn *t, struct rec_evlog *log, struct rec_job *j, struct unlink_list *gone)
{
	struct cat_event_link links[2];
	unsigned n = 0;
	for (uint32_t s = 0; s < 2; s++) {
		struct rec_keyframe k;
		int r = rec_keyframe_find_txn(t, cat_stream_id(j->camera_id, s), j->ev.start_ms, &k);
		if (r == 0)
			links[n++] = (struct cat_event_link){
			    .ms = k.ms, .recording_id = k.recording_id, .seq = k.seq, .stream = s};
		else if (r != -ENOENT)
			return r;
	}
	struct cat_event_row old;
	const uint8_t *pb;
	size_t pb_len;
	int r = cat_event_put_pb(t, j->camera_id, &j->ev, (uint32_t)j->jpeg_len, links, n, &old, &pb, &pb_len);
	if (r == -EEXIST) {
		fail(j, kp_CatalogResult_CATALOG_CONFLICT, "revision_conflict",
		     "event %s already has this or a higher revision", j->ev.event_id);
		return 0;
	}
	if (r < 0)
		return r;
	/* Its record, and the end of the one it replaces: what a rebuild restores. The
	 * record's bytes are the row's (encoded once), kept for the fan-out too. */
	r = rec_evlog_add_pb(log, REC_EVLOG_RECORD, pb, pb_len);
	free(j->pb);
	j->pb = malloc(pb_len ? pb_len : 1);
	if (j->pb) {
		memcpy(j->pb, pb, pb_len);
		j->pb_len = pb_len;
	}
	if (r == 0 && old.revision)
		r = tombstone(log, j->ev.event_id, &old);
	if (r < 0)
		return r;
	for (unsigned i = 0; i < n; i++)
		j->keyframes[i] = (kp_EventKeyframe){.stream = links[i].stream, .time_ms = links[i].ms};
	j->nkeyframes = (pb_size_t)n;
	char p[CAT_PATH_MAX];
	if (old.revision && old.jpeg_len) {
		rec_event_jpeg_path(j->ev.event_id, old.revision, p, sizeof p);
		later(gone, p);
		rec_event_thumb_path(j->ev.event_id, old.revision, p, sizeof p);
		later(gone, p);
	}
	if (old.revision) { /* a record file of an older catalog, if it has one */
		rec_event_record_path(j->ev.event_id, old.revision, p, sizeof p);
		later(gone, p);
	}
	j->state = REC_JOB_DONE;
	return 0;
}

static int run_delete(struct cat_txn *t, struct rec_evlog *log, struct rec_job *j, struct unlink_list *gone)
{
	const kp_DeleteRequest *d = j->del;
	kp_CatalogRecord *rec = calloc(1, sizeof *rec);
	if (!rec)
		return -ENOMEM;
	rec->which_rec = kp_CatalogRecord_deleted_tag;
	kp_DeleteResult *res = &rec->rec.deleted;
	_Static_assert(sizeof res->missing_recordings == sizeof j->del->recordings, "every recording fits");
	_Static_assert(sizeof res->missing_events == sizeof j->del->events, "every event fits");
	int r = 0;
	for (pb_size_t i = 0; i < d->recordings_count && r == 0; i++) {
		struct cat_recording c;
		r = cat_get_recording(t, d->recordings[i], &c);
		if (r == -ENOENT) {
			res->missing_recordings[res->missing_recordings_count++] = d->recordings[i];
			r = 0;
		} else if (r == 0 && c.open) {
			res->busy_recordings[res->busy_recordings_count++] = d->recordings[i];
		} else if (r == 0) {
			r = cat_delete_recording(t, c.id, NULL);
			if (r == 0) {
				res->deleted_recordings++;
				later(gone, c.path);
			}
		}
	}
	for (pb_size_t i = 0; i < d->events_count && r == 0; i++) {
		struct cat_event_row row;
		r = cat_event_delete(t, d->events[i], &row);
		if (r == -ENOENT) {
			memcpy(res->missing_events[res->missing_events_count++], d->events[i], sizeof d->events[i]);
			r = 0;
		} else if (r == 0 && (r = tombstone(log, d->events[i], &row)) == 0) {
			res->deleted_events++;
			char p[CAT_PATH_MAX];
			if (row.jpeg_len) {
				rec_event_jpeg_path(d->events[i], row.revision, p, sizeof p);
				later(gone, p);
				rec_event_thumb_path(d->events[i], row.revision, p, sizeof p);
				later(gone, p);
			}
			rec_event_record_path(d->events[i], row.revision, p, sizeof p);
			later(gone, p);
		}
	}
	if (r == 0) {
		struct catrec_buf b;
		catrec_init(&b, JOB_BODY_MAX);
		r = catrec_add(&b, rec);
		if (r == 0) {
			j->body = b.p;
			j->body_len = b.len;
			j->state = REC_JOB_DONE;
		} else {
			catrec_free(&b);
		}
	}
	free(rec);
	return r;
}

static void unlink_files(int data_dirfd, const struct rec_job *j)
{
	char path[CAT_PATH_MAX];
	if (j->jpeg) {
		rec_event_jpeg_path(j->ev.event_id, j->ev.revision, path, sizeof path);
		unlinkat(data_dirfd, path, 0);
	}
}

static void fail_io(struct rec_job *j, int r, const char *what)
{
	fail(j, r == -ENOSPC ? kp_CatalogResult_CATALOG_UNAVAILABLE : kp_CatalogResult_CATALOG_FAILED,
	     r == -ENOSPC ? "disk_full" : "catalog_error", "%s failed: %s", what, strerror(-r));
}

/* Every job's JPEG: all written first, then writeback started for all of them, then
 * each fdatasync'ed (the first waits for the disk, the rest mostly find their bytes
 * there) and each events/<hh> directory fsync'ed once, so a batch of events costs about
 * one round of disk flushes instead of one per file. A job whose file fails is failed
 * and its file removed. Jobs without a JPEG write no file here (their record goes to
 * the event log in the transaction). */
static void write_files(int data_dirfd, struct rec_job *list)
{
	size_t n = 0;
	for (struct rec_job *j = list; j; j = j->next) {
		if (j->kind == REC_JOB_EVENT && !j->state && !j->jpeg)
			j->wrote = 1;
		n += j->kind == REC_JOB_EVENT && !j->state && j->jpeg;
	}
	if (!n)
		return;
	struct pending {
		struct rec_job *j;
		int fd;
		unsigned dir; /* hh of its events/<hh> */
	} *p = calloc(n, sizeof *p);
	if (!p) {
		for (struct rec_job *j = list; j; j = j->next)
			if (j->kind == REC_JOB_EVENT && !j->state && j->jpeg)
				fail_io(j, -ENOMEM, "writing the event's JPEG");
		return;
	}
	uint8_t dirs[256 / 8] = {0}, bad[256 / 8] = {0};
	size_t k = 0;
	for (struct rec_job *j = list; j; j = j->next) {
		if (j->kind != REC_JOB_EVENT || j->state || !j->jpeg)
			continue;
		struct pending *e = &p[k++];
		e->j = j;
		e->fd = -1;
		char path[CAT_PATH_MAX];
		rec_event_jpeg_path(j->ev.event_id, j->ev.revision, path, sizeof path);
		int r = write_jpeg(data_dirfd, j, path, &e->fd);
		if (r < 0) {
			kp_err("%s: writing the event's JPEG failed: %s", path, strerror(-r));
			fail_io(j, r, "writing the JPEG");
			continue;
		}
		e->dir = (unsigned)strtoul(path + 7, NULL, 16) & 0xff; /* events/hh/ */
		dirs[e->dir / 8] |= (uint8_t)(1u << e->dir % 8);
	}
	for (size_t i = 0; i < k; i++)
		if (p[i].fd >= 0 && !p[i].j->state && sync_file_range(p[i].fd, 0, 0, SYNC_FILE_RANGE_WRITE) < 0 &&
		    errno != ESPIPE)
			kp_debug("sync_file_range: %s (the fdatasync below still syncs)", strerror(errno));
	for (size_t i = 0; i < k; i++) {
		struct rec_job *j = p[i].j;
		if (p[i].fd < 0)
			continue;
		if (!j->state && fdatasync(p[i].fd) < 0) {
			int r = -errno;
			kp_err("event %s: syncing its JPEG failed: %s", j->ev.event_id, strerror(-r));
			fail_io(j, r, "syncing the JPEG");
		}
		close(p[i].fd);
		if (j->state)
			unlink_files(data_dirfd, j);
	}
	/* Every file is durable (fdatasync + its directory's entry) before the transaction. */
	int dir_err = 0;
	for (unsigned hh = 0; hh < 256; hh++)
		if (dirs[hh / 8] >> hh % 8 & 1) {
			char dir[16];
			snprintf(dir, sizeof dir, "events/%02x", hh);
			int r = rec_fsync_dir(data_dirfd, dir);
			if (r < 0) {
				kp_err("%s: fsync failed: %s", dir, strerror(-r));
				bad[hh / 8] |= (uint8_t)(1u << hh % 8);
				dir_err = r;
			}
		}
	for (size_t i = 0; i < k; i++) {
		struct rec_job *j = p[i].j;
		if (!j->state && bad[p[i].dir / 8] >> p[i].dir % 8 & 1) {
			fail_io(j, dir_err, "syncing the event's directory");
			unlink_files(data_dirfd, j);
		} else if (!j->state) {
			j->wrote = 1;
		}
	}
	free(p);
}

int rec_evlog_restore(struct rec_evlog *log, struct cat *cat, const kp_EventRecord *const *ended, size_t nended,
		      const char (*ids)[CAT_EVENT_ID_MAX + 1], size_t nids)
{
	static kp_EventRecord ev;
	rec_evlog_discard(log);
	int r = 0;
	for (size_t i = 0; r == 0 && i < nended; i++)
		r = rec_evlog_add(log, REC_EVLOG_TOMBSTONE, ended[i]);
	struct cat_txn *t = NULL;
	if (r == 0)
		r = cat_begin(cat, 0, &t);
	for (size_t i = 0; r == 0 && i < nids; i++) {
		struct cat_event_row row;
		r = cat_event_get(t, ids[i], &row, &ev);
		if (r == 0)
			r = rec_evlog_add(log, REC_EVLOG_RECORD, &ev);
		else if (r == -ENOENT)
			r = 0;
	}
	if (t)
		cat_abort(t);
	if (r == 0)
		r = rec_evlog_flush(log);
	else
		rec_evlog_discard(log);
	if (r < 0)
		kp_err("event log: setting it back after a failed transaction failed: %s; until the events "
		       "involved are stored again, a rebuild of the catalog may restore them as they were "
		       "before it",
		       strerror(-r));
	return r;
}

/* After a transaction that did not commit: what this pass logged is ended again (its
 * records by tombstones, the revisions it ended by their records again). */
static void restore_log(struct cat *cat, struct rec_evlog *log, struct rec_job *list)
{
	size_t nrec = 0, nids = 0;
	for (struct rec_job *j = list; j; j = j->next) {
		nrec += j->kind == REC_JOB_EVENT && j->wrote;
		nids += j->kind == REC_JOB_EVENT ? 1 : j->del->events_count;
	}
	const kp_EventRecord **ended = calloc(nrec ? nrec : 1, sizeof *ended);
	char(*ids)[CAT_EVENT_ID_MAX + 1] = calloc(nids ? nids : 1, sizeof *ids);
	if (!ended || !ids) {
		kp_err("event log: no memory to set it back after a failed transaction; a rebuild of the "
		       "catalog may restore the events of that pass as they were logged");
		free(ended);
		free(ids);
		return;
	}
	size_t a = 0, b = 0;
	for (struct rec_job *j = list; j; j = j->next) {
		if (j->kind == REC_JOB_EVENT) {
			if (j->wrote)
				ended[a++] = &j->ev;
			snprintf(ids[b++], sizeof ids[0], "%s", j->ev.event_id);
			continue;
		}
		for (pb_size_t i = 0; i < j->del->events_count; i++)
			snprintf(ids[b++], sizeof ids[0], "%s", j->del->events[i]);
	}
	rec_evlog_restore(log, cat, ended, a, (const char(*)[CAT_EVENT_ID_MAX + 1]) ids, b);
	free(ended);
	free(ids);
}

void rec_jobs_run(struct cat *cat, int data_dirfd, struct rec_evlog *log, struct rec_job *list)
{
	precheck(cat, list);
	int64_t now = kp_wall_ms();
	for (struct rec_job *j = list; j; j = j->next)
		if (j->kind == REC_JOB_EVENT && !j->state) {
			j->ev.committed_ms = now;
			j->ev.has_jpeg = j->jpeg != NULL;
		}
	write_files(data_dirfd, list);
	struct unlink_list gone = {0};
	struct cat_txn *t;
	int r = cat_begin(cat, 1, &t), logged = 0;
	for (struct rec_job *j = list; j && r == 0; j = j->next) {
		if (j->state)
			continue;
		r = j->kind == REC_JOB_EVENT ? run_event(t, log, j, &gone) : run_delete(t, log, j, &gone);
	}
	/* The records and tombstones, durable before the transaction that stores them. */
	if (r == 0) {
		r = rec_evlog_flush(log);
		logged = 1;
	} else {
		rec_evlog_discard(log);
	}
	if (r == 0)
		r = cat_commit(t);
	else if (t)
		cat_abort(t);
	if (r < 0 && logged)
		restore_log(cat, log, list);
	for (struct rec_job *j = list; j; j = j->next) {
		if (r < 0 && j->state != REC_JOB_FAILED) {
			free(j->body);
			j->body = NULL;
			fail(j, r == -ENOSPC ? kp_CatalogResult_CATALOG_UNAVAILABLE : kp_CatalogResult_CATALOG_FAILED,
			     r == -ENOSPC ? "disk_full" : "catalog_error", "the catalog transaction failed: %s",
			     strerror(-r));
		}
		if (j->wrote && j->state != REC_JOB_DONE) /* not stored: its files go */
			unlink_files(data_dirfd, j);
	}
	if (r < 0) {
		kp_err("catalog: event/delete transaction failed: %s", strerror(-r));
		gone.n = 0;
	}
	/* The rows are gone for good: now their files. */
	for (size_t i = 0; i < gone.n; i++) {
		int u = strncmp(gone.path[i], "events/", 7) == 0 ? rec_event_file_unlink(data_dirfd, gone.path[i])
								 : rec_recording_unlink(data_dirfd, gone.path[i]);
		if (u < 0)
			kp_err("%s: removing it failed: %s", gone.path[i], strerror(-u));
	}
	free(gone.path);
}
