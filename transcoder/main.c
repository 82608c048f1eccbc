/* keeppeek-transcoder: the process that decodes and encodes for rtcd (decision 0014),
 * started by keeppeekd while rtcd has transcode jobs and linked to rtcd alone. It
 * declares the worker (its peer, confinement, ceilings, nice level) and routes rtcd's
 * TranscodeOpen, TranscodeInput and TranscodeClose to the jobs (job.c), whose output
 * goes back as TranscodeOutput; a job that ends on its own is told as TranscodeEnded. */
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

static void send_ended(uint32_t job, int err, const char *reason)
{
	kp_Envelope env = kp_Envelope_init_zero;
	env.which_msg = kp_Envelope_transcode_ended_tag;
	env.msg.transcode_ended.job = job;
	env.msg.transcode_ended.error = err < 0 ? -err : err;
	snprintf(env.msg.transcode_ended.reason, sizeof env.msg.transcode_ended.reason, "%s", reason);
	int r = kp_worker_send_peer(worker, kp_Peer_PEER_RTCD, &env, NULL, 0);
	if (r < 0)
		kp_warn("job %u: telling rtcd it ended failed: %s", (unsigned)job, strerror(-r));
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
	/* A full queue to rtcd (-ENOBUFS) drops the frame: job.c counts it. */
	return kp_worker_send_peer(worker, kp_Peer_PEER_RTCD, &env, f->data, f->len) == 0;
}

static void on_ended(void *arg, uint32_t job, int err, const char *reason)
{
	(void)arg;
	send_ended(job, err, reason);
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

static void on_open(const kp_TranscodeOpen *m)
{
	struct tx_job_open o = {
	    .job = m->job,
	    .kind = m->kind,
	    .name = m->name,
	    .rate = m->sample_rate,
	    .channels = m->channels,
	    .config = m->config.bytes,
	    .config_len = m->config.size,
	};
	char why[128];
	int r = tx_job_open(&o, why, sizeof why);
	if (r < 0) {
		kp_notice("job %u (%s) refused: %s", (unsigned)m->job, m->name, why[0] ? why : strerror(-r));
		send_ended(m->job, r, why[0] ? why : strerror(-r));
	}
}

static void on_peer_frame(struct kp_worker *w, kp_Peer from, struct kp_ipc_frame *f)
{
	(void)w;
	(void)from;
	const kp_Envelope *env = f->env;
	switch (env->which_msg) {
	case kp_Envelope_transcode_open_tag:
		on_open(&env->msg.transcode_open);
		break;
	case kp_Envelope_transcode_input_tag: {
		const kp_TranscodeInput *in = &env->msg.transcode_input;
		tx_job_input(in->job, f->tail, f->tail_len, in->pts, in->wall_ms, in->keyframe, in->force_key);
		break;
	}
	case kp_Envelope_transcode_close_tag:
		tx_job_close(env->msg.transcode_close.job);
		break;
	default:
		break;
	}
}

/* rtcd's jobs ended with its link; a new rtcd opens its own. */
static void on_peer_lost(struct kp_worker *w, kp_Peer peer)
{
	(void)w;
	(void)peer;
	tx_jobs_close_all();
}

static void on_stop(struct kp_worker *w)
{
	(void)w;
	tx_jobs_close_all();
}

static const struct kp_worker_def transcoder = {
    .name = "transcoder",
    .self = kp_Peer_PEER_TRANSCODER,
    .peers = {kp_Peer_PEER_RTCD},
    .npeers = 1,
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
