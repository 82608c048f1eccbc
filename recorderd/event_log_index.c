/* Which revisions the event log holds a live record of (see event_log.h). */
#include "event_log.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog_events.h"

int rec_evlog_index_add(struct rec_evlog_index *x, const kp_EventRecord *ev, uint64_t seg, uint64_t off, int tombstone)
{
	if (x->n == x->cap) {
		size_t cap = x->cap ? x->cap * 2 : 1024;
		void *p = reallocarray(x->k, cap, sizeof *x->k);
		if (!p)
			return -ENOMEM;
		x->k = p;
		x->cap = cap;
	}
	struct rec_evlog_key *k = &x->k[x->n++];
	snprintf(k->id, sizeof k->id, "%s", ev->event_id);
	k->revision = ev->revision;
	k->committed_ms = ev->committed_ms;
	k->seg = seg;
	k->off = off;
	k->tombstone = tombstone;
	return 0;
}

static int add(void *arg, uint64_t seq, const struct rec_evlog_item *item, const kp_EventRecord *ev)
{
	return rec_evlog_index_add(arg, ev, seq, item->off, item->kind == REC_EVLOG_TOMBSTONE);
}

static int cmp_key(const struct rec_evlog_key *x, const char *id, uint32_t rev, int64_t ms)
{
	int c = strcmp(x->id, id);
	if (c)
		return c;
	if (x->revision != rev)
		return x->revision < rev ? -1 : 1;
	return x->committed_ms < ms ? -1 : x->committed_ms > ms;
}

static int by_written(const void *a, const void *b)
{
	const struct rec_evlog_key *x = a, *y = b;
	int c = cmp_key(x, y->id, y->revision, y->committed_ms);
	if (c)
		return c;
	if (x->seg != y->seg)
		return x->seg < y->seg ? -1 : 1;
	return x->off < y->off ? -1 : x->off > y->off;
}

int rec_evlog_index_load(int data_dirfd, struct rec_evlog_index *ret)
{
	*ret = (struct rec_evlog_index){0};
	struct rec_evlog_scan sc;
	uint64_t after = 0;
	int r;
	/* Compaction appends what it keeps to a newer segment before it removes the old one. */
	while ((r = rec_evlog_each_after(data_dirfd, after, add, ret, &sc)) == 0 && sc.last > after)
		after = sc.last;
	if (r < 0) {
		rec_evlog_index_free(ret);
		return r;
	}
	rec_evlog_index_settle(ret);
	return 0;
}

void rec_evlog_index_settle(struct rec_evlog_index *x)
{
	if (x->n)
		qsort(x->k, x->n, sizeof *x->k, by_written);
	size_t kept = 0;
	for (size_t i = 0; i < x->n; i++) {
		int last = i + 1 == x->n || cmp_key(&x->k[i + 1], x->k[i].id, x->k[i].revision, x->k[i].committed_ms);
		if (last && !x->k[i].tombstone)
			x->k[kept++] = x->k[i];
	}
	x->n = kept;
}

int rec_evlog_index_has(const struct rec_evlog_index *x, const char *id, uint32_t revision, int64_t committed_ms)
{
	size_t lo = 0, hi = x->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = cmp_key(&x->k[mid], id, revision, committed_ms);
		if (!c)
			return 1;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return 0;
}

void rec_evlog_index_free(struct rec_evlog_index *x)
{
	free(x->k);
	*x = (struct rec_evlog_index){0};
}
