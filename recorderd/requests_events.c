/* keeppeekctl events search, answered to the supervisor (see requests_events.h). */
#include "requests_events.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "catalog.h"
#include "jbuf.h"
#include "log.h"
#include "requests.h"
#include "search.h"

static void send_pieces(struct kp_worker *w, uint32_t id, int code, const char *data, size_t len)
{
	size_t off = 0;
	do {
		size_t n = len - off < REC_ANSWER_PIECE ? len - off : REC_ANSWER_PIECE;
		kp_Envelope env = kp_Envelope_init_zero;
		env.which_msg = kp_Envelope_recorder_reply_tag;
		env.msg.recorder_reply.id = id;
		env.msg.recorder_reply.done = off + n == len;
		env.msg.recorder_reply.exit_code = code;
		int r = kp_worker_send_supervisor_tail(w, &env, (const uint8_t *)data + off, n);
		if (r < 0) {
			kp_err("event search answer %u to the supervisor failed: %s", (unsigned)id, strerror(-r));
			return;
		}
		off += n;
	} while (off < len);
}

static void send_line(struct kp_worker *w, uint32_t id, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void send_line(struct kp_worker *w, uint32_t id, int code, const char *fmt, ...)
{
	char text[512];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(text, sizeof text, fmt, ap);
	va_end(ap);
	send_pieces(w, id, code, text, n < 0 ? 0 : (size_t)n < sizeof text ? (size_t)n : sizeof text - 1);
}

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
		send_pieces(w, s->id, 0, b.p, b.len);
	} else if (r == -ENOENT) {
		send_line(w, s->id, 0, "{\"events\":[],\"next_cursor\":null,\"unknown_camera\":true}\n");
	} else if (r == -EINVAL || r == -EBADMSG) {
		send_line(w, s->id, 2, "events search: %s\n", why);
	} else {
		if (r == -E2BIG)
			snprintf(why, sizeof why, "one event does not fit in %d bytes", REC_EVENTS_ANSWER_MAX);
		kp_err("events search for keeppeekctl failed: %s", why);
		send_line(w, s->id, 1, "events search failed: %s\n", why);
	}
	jb_free(&b);
}
