/* keeppeek-transcoder: the process that decodes and encodes for rtcd (decision 0014)
 * and makes event pictures for recorderd (decision 0021), started by keeppeekd while
 * either has jobs and linked to both. It declares the worker (its peers, confinement,
 * ceilings, nice level) and routes each asker's TranscodeOpen, TranscodeInput and
 * TranscodeClose to its jobs (job.c), whose output goes back to that asker as
 * TranscodeOutput; a job that ends on its own is told as TranscodeEnded. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>

#include "job.h"
#include "kp_limits.h"
#include "log.h"
#include "sandbox.h"
#include "worker.h"

static struct kp_worker *worker;

static void send_ended(kp_Peer peer, uint32_t job, int err, const char *reason)
{
	kp_Envelope env = kp_Envelope_init_zero;
	env.which_msg = kp_Envelope_transcode_ended_tag;
	env.msg.transcode_ended.job = job;
	env.msg.transcode_ended.error = err < 0 ? -err : err;
	snprintf(env.msg.transcode_ended.reason, sizeof env.msg.transcode_ended.reason, "%s", reason);
	int r = kp_worker_send_peer(worker, peer, &env, NULL, 0);
	if (r < 0)
		kp_warn("job %u: telling %s it ended failed: %s", (unsigned)job, kp_peer_name(peer), strerror(-r));
}

static bool on_out(void *arg, const struct tx_frame *f)
{
	(void)arg;
	kp_Envelope env = kp_Envelope_init_zero;
	env.which_msg = kp_Envelope_transcode_output_tag;
	kp_TranscodeOutput *o = &env.msg.transcode_output;
	o->job = f->job;
	o->pts = f->pts;
	o->wall_ms = f->wall_ms;
	o->keyframe = f->keyframe;
	o->width = f->width;
	o->height = f->height;
	o->sample_rate = f->rate;
	o->channels = f->channels;
	o->dropped_in = f->dropped_in;
	o->dropped_out = f->dropped_out;
	/* A full queue to the asker (-ENOBUFS) drops the frame: job.c counts it. */
	return kp_worker_send_peer(worker, f->peer, &env, f->data, f->len) == 0;
}

static void on_ended(void *arg, kp_Peer peer, uint32_t job, int err, const char *reason)
{
	(void)arg;
	send_ended(peer, job, err, reason);
}

static void apply_config(struct kp_worker *w)
{
	const kp_WorkerConfig *cfg = kp_worker_config(w);
	tx_jobs_set_max(cfg->rtc_max_transcodes ? cfg->rtc_max_transcodes : 2, KP_TRANSCODE_AUDIO_JOBS);
}

/* The CPU ceiling's first half: below every other worker's priority (the second is the
 * jobs' input queues, which drop to the next keyframe when a job falls behind). */
static int before_confine(struct kp_worker *w)
{
	if (setpriority(PRIO_PROCESS, 0, KP_TRANSCODER_NICE) < 0) {
		kp_err("setting nice level %d failed: %s", KP_TRANSCODER_NICE, strerror(errno));
		return -errno;
	}
	apply_config(w);
	return 0;
}

static int confined(struct kp_worker *w)
{
	static const struct tx_job_hooks hooks = {.out = on_out, .ended = on_ended};
	worker = w;
	tx_jobs_init(kp_worker_loop(w), &hooks);
	return 0;
}

static void on_configured(struct kp_worker *w, uint32_t generation)
{
	(void)generation;
	apply_config(w);
}

static void on_open(kp_Peer from, const kp_TranscodeOpen *m)
{
	struct tx_job_open o = {
	    .peer = from,
	    .job = m->job,
	    .kind = m->kind,
	    .name = m->name,
	    .rate = m->sample_rate,
	    .channels = m->channels,
	    .config = m->config.bytes,
	    .config_len = m->config.size,
	    .width = m->width,
	    .codec = m->codec,
	};
	char why[128];
	int r = tx_job_open(&o, why, sizeof why);
	if (r < 0) {
		kp_notice("job %u (%s) refused: %s", (unsigned)m->job, m->name, why[0] ? why : strerror(-r));
		send_ended(from, m->job, r, why[0] ? why : strerror(-r));
	}
}

static void on_peer_frame(struct kp_worker *w, kp_Peer from, struct kp_ipc_frame *f)
{
	(void)w;
	const kp_Envelope *env = f->env;
	switch (env->which_msg) {
	case kp_Envelope_transcode_open_tag:
		on_open(from, &env->msg.transcode_open);
		break;
	case kp_Envelope_transcode_input_tag: {
		const kp_TranscodeInput *in = &env->msg.transcode_input;
		tx_job_input(from, in->job, f->tail, f->tail_len, in->pts, in->wall_ms, in->keyframe, in->force_key);
		break;
	}
	case kp_Envelope_transcode_close_tag:
		tx_job_close(from, env->msg.transcode_close.job);
		break;
	default:
		break;
	}
}

/* An asker's jobs end with its link; a new one opens its own. */
static void on_peer_lost(struct kp_worker *w, kp_Peer peer)
{
	(void)w;
	tx_jobs_close_all(peer);
}

static void on_stop(struct kp_worker *w)
{
	(void)w;
	tx_jobs_close_all(kp_Peer_PEER_NONE);
}

static const struct kp_worker_def transcoder = {
    .name = "transcoder",
    .self = kp_Peer_PEER_TRANSCODER,
    .peers = {kp_Peer_PEER_RTCD, kp_Peer_PEER_RECORDERD},
    .npeers = 2,
    .fs = KP_WORKER_FS_NONE,
    .rlimit_as = KP_TRANSCODER_AS,
    .rlimit_nofile = 64,
    .syscalls = 0, /* the base set: no sockets of its own, no file writes */
    .on_before_confine = before_confine,
    .on_confined = confined,
    .on_configured = on_configured,
    .on_peer_frame = on_peer_frame,
    .on_peer_lost = on_peer_lost,
    .on_stop = on_stop,
};

int main(int argc, char **argv)
{
	return kp_worker_main(&transcoder, argc, argv);
}
