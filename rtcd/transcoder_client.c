/* Jobs in the transcoder process, seen from rtcd (see transcoder_client.h). */
#include "transcoder_client.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kp_limits.h"
#include "log.h"

struct rtc_tx_job {
	struct rtc_tx_job *next;
	uint32_t id;
	kp_TranscodeKind kind;
	char name[96];
	uint32_t rate, channels;
	uint8_t config[64];
	size_t config_len;
	rtc_tx_out_cb out;
	rtc_audio_cb audio_out;
	rtc_tx_lost_cb lost;
	void *arg;
	bool sent_open; /* on the current link */
	bool wait_key;  /* input dropped up to the next keyframe */
	bool force_key; /* to be sent with the next input */
	bool had_output;
	bool reopened; /* opened again after the transcoder went away (once only) */
	bool failing;  /* to be ended by fail() */
	uint64_t dropped_tx;
};

static struct kp_worker *worker;
static struct rtc_tx_job *jobs;
static uint32_t next_id;
static bool link_up;
static uv_timer_t start_timer;
static bool timer_ready;
static uint32_t demand_sent;
static unsigned max_video = 2, max_audio = KP_TRANSCODE_AUDIO_JOBS;
static struct rtc_tx_stats st;

void rtc_tx_init(struct kp_worker *w)
{
	worker = w;
	uv_timer_init(kp_worker_loop(w), &start_timer);
	timer_ready = true;
}

void rtc_tx_set_max(unsigned video, unsigned audio)
{
	max_video = video ? video : 2;
	max_audio = audio;
}

static unsigned count(kp_TranscodeKind kind)
{
	unsigned n = 0;
	for (struct rtc_tx_job *j = jobs; j; j = j->next)
		n += j->kind == kind;
	return n;
}

void rtc_tx_stats(struct rtc_tx_stats *ret)
{
	*ret = st;
	ret->jobs_video = count(kp_TranscodeKind_TRANSCODE_H265_H264);
	ret->jobs_audio = count(kp_TranscodeKind_TRANSCODE_AAC_OPUS);
	for (struct rtc_tx_job *j = jobs; j; j = j->next)
		ret->dropped_tx += j->dropped_tx;
}

/* keeppeekd runs the transcoder while this is above 0. */
static void send_demand(void)
{
	uint32_t n = 0;
	for (struct rtc_tx_job *j = jobs; j; j = j->next)
		n++;
	if (n == demand_sent || !worker)
		return;
	kp_Envelope env = kp_Envelope_init_zero;
	env.which_msg = kp_Envelope_transcoder_demand_tag;
	env.msg.transcoder_demand.jobs = n;
	int r = kp_worker_send_supervisor(worker, &env);
	if (r < 0) {
		kp_err("telling keeppeekd of %u transcode jobs failed: %s", (unsigned)n, strerror(-r));
		return;
	}
	demand_sent = n;
}

static void send_open(struct rtc_tx_job *j)
{
	kp_Envelope env = kp_Envelope_init_zero;
	env.which_msg = kp_Envelope_transcode_open_tag;
	kp_TranscodeOpen *o = &env.msg.transcode_open;
	o->job = j->id;
	o->kind = j->kind;
	snprintf(o->name, sizeof o->name, "%s", j->name);
	o->sample_rate = j->rate;
	o->channels = j->channels;
	memcpy(o->config.bytes, j->config, j->config_len);
	o->config.size = (pb_size_t)j->config_len;
	int r = kp_worker_send_peer(worker, kp_Peer_PEER_TRANSCODER, &env, NULL, 0);
	if (r < 0) {
		kp_warn("transcode job %u (%s): opening it in the transcoder failed: %s; tried again with its next "
			"frame",
			(unsigned)j->id, j->name, strerror(-r));
		return;
	}
	j->sent_open = true;
	j->wait_key = true;
}

static void unlink_job(struct rtc_tx_job *j)
{
	for (struct rtc_tx_job **p = &jobs; *p; p = &(*p)->next)
		if (*p == j) {
			*p = j->next;
			return;
		}
}

enum which { WAITING, STARTED };

/* Ends the jobs not yet sent to a transcoder (WAITING), or those that had output or were
 * opened again already (STARTED), with err and reason, for their owners; then the
 * demand. The jobs to end are marked first and taken from the list one at a time: an
 * owner's lost callback may close other jobs (a session that ends leaves its camera's
 * live audio, whose AAC -> Opus job may be one of those marked), and a job closed so is
 * gone from the list, never touched again here; jobs opened by a callback are not
 * marked. */
