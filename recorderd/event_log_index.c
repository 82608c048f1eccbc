/* Which revisions the event log holds a live record of (see event_log.h). */
#include "event_log.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog_events.h"

struct rec_evlog_key {
	char id[CAT_EVENT_ID_MAX + 1];
	uint32_t revision;
	int64_t committed_ms;
	uint64_t seg, off;
	int tombstone;
};

struct loader {
	struct rec_evlog_index *x;
	size_t cap;
};

static int add(void *arg, uint64_t seq, const struct rec_evlog_item *item, const kp_EventRecord *ev)
{
	struct loader *ld = arg;
	struct rec_evlog_index *x = ld->x;
	if (x->n == ld->cap) {
		size_t cap = ld->cap ? ld->cap * 2 : 1024;
		void *p = realloc(x->k, cap * sizeof *x->k);
		if (!p)
			return -ENOMEM;
		x->k = p;
		ld->cap = cap;
	}
	struct rec_evlog_key *k = &x->k[x->n++];
	snprintf(k->id, sizeof k->id, "%s", ev->event_id);
	k->revision = ev->revision;
	k->committed_ms = ev->committed_ms;
	k->seg = seq;
	k->off = item->off;
	k->tombstone = item->kind == REC_EVLOG_TOMBSTONE;
	return 0;
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
	struct loader ld = {.x = ret};
	struct rec_evlog_scan sc;
	uint64_t after = 0;
	int r;
	/* Compaction appends what it keeps to a newer segment before it removes the old one. */
	while ((r = rec_evlog_each_after(data_dirfd, after, add, &ld, &sc)) == 0 && sc.last > after)
		after = sc.last;
	if (r < 0) {
		rec_evlog_index_free(ret);
		return r;
	}
	if (ret->n)
		qsort(ret->k, ret->n, sizeof *ret->k, by_written);
	/* Of each revision of each commit, the last item: live when it is a record. */
	size_t kept = 0;
	for (size_t i = 0; i < ret->n; i++) {
		int last = i + 1 == ret->n ||
			   cmp_key(&ret->k[i + 1], ret->k[i].id, ret->k[i].revision, ret->k[i].committed_ms);
		if (last && !ret->k[i].tombstone)
			ret->k[kept++] = ret->k[i];
	}
	ret->n = kept;
	return 0;
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
