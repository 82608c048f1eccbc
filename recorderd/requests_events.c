/* keeppeekctl events search, answered to the supervisor (see requests_events.h). */
#include "requests_events.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "catalog.h"
#include "jbuf.h"
#include "log.h"
#include "requests.h"
#include "search.h"

/* One page in one read transaction; -E2BIG when its JSON exceeds REC_EVENTS_ANSWER_MAX. */
static int page(struct cat *cat, const kp_EventSearch *s, uint32_t limit, char *why, size_t cap, struct jbuf *b)
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
	char why[160] = "";
	uint32_t limit = s->limit ? s->limit : REC_SEARCH_DEFAULT_LIMIT;
	struct jbuf b;
	int r;
	for (;;) {
		jb_init(&b, REC_EVENTS_ANSWER_MAX);
		r = page(cat, s, limit, why, sizeof why, &b);
		if (r != -E2BIG || limit <= 1)
			break;
		limit /= 2;
		jb_free(&b);
	}
	if (r == 0) {
		jb_printf(&b, "\n");
		rec_send_answer(w, s->id, 0, b.p, b.len);
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
	jb_free(&b);
}