static void fail(enum which which, int err, const char *reason)
{
	for (struct rtc_tx_job *j = jobs; j; j = j->next)
		j->failing = which == WAITING ? !j->sent_open : j->had_output || j->reopened;
	for (;;) {
		struct rtc_tx_job **p = &jobs;
		while (*p && !(*p)->failing)
			p = &(*p)->next;
		struct rtc_tx_job *j = *p;
		if (!j)
			break;
		*p = j->next;
		st.lost++;
		st.dropped_tx += j->dropped_tx;
		kp_warn("transcode job %u (%s) lost: %s", (unsigned)j->id, j->name, reason);
		j->lost(j->arg, err, reason);
		free(j);
	}
	send_demand();
}

static void on_start_timeout(uv_timer_t *t)
{
	(void)t;
	if (link_up)
		return;
	char why[96];
	snprintf(why, sizeof why, "the transcoder did not start within %d ms", KP_TRANSCODER_START_MS);
	fail(WAITING, EPIPE, why);
}

void rtc_tx_on_link(bool up)
{
	link_up = up;
	if (up) {
		if (timer_ready)
			uv_timer_stop(&start_timer);
		for (struct rtc_tx_job *j = jobs; j; j = j->next)
			if (!j->sent_open)
				send_open(j);
		return;
	}
	if (jobs)
		st.links_lost++;
	for (struct rtc_tx_job *j = jobs; j; j = j->next)
		j->sent_open = false;
	/* A job that has shown nothing yet is opened again in the next transcoder (once:
	 * its own input may be what killed this one); the others end, told. */
	fail(STARTED, EPIPE, "the transcoder stopped (it crashed or was killed)");
	for (struct rtc_tx_job *j = jobs; j; j = j->next) {
		j->reopened = true;
		kp_notice("transcode job %u (%s) waits for the transcoder to start again", (unsigned)j->id, j->name);
	}
	if (jobs && timer_ready && !uv_is_active((uv_handle_t *)&start_timer))
		uv_timer_start(&start_timer, on_start_timeout, KP_TRANSCODER_START_MS, 0);
}

struct rtc_tx_job *rtc_tx_open(const struct rtc_tx_spec *spec, rtc_tx_out_cb out, rtc_tx_lost_cb lost, void *arg)
{
	bool video = spec->kind == kp_TranscodeKind_TRANSCODE_H265_H264;
	if ((!video && spec->kind != kp_TranscodeKind_TRANSCODE_AAC_OPUS) || !lost || !worker ||
	    spec->config_len > sizeof((struct rtc_tx_job *)0)->config) {
		errno = EINVAL;
		return NULL;
	}
	unsigned max = video ? max_video : max_audio;
	if (count(spec->kind) >= max) {
		st.refused++;
		kp_notice("transcode job for %s refused: %u %s jobs are open, the most %s allows", spec->name, max,
			  video ? "video" : "audio", video ? "[rtc] max_transcodes" : "rtcd");
		errno = EBUSY;
		return NULL;
	}
	struct rtc_tx_job *j = calloc(1, sizeof *j);
	if (!j) {
		errno = ENOMEM;
		return NULL;
	}
	if (++next_id == 0)
		next_id = 1;
	j->id = next_id;
	j->kind = spec->kind;
	snprintf(j->name, sizeof j->name, "%s", spec->name);
	j->rate = spec->rate;
	j->channels = spec->channels;
	if (spec->config_len)
		memcpy(j->config, spec->config, spec->config_len);
	j->config_len = spec->config_len;
	j->out = out;
	j->lost = lost;
	j->arg = arg;
	j->wait_key = true;
	j->next = jobs;
	jobs = j;
	st.opened++;
	if (link_up)
		send_open(j);
	else if (timer_ready && !uv_is_active((uv_handle_t *)&start_timer))
		uv_timer_start(&start_timer, on_start_timeout, KP_TRANSCODER_START_MS, 0);
	send_demand();
	kp_info("transcode job %u (%s) opened%s", (unsigned)j->id, j->name,
		link_up ? "" : "; waiting for the transcoder to start");
	return j;
}

int rtc_tx_feed(struct rtc_tx_job *j, const uint8_t *data, size_t len, int64_t pts, int64_t wall_ms, bool keyframe)
{
	if (link_up && !j->sent_open)
		send_open(j);
	if (!link_up || !j->sent_open || (j->wait_key && !keyframe)) {
		st.dropped_in++;
		return -EAGAIN;
	}
	kp_Envelope env = kp_Envelope_init_zero;
	env.which_msg = kp_Envelope_transcode_input_tag;
	kp_TranscodeInput *in = &env.msg.transcode_input;
	in->job = j->id;
	in->pts = pts;
	in->wall_ms = wall_ms;
	in->keyframe = keyframe;
	in->force_key = j->force_key;
	int r = kp_worker_send_peer(worker, kp_Peer_PEER_TRANSCODER, &env, data, len);
	if (r < 0) {
		/* The link's queue is full (or it just went down): drop to the next keyframe. */
		j->wait_key = true;
		st.dropped_in++;
		return -EAGAIN;
	}
	j->wait_key = false;
	j->force_key = false;
	st.frames_in++;
	return 0;
}

