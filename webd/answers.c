/* webd's registry of questions in flight to recorderd, rtcd and the supervisor: an id
 * per question, the callback its answer pieces go to (QueryReply, CatalogReply,
 * MediaPiece, AuthReply)
 * and a 30 s deadline after which the callback hears f == NULL once. Bounded: at most
 * ANSWERS_MAX questions at a time (webd_answer_expect returns 0 beyond). */
#include <stdlib.h>
#include <string.h>

#include "kp_time.h"
#include "log.h"
#include "webd.h"

#define ANSWERS_MAX     4096
#define ANSWER_DEADLINE 30000u

struct answer {
	uint32_t id; /* 0: free */
	kp_Peer to;
	webd_answer_cb cb;
	void *arg;
	uint64_t deadline_ms;
};

static struct answer answers[ANSWERS_MAX];
static bool lost; /* the callbacks now running hear of a dropped link */
static uint32_t next_id = 1;
static unsigned nused;
static uv_timer_t timer;
static bool timer_open;

static struct answer *slot_of(uint32_t id)
{
	struct answer *a = &answers[id % ANSWERS_MAX];
	return a->id == id && id ? a : NULL;
}

uint32_t webd_answer_expect(kp_Peer to, webd_answer_cb cb, void *arg)
{
	if (nused == ANSWERS_MAX) {
		kp_warn("%d questions already waiting for answers: refusing another", ANSWERS_MAX);
		return 0;
	}
	for (;;) {
		uint32_t id = next_id++;
		if (id == 0)
			continue;
		struct answer *a = &answers[id % ANSWERS_MAX];
		if (a->id)
			continue;
		a->id = id;
		a->to = to;
		a->cb = cb;
		a->arg = arg;
		a->deadline_ms = kp_mono_ms() + ANSWER_DEADLINE;
		nused++;
		return id;
	}
}

static void release(struct answer *a)
{
	a->id = 0;
	a->cb = NULL;
	a->arg = NULL;
	nused--;
}

void webd_answer_cancel(uint32_t id)
{
	struct answer *a = slot_of(id);
	if (a)
		release(a);
}

int webd_answer_frame(struct kp_ipc_frame *f)
{
	const kp_Envelope *env = f->env;
	uint32_t id;
	bool last;
	switch (env->which_msg) {
	case kp_Envelope_query_reply_tag:
		id = env->msg.query_reply.id;
		last = env->msg.query_reply.done;
		break;
	case kp_Envelope_catalog_reply_tag:
		id = env->msg.catalog_reply.id;
		last = env->msg.catalog_reply.done;
		break;
	case kp_Envelope_media_piece_tag:
		id = env->msg.media_piece.id;
		last = env->msg.media_piece.done;
		break;
	case kp_Envelope_auth_reply_tag:
		id = env->msg.auth_reply.id;
		last = true;
		break;
	default:
		return 0;
	}
	struct answer *a = slot_of(id);
	if (!a) {
		kp_debug("answer %u (kind %u) for a question no longer waiting", (unsigned)id,
			 (unsigned)env->which_msg);
		return 1;
	}
	webd_answer_cb cb = a->cb;
	void *arg = a->arg;
	if (last)
		release(a);
	else
		a->deadline_ms = kp_mono_ms() + ANSWER_DEADLINE;
	cb(arg, f);
	return 1;
}

static void on_timer(uv_timer_t *t)
{
	(void)t;
	uint64_t now = kp_mono_ms();
	for (unsigned i = 0; i < ANSWERS_MAX && nused; i++) {
		struct answer *a = &answers[i];
		if (!a->id || now < a->deadline_ms)
			continue;
		webd_answer_cb cb = a->cb;
		void *arg = a->arg;
		kp_warn("question %u got no answer within %u s", (unsigned)a->id, ANSWER_DEADLINE / 1000);
		release(a);
		cb(arg, NULL);
	}
}

bool webd_answer_lost(void)
{
	return lost;
}

void webd_answers_peer_lost(kp_Peer peer)
{
	unsigned n = 0;
	lost = true;
	for (unsigned i = 0; i < ANSWERS_MAX && nused; i++) {
		struct answer *a = &answers[i];
		if (!a->id || a->to != peer)
			continue;
		webd_answer_cb cb = a->cb;
		void *arg = a->arg;
		release(a);
		cb(arg, NULL);
		n++;
	}
	lost = false;
	if (n)
		kp_notice("%u questions to %s ended: its link dropped", n, kp_peer_name(peer));
}

void webd_answers_init(uv_loop_t *loop)
{
	if (uv_timer_init(loop, &timer) == 0 && uv_timer_start(&timer, on_timer, 1000, 1000) == 0)
		timer_open = true;
	else
		kp_err("answer deadline timer could not start");
}

void webd_answers_close(void)
{
	if (timer_open)
		uv_close((uv_handle_t *)&timer, NULL);
	timer_open = false;
}
