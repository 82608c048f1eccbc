/* Event search (EventSearch) in one read transaction: newest first by start time (then
 * commit order), filtered by camera, time range, label and query words (each a prefix
 * of some term), one page of at most limit events plus the cursor of the next page.
 * With a label or words, candidates come from the term index (the label, else the
 * longest word); past REC_SEARCH_MAX_CANDIDATES of them, or without either, the time
 * index is walked instead. A page examines at most REC_SEARCH_MAX_EXAMINED events and
 * may then hold fewer than limit with a next cursor. The page is a run of EventRow
 * records and a SearchEnd (catalog_records.h; the JSON webd renders: docs/queries.md). */
#ifndef KP_REC_SEARCH_H
#define KP_REC_SEARCH_H

#include <stdint.h>

#include "catalog_events.h"
#include "event_terms.h"
#include "catalog_records.h"

#define REC_SEARCH_DEFAULT_LIMIT  50
#define REC_SEARCH_MAX_LIMIT      500
#define REC_SEARCH_MAX_CANDIDATES 100000
#define REC_SEARCH_MAX_EXAMINED   100000

struct rec_search_q {
	uint32_t camera_id; /* 0: every camera */
	int64_t from_ms, to_ms;
	char label[REC_TERM_MAX + 1]; /* lower-cased; empty: any */
	struct rec_terms words;
	uint32_t limit;
	int has_cursor;
	int64_t cursor_ms;
	uint64_t cursor_seq;
	uint32_t max_candidates; /* REC_SEARCH_MAX_CANDIDATES (prepare sets it; tests lower it) */
};

/* Builds q from an EventSearch; -EINVAL (bad limit, range, too many words) or
 * -EBADMSG (bad cursor) with a sentence in why; -ENOENT for an unknown camera. */
int rec_search_prepare(struct cat_txn *t, const kp_EventSearch *s, struct rec_search_q *q, char *why, size_t cap);
/* Appends the page's records to out: 0, -E2BIG past out's ceiling, or a catalog error. */
int rec_search(struct cat_txn *t, const struct rec_search_q *q, struct catrec_buf *out);

/* The EventRow record of one stored event with its links. */
int rec_event_row_get(struct cat_txn *t, const char *id, struct catrec_buf *out);

#endif