void rtc_tx_force_key(struct rtc_tx_job *j)
{
	j->force_key = true;
}

void rtc_tx_close(struct rtc_tx_job *j)
{
	if (!j)
		return;
	if (link_up && j->sent_open) {
		kp_Envelope env = kp_Envelope_init_zero;
		env.which_msg = kp_Envelope_transcode_close_tag;
		env.msg.transcode_close.job = j->id;
		int r = kp_worker_send_peer(worker, kp_Peer_PEER_TRANSCODER, &env, NULL, 0);
		if (r < 0)
			kp_warn("transcode job %u (%s): closing it in the transcoder failed: %s", (unsigned)j->id,
				j->name, strerror(-r));
	}
	unlink_job(j);
	st.dropped_tx += j->dropped_tx;
	kp_info("transcode job %u (%s) closed", (unsigned)j->id, j->name);
	free(j);
	send_demand();
}

static void audio_out(void *arg, const struct rtc_tx_frame *f)
{
	struct rtc_tx_job *j = arg;
	struct rtc_audio_frame a = {
	    .data = f->data,
	    .len = f->len,
	    .codec = kp_AudioCodec_AUDIO_OPUS,
	    .rate = f->rate,
	    .channels = f->channels,
	    .pts = f->pts,
	    .wall_ms = f->wall_ms,
	};
	j->audio_out(j->arg, &a);
}

struct rtc_tx_job *rtc_tx_open_audio(const char *name, uint32_t rate, uint32_t channels, const uint8_t *config,
				     size_t config_len, rtc_audio_cb out, rtc_tx_lost_cb lost, void *arg)
{
	struct rtc_tx_spec spec = {
	    .kind = kp_TranscodeKind_TRANSCODE_AAC_OPUS,
	    .name = name,
	    .rate = rate,
	    .channels = channels,
	    .config = config,
	    .config_len = config_len,
	};
	if (!out) {
		errno = EINVAL;
		return NULL;
	}
	struct rtc_tx_job *j = rtc_tx_open(&spec, audio_out, lost, arg);
	if (j)
		j->audio_out = out;
	return j;
}

int rtc_tx_feed_audio(struct rtc_tx_job *j, const struct rtc_audio_frame *a)
{
	if (a->codec != kp_AudioCodec_AUDIO_AAC || a->rate != j->rate || a->channels != j->channels)
		return -EINVAL;
	return rtc_tx_feed(j, a->data, a->len, a->pts, a->wall_ms, true);
}

static struct rtc_tx_job *find(uint32_t id)
{
	for (struct rtc_tx_job *j = jobs; j; j = j->next)
		if (j->id == id)
			return j;
	return NULL;
}

void rtc_tx_on_frame(struct kp_ipc_frame *f)
{
	const kp_Envelope *env = f->env;
	if (env->which_msg == kp_Envelope_transcode_output_tag) {
		const kp_TranscodeOutput *o = &env->msg.transcode_output;
		struct rtc_tx_job *j = find(o->job);
		if (!j)
			return; /* closed meanwhile */
		j->dropped_tx = o->dropped_in + o->dropped_out;
		j->had_output = true;
		st.frames_out++;
		struct rtc_tx_frame out = {
		    .data = f->tail,
		    .len = f->tail_len,
		    .keyframe = o->keyframe,
		    .pts = o->pts,
		    .wall_ms = o->wall_ms,
		    .width = o->width,
		    .height = o->height,
		    .rate = o->sample_rate,
		    .channels = o->channels,
		};
		j->out(j->kind == kp_TranscodeKind_TRANSCODE_AAC_OPUS ? (void *)j : j->arg, &out);
		return;
	}
	if (env->which_msg != kp_Envelope_transcode_ended_tag)
		return;
	const kp_TranscodeEnded *e = &env->msg.transcode_ended;
	struct rtc_tx_job *j = find(e->job);
	if (!j)
		return;
	unlink_job(j);
	st.dropped_tx += j->dropped_tx;
	if (e->error == EBUSY)
		st.refused++;
	else
		st.lost++;
	kp_warn("transcode job %u (%s) ended by the transcoder: %s", (unsigned)j->id, j->name, e->reason);
	j->lost(j->arg, e->error > 0 ? e->error : EIO, e->reason);
	free(j);
	send_demand();
}
