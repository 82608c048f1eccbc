/* Event search (see search.h). */
#include "search.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "event_check.h"

/* Appends the EventRow record of a stored event and its links. */
static void event_row(struct catrec_buf *out, const kp_EventRecord *ev, const struct cat_event_row *row,
		      const struct cat_event_link *links, unsigned nlinks)
{
	static kp_CatalogRecord rec;
	memset(&rec, 0, sizeof rec);
	rec.which_rec = kp_CatalogRecord_event_tag;
	kp_EventRow *e = &rec.rec.event;
	e->has_event = true;
	e->event = *ev;
	e->jpeg_bytes = row->jpeg_len;
	for (unsigned i = 0; i < nlinks && i < 2; i++)
		e->keyframes[i] = (kp_EventKeyframe){.stream = links[i].stream, .time_ms = links[i].ms};
	e->keyframes_count = (pb_size_t)(nlinks < 2 ? nlinks : 2);
	catrec_add(out, &rec);
}

int rec_search_prepare(struct cat_txn *t, const kp_EventSearch *s, struct rec_search_q *q, char *why, size_t cap)
{
	memset(q, 0, sizeof *q);
	q->from_ms = s->from_ms;
	q->to_ms = s->to_ms ? s->to_ms : INT64_MAX;
	if (q->from_ms >= q->to_ms) {
		snprintf(why, cap, "from_ms must be before to_ms");
		return -EINVAL;
	}
	q->max_candidates = REC_SEARCH_MAX_CANDIDATES;
	q->limit = s->limit ? s->limit : REC_SEARCH_DEFAULT_LIMIT;
	if (q->limit > REC_SEARCH_MAX_LIMIT) {
		snprintf(why, cap, "limit is at most %d", REC_SEARCH_MAX_LIMIT);
		return -EINVAL;
	}
	rec_term_lower(s->label, q->label);
	if (rec_query_words(s->q, &q->words) < 0) {
		snprintf(why, cap, "q has more than %d words", REC_QUERY_WORDS_MAX);
		return -EINVAL;
	}
	if (s->cursor[0]) {
		if (rec_cursor_decode(s->cursor, &q->cursor_ms, &q->cursor_seq) < 0) {
			snprintf(why, cap, "the cursor is not one this server gave");
			return -EBADMSG;
		}
		q->has_cursor = 1;
	}
	if (s->camera[0]) {
		int r = cat_camera_lookup(t, s->camera, &q->camera_id, NULL);
		if (r == -ENOENT)
			snprintf(why, cap, "camera \"%s\" is unknown", s->camera);
		if (r < 0)
			return r;
	}
	return 0;
}

struct cand {
	int64_t ms;
	uint64_t seq;
};

struct page {
	struct cat_txn *t;
	const struct rec_search_q *q;
	struct catrec_buf *out;
	uint32_t emitted;
	unsigned examined;
	int more;
	struct cand last; /* the last emitted (or examined, when the page stops early) */
	kp_EventRecord ev;
	struct rec_terms terms;
	/* candidates from the term index */
	struct cand *c;
	size_t n, cap;
	int overflow;
};

/* Whether (ms, seq) is inside the range and before the cursor. */
static int in_window(const struct rec_search_q *q, int64_t ms, uint64_t seq)
{
	if (ms < q->from_ms || ms >= q->to_ms)
		return 0;
	return !q->has_cursor || ms < q->cursor_ms || (ms == q->cursor_ms && seq < q->cursor_seq);
}

static int emit_links(struct cat_txn *t, uint64_t seq, struct cat_event_link *links, unsigned *n)
{
	*n = 0;
	for (uint32_t s = 0; s < 2; s++) {
		int r = cat_event_link_get(t, seq, s, &links[*n]);
		if (r == 0)
			(*n)++;
		else if (r != -ENOENT)
			return r;
	}
	return 0;
}

/* 1 to stop the walk (page full and one more match seen, or too much examined). */
static int consider(struct page *p, int64_t ms, uint64_t seq, const char *id)
{
	const struct rec_search_q *q = p->q;
	if (p->examined++ >= REC_SEARCH_MAX_EXAMINED) {
		p->more = 1;
		return 1;
	}
	struct cat_event_row row;
	int r = cat_event_get(p->t, id, &row, &p->ev);
	if (r == -ENOENT)
		return 0;
	if (r < 0)
		return r;
	if (row.seq != seq || (q->camera_id && row.camera_id != q->camera_id))
		return 0;
	if (q->label[0] && !rec_event_has_label(&p->ev, q->label))
		return 0;
	if (q->words.n) {
		rec_event_terms(&p->ev, &p->terms);
		if (!rec_terms_match(&p->terms, &q->words))
			return 0;
	}
	if (p->emitted == q->limit) {
		p->more = 1;
		return 1;
	}
	struct cat_event_link links[2];
	unsigned nl;
	r = emit_links(p->t, seq, links, &nl);
	if (r < 0)
		return r;
	p->emitted++;
	event_row(p->out, &p->ev, &row, links, nl);
	p->last = (struct cand){.ms = ms, .seq = seq};
	return 0;
}

