/* The event log against what the catalog stores (see event_log.h): compaction of the
 * oldest sealed segments, and the reconciliation of the newest ones at start. */
#include "event_log.h"

#include <errno.h>
#include <stdio.h>
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

/* ---- start-up reconciliation ---- */

struct tail_item {
	char id[CAT_EVENT_ID_MAX + 1];
	uint32_t revision;
	int64_t committed_ms;
	size_t order;
	int tombstone;
};

struct tail {
	struct tail_item *v;
	size_t n, cap;
};

static int add_tail(void *arg, uint64_t seq, const struct rec_evlog_item *item, const kp_EventRecord *ev)
{
	struct tail *tl = arg;
	(void)seq;
	if (tl->n == tl->cap) {
		size_t cap = tl->cap ? tl->cap * 2 : 1024;
		void *p = realloc(tl->v, cap * sizeof *tl->v);
		if (!p)
			return -ENOMEM;
		tl->v = p;
		tl->cap = cap;
	}
	struct tail_item *t = &tl->v[tl->n];
	snprintf(t->id, sizeof t->id, "%s", ev->event_id);
	t->revision = ev->revision;
	t->committed_ms = ev->committed_ms;
	t->order = tl->n++;
	t->tombstone = item->kind == REC_EVLOG_TOMBSTONE;
	return 0;
}

static int by_key_order(const void *a, const void *b)
{
	const struct tail_item *x = a, *y = b;
	int c = strcmp(x->id, y->id);
	if (c)
		return c;
	if (x->revision != y->revision)
		return x->revision < y->revision ? -1 : 1;
	if (x->committed_ms != y->committed_ms)
		return x->committed_ms < y->committed_ms ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

int rec_evlog_reconcile(struct rec_evlog *l, struct cat *cat, int data_dirfd, struct rec_evlog_reconcile_result *ret)
{
	memset(ret, 0, sizeof *ret);
	uint64_t *seqs;
	size_t n;
	int r = rec_evlog_list(data_dirfd, &seqs, &n);
	if (r < 0 || n == 0) {
		free(seqs);
		return r;
	}
	/* Before this writer's first segment: the newest ones an earlier run wrote. */
	uint64_t after = n > REC_EVLOG_RECONCILE_SEGMENTS ? seqs[n - REC_EVLOG_RECONCILE_SEGMENTS - 1] : 0;
	free(seqs);
	if (rec_evlog_open_segment(l))
		return -EBUSY;
	struct tail tl = {0};
	struct rec_evlog_scan sc;
	r = rec_evlog_each_after(data_dirfd, after, add_tail, &tl, &sc);
	if (r == 0 && tl.n)
		qsort(tl.v, tl.n, sizeof *tl.v, by_key_order);
	static kp_EventRecord ev;
	struct cat_txn *t = NULL;
	if (r == 0 && tl.n)
		r = cat_begin(cat, 0, &t);
	for (size_t i = 0; r == 0 && i < tl.n; i++) {
		const struct tail_item *x = &tl.v[i];
		if (i + 1 < tl.n && !strcmp(tl.v[i + 1].id, x->id) && tl.v[i + 1].revision == x->revision &&
		    tl.v[i + 1].committed_ms == x->committed_ms)
			continue; /* not the last item of its revision */
		struct cat_event_row row;
		int g = cat_event_get(t, x->id, &row, &ev);
		if (g < 0 && g != -ENOENT) {
			r = g;
			break;
		}
		int stored = g == 0 && row.revision == x->revision && row.committed_ms == x->committed_ms;
		if (!x->tombstone && !stored) { /* logged, its transaction never committed */
			ev = (kp_EventRecord)kp_EventRecord_init_zero;
			snprintf(ev.event_id, sizeof ev.event_id, "%s", x->id);
			ev.revision = x->revision;
			ev.committed_ms = x->committed_ms;
			r = rec_evlog_add(l, REC_EVLOG_TOMBSTONE, &ev);
			ret->tombstones++;
		} else if (x->tombstone && stored) { /* ended in the log, not in the catalog */
			r = rec_evlog_add(l, REC_EVLOG_RECORD, &ev);
			ret->records++;
		}
	}
	if (t)
		cat_abort(t);
	if (r == 0)
		r = rec_evlog_flush(l);
	else
		rec_evlog_discard(l);
	free(tl.v);
	return r;
}
