/* keeppeekctl events search, answered to the supervisor (see requests_events.h). */
#include "requests_events.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "catalog.h"
#include "catalog_json.h"
#include "catalog_records.h"
#include "log.h"
#include "requests.h"
#include "search.h"

/* One page in one read transaction; -E2BIG when its records exceed REC_EVENTS_ANSWER_MAX. */
static int page(struct cat *cat, const kp_EventSearch *s, uint32_t limit, char *why, size_t cap, struct catrec_buf *b)
{
	static struct rec_search_q q;
	struct cat_txn *t;
	int r = cat_begin(cat, 0, &t);
	if (r < 0) {
		snprintf(why, cap, "catalog: %s", strerror(-r));
		return r;
	}
	r = rec_search_prepare(t, s, &q, why, cap);
	if (r == 0) {
		q.limit = limit;
		r = rec_search(t, &q, b);
		if (r < 0 && r != -E2BIG)
			snprintf(why, cap, "catalog: %s", strerror(-r));
	}
	cat_abort(t);
	return r;
}

void rec_request_event_search(struct kp_worker *w, struct cat *cat, const kp_EventSearch *s)
{
	static char json[REC_EVENTS_ANSWER_MAX];
	char why[160] = "";
	uint32_t limit = s->limit ? s->limit : REC_SEARCH_DEFAULT_LIMIT;
	struct catrec_buf b;
	long n = 0;
	int r;
	for (;;) {
		catrec_init(&b, REC_EVENTS_ANSWER_MAX);
		r = page(cat, s, limit, why, sizeof why, &b);
		if (r == 0) {
			/* The JSON webd would answer, through the common renderer. */
			n = catj_render(CATJ_SEARCH, b.p, b.len, json, sizeof json - 1);
			r = n == -ENOBUFS ? -E2BIG : n < 0 ? -EIO : 0;
			if (r == -EIO)
				snprintf(why, sizeof why, "the page's records do not render");
		}
		if (r != -E2BIG || limit <= 1)
			break;
		limit /= 2;
		catrec_free(&b);
	}
	if (r == 0) {
		json[n++] = '\n';
		rec_send_answer(w, s->id, 0, json, (size_t)n);
	} else if (r == -ENOENT) {
		rec_send_text(w, s->id, 0, "{\"events\":[],\"next_cursor\":null,\"unknown_camera\":true}\n");
	} else if (r == -EINVAL || r == -EBADMSG) {
		rec_send_text(w, s->id, 2, "events search: %s\n", why);
	} else {
		if (r == -E2BIG)
			snprintf(why, sizeof why, "one event does not fit in %d bytes", REC_EVENTS_ANSWER_MAX);
		kp_err("events search for keeppeekctl failed: %s", why);
		rec_send_text(w, s->id, 1, "events search failed: %s\n", why);
	}
	catrec_free(&b);
}