static int visit_time(void *arg, int64_t ms, uint64_t seq, const char *id)
{
	struct page *p = arg;
	if (ms < p->q->from_ms)
		return 1;
	int r = consider(p, ms, seq, id);
	if (r == 1 && p->examined > REC_SEARCH_MAX_EXAMINED)
		p->last = (struct cand){.ms = ms, .seq = seq + 1}; /* resume at this one */
	return r;
}

static int add_cand(void *arg, int64_t ms, uint64_t seq)
{
	struct page *p = arg;
	if (!in_window(p->q, ms, seq))
		return 0;
	if (p->n == p->q->max_candidates) {
		p->overflow = 1;
		return 1;
	}
	if (p->n == p->cap) {
		size_t cap = p->cap ? p->cap * 2 : 256;
		struct cand *nc = realloc(p->c, cap * sizeof *nc);
		if (!nc)
			return -ENOMEM;
		p->c = nc;
		p->cap = cap;
	}
	p->c[p->n++] = (struct cand){.ms = ms, .seq = seq};
	return 0;
}

static int newest_first(const void *a, const void *b)
{
	const struct cand *x = a, *y = b;
	if (x->ms != y->ms)
		return x->ms > y->ms ? -1 : 1;
	return x->seq > y->seq ? -1 : x->seq < y->seq;
}

static int by_terms(struct page *p)
{
	const struct rec_search_q *q = p->q;
	const char *driver = q->label;
	int exact = 1;
	if (!driver[0]) {
		exact = 0;
		driver = q->words.t[0];
		for (unsigned i = 1; i < q->words.n; i++)
			if (strlen(q->words.t[i]) > strlen(driver))
				driver = q->words.t[i];
	}
	int r = cat_each_term(p->t, driver, exact, add_cand, p);
	if (r < 0)
		return r;
	if (p->overflow)
		return 0; /* the caller walks the time index instead */
	if (p->n)
		qsort(p->c, p->n, sizeof *p->c, newest_first);
	for (size_t i = 0; i < p->n; i++) {
		if (i && p->c[i].ms == p->c[i - 1].ms && p->c[i].seq == p->c[i - 1].seq)
			continue;
		char id[CAT_EVENT_ID_MAX + 1];
		r = cat_event_id_at(p->t, p->c[i].ms, p->c[i].seq, id);
		if (r == -ENOENT)
			continue;
		if (r == 0)
			r = consider(p, p->c[i].ms, p->c[i].seq, id);
		if (r == 1 && p->examined > REC_SEARCH_MAX_EXAMINED)
			p->last = (struct cand){.ms = p->c[i].ms, .seq = p->c[i].seq + 1};
		if (r)
			return r < 0 ? r : 0;
	}
	return 0;
}

int rec_search(struct cat_txn *t, const struct rec_search_q *q, struct catrec_buf *out)
{
	struct page *p = calloc(1, sizeof *p);
	if (!p)
		return -ENOMEM;
	p->t = t;
	p->q = q;
	p->out = out;
	int r = 0;
	int terms = q->label[0] || q->words.n;
	if (terms)
		r = by_terms(p);
	if (r == 0 && (!terms || p->overflow)) {
		/* The term path emits nothing before it has every candidate: starting over is safe. */
		p->emitted = 0;
		p->examined = 0;
		p->more = 0;
		int64_t ms = q->has_cursor ? q->cursor_ms : q->to_ms;
		uint64_t seq = q->has_cursor ? q->cursor_seq : 0;
		if (q->to_ms == INT64_MAX && !q->has_cursor) {
			ms = INT64_MAX;
			seq = UINT64_MAX;
		}
		r = cat_each_event_back(t, q->camera_id, ms, seq, visit_time, p);
		if (r == 1)
			r = 0;
	}
	if (r == 1)
		r = 0;
	if (r == 0) {
		kp_CatalogRecord end = {.which_rec = kp_CatalogRecord_search_end_tag};
		_Static_assert(sizeof end.rec.search_end.next_cursor > REC_CURSOR_LEN, "SearchEnd holds a cursor");
		if (p->more)
			rec_cursor_encode(p->last.ms, p->last.seq, end.rec.search_end.next_cursor);
		catrec_add(out, &end);
	}
	free(p->c);
	free(p);
	return r < 0 ? r : out->failed ? -E2BIG : 0;
}

int rec_event_row_get(struct cat_txn *t, const char *id, struct catrec_buf *out)
{
	static kp_EventRecord ev;
	struct cat_event_row row;
	int r = cat_event_get(t, id, &row, &ev);
	struct cat_event_link links[2];
	unsigned n = 0;
	if (r == 0)
		r = emit_links(t, row.seq, links, &n);
	if (r == 0)
		event_row(out, &ev, &row, links, n);
	return r < 0 ? r : out->failed ? -E2BIG : 0;
}
