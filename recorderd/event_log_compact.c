/* Compaction of the event log (see event_log.h): the oldest sealed segments, against
 * what the catalog stores. */
#include "event_log.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "catalog.h"
#include "catalog_events.h"
#include "jobs.h"
#include "log.h"

/* Whether the catalog stores exactly this revision (same commit): a record of a
 * revision deleted and published again is not the one stored. */
static int stored(struct cat_txn *t, const kp_EventRecord *ev)
{
	struct cat_event_row row;
	int r = cat_event_get(t, ev->event_id, &row, NULL);
	if (r == -ENOENT)
		return 0;
	if (r < 0)
		return r;
	return row.revision == ev->revision && row.committed_ms == ev->committed_ms;
}

/* One segment: -EAGAIN when too much of it is still stored (it stays, and so do the
 * ones after it). */
static int compact_one(struct rec_evlog *l, struct cat *cat, int dirfd, uint64_t seq,
		       struct rec_evlog_compact_result *res)
{
	uint8_t *buf;
	size_t len;
	int r = rec_evlog_read_segment(dirfd, seq, &buf, &len);
	if (r == -EBADMSG) { /* not ours to read: nothing to keep from it */
		buf = NULL;
		len = 0;
	} else if (r < 0) {
		return r;
	}
	static kp_EventRecord ev;
	struct cat_txn *t = NULL;
	r = buf ? cat_begin(cat, 0, &t) : 0;
	size_t off = REC_EVLOG_HEADER, live = 0;
	struct rec_evlog_item it;
	int e = -ENODATA;
	while (r == 0 && buf && (e = rec_evlog_next(buf, len, &off, &it, &ev)) == 0)
		if (it.kind == REC_EVLOG_RECORD && (r = stored(t, &ev)) > 0) {
			live += it.len;
			r = 0;
		}
	if (r == 0 && live > len / 2)
		r = -EAGAIN;
	size_t end = off;
	off = REC_EVLOG_HEADER;
	uint64_t copied = 0;
	while (r == 0 && live && off < end && rec_evlog_next(buf, end, &off, &it, &ev) == 0)
		if (it.kind == REC_EVLOG_RECORD && (r = stored(t, &ev)) > 0) {
			r = rec_evlog_add_raw(l, buf + it.off, it.len);
			copied++;
		}
	if (t)
		cat_abort(t);
	if (r == 0 && copied)
		r = rec_evlog_flush(l);
	char path[REC_EVLOG_NAME_MAX];
	rec_evlog_segment_path(seq, path, sizeof path);
	if (r == 0 && unlinkat(dirfd, path, 0) < 0)
		r = -errno;
	if (r < 0) {
		rec_evlog_discard(l);
		free(buf);
		return r;
	}
	if (e == -EBADMSG) {
		kp_warn("%s: removed with %zu bytes after offset %zu that were not a whole item (torn tail or "
			"damage; no reader could use them)",
			path, len - end, end);
		res->bytes_ignored += len - end;
	}
	res->segments_removed++;
	res->records_copied += copied;
	res->bytes_freed += len;
	free(buf);
	return 0;
}

int rec_evlog_compact(struct rec_evlog *l, struct cat *cat, int data_dirfd, struct rec_evlog_compact_result *ret)
{
	memset(ret, 0, sizeof *ret);
	uint64_t *seqs;
	size_t n;
	int r = rec_evlog_list(data_dirfd, &seqs, &n);
	uint64_t open = rec_evlog_open_segment(l);
	for (size_t i = 0; r == 0 && i < n && i < REC_EVLOG_COMPACT_SEGMENTS; i++) {
		if (open && seqs[i] >= open)
			break;
		r = compact_one(l, cat, data_dirfd, seqs[i], ret);
	}
	free(seqs);
	if (ret->segments_removed) {
		int s = rec_fsync_dir(data_dirfd, REC_EVLOG_DIR);
		if (s < 0)
			kp_warn("%s: fsync after removing segments failed: %s", REC_EVLOG_DIR, strerror(-s));
	}
	return r == -EAGAIN ? 0 : r;
}
