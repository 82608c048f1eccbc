/* recorderd's intake: access units, audio units and camera events (which only ingestd may send: the
 * IPC table in common/ipc_frame.c), counted per camera stream with sequence gaps
 * detected, reported to the supervisor before each health reply, and handed to the
 * recording core (recorder.c); the transcoder's answers go to picture.c; every other
 * kind is a query from webd or rtcd, handed to queries.c. */
#include <stdio.h>
#include <string.h>

#include "intake.h"
#include "kp_limits.h"
#include "log.h"
#include "picture.h"
#include "queries.h"
#include "recorder.h"
#include "reply.h"
#include "tier.h"

struct stream_counter {
	char camera[KP_CAMERA_NAME_MAX + 1];
	uint32_t stream;
	uint64_t frames, bytes, gaps, events;
	uint64_t last_seq;
};

static struct stream_counter counters[KP_MAX_CAMERAS * 2];
static unsigned ncounters;

static struct stream_counter *counter(const char *camera, uint32_t stream)
{
	for (unsigned i = 0; i < ncounters; i++)
		if (counters[i].stream == stream && !strcmp(counters[i].camera, camera))
			return &counters[i];
	if (ncounters >= KP_MAX_CAMERAS * 2 || stream > 1)
		return NULL;
	struct stream_counter *c = &counters[ncounters++];
	memset(c, 0, sizeof *c);
	snprintf(c->camera, sizeof c->camera, "%s", camera);
	c->stream = stream;
	return c;
}

void rec_intake_frame(struct kp_worker *w, kp_Peer from, struct kp_ipc_frame *f)
{
	if (f->env->which_msg == kp_Envelope_audio_unit_tag) {
		rec_audio_unit(&f->env->msg.audio_unit, f->tail, f->tail_len);
		return;
	}
	if (f->env->which_msg == kp_Envelope_tier_progress_tag || f->env->which_msg == kp_Envelope_tier_uploaded_tag ||
	    f->env->which_msg == kp_Envelope_tier_failed_tag || f->env->which_msg == kp_Envelope_tier_deleted_tag ||
	    f->env->which_msg == kp_Envelope_tier_fetched_tag) {
		rec_tier_frame(f);
		return;
	}
	if (f->env->which_msg == kp_Envelope_transcode_output_tag ||
	    f->env->which_msg == kp_Envelope_transcode_ended_tag) {
		rec_picture_frame(f);
		return;
	}
	if (f->env->which_msg != kp_Envelope_access_unit_tag && f->env->which_msg != kp_Envelope_camera_event_tag) {
		rec_reply_init(w);
		rec_picture_worker(w);
		rec_query_frame(from, f);
		return;
	}
	if (f->env->which_msg == kp_Envelope_access_unit_tag) {
		const kp_AccessUnit *au = &f->env->msg.access_unit;
		struct stream_counter *c = counter(au->camera, au->stream);
		if (!c)
			return;
		if (c->last_seq && au->seq != c->last_seq + 1)
			c->gaps++;
		c->last_seq = au->seq;
		c->frames++;
		c->bytes += f->tail_len;
		rec_access_unit(au, f->tail, f->tail_len);
	} else if (f->env->which_msg == kp_Envelope_camera_event_tag) {
		const kp_CameraEvent *e = &f->env->msg.camera_event;
		struct stream_counter *c = counter(e->camera, 0);
		if (c)
			c->events++;
		kp_info("%s: %s event (%s)", e->camera, e->kind, e->labels[0] ? e->labels : "no labels");
		rec_camera_event(e);
	}
}

void rec_intake_link(struct kp_worker *w, kp_Peer peer)
{
	rec_reply_init(w);
	rec_picture_worker(w);
	rec_picture_link(peer, 1);
	rec_tier_link(peer, 1);
}

void rec_intake_lost(struct kp_worker *w, kp_Peer peer)
{
	(void)w;
	rec_picture_link(peer, 0);
	rec_tier_link(peer, 0);
}

void rec_intake_report(struct kp_worker *w)
{
	for (unsigned i = 0; i < ncounters; i++) {
		kp_Envelope env = kp_Envelope_init_zero;
		env.which_msg = kp_Envelope_stream_received_tag;
		kp_StreamReceived *r = &env.msg.stream_received;
		snprintf(r->camera, sizeof r->camera, "%s", counters[i].camera);
		r->stream = counters[i].stream;
		r->frames = counters[i].frames;
		r->bytes = counters[i].bytes;
		r->gaps = counters[i].gaps;
		r->events = counters[i].events;
		kp_worker_send_supervisor(w, &env);
	}
	rec_report(w);
}
