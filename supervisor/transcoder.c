/* The transcoder on demand (decision 0014): rtcd and recorderd (event pictures, decision
 * 0021) say how many transcode jobs they have (TranscoderDemand); while the sum is above
 * 0 the transcoder is started (the link mesh then links it to both), at 0 it is stopped
 * after KP_TRANSCODER_LINGER_MS so that a viewer who reloads the page finds it running.
 * An asker's exit counts as a demand of 0 from it. */
#include <stdio.h>

#include "kp_limits.h"
#include "log.h"
#include "supervisor.h"

static void on_linger(uv_timer_t *t)
{
	struct supervisor *s = t->data;
	struct proc *p = proc_by_peer(s, kp_Peer_PEER_TRANSCODER);
	char why[64];
	snprintf(why, sizeof why, "no transcode job for %d ms", KP_TRANSCODER_LINGER_MS);
	if (!s->transcode_jobs && !s->picture_jobs && p)
		proc_stop(p, why);
}

void transcoder_demand(struct supervisor *s, kp_Peer from, uint32_t jobs)
{
	struct proc *p = proc_by_peer(s, kp_Peer_PEER_TRANSCODER);
	if (!p || s->stopping)
		return;
	if (!s->linger_timer.data) {
		uv_timer_init(s->loop, &s->linger_timer);
		s->linger_timer.data = s;
	}
	if (from == kp_Peer_PEER_RECORDERD)
		s->picture_jobs = jobs;
	else
		s->transcode_jobs = jobs;
	jobs = s->transcode_jobs + s->picture_jobs;
	if (!jobs) {
		if (p->state != PROC_STOPPED && !p->stop_wanted)
			uv_timer_start(&s->linger_timer, on_linger, KP_TRANSCODER_LINGER_MS, 0);
		return;
	}
	uv_timer_stop(&s->linger_timer);
	if (p->state == PROC_STOPPED || p->stop_wanted)
		kp_info("starting the transcoder: rtcd has %u transcode jobs, recorderd %u picture jobs",
			(unsigned)s->transcode_jobs, (unsigned)s->picture_jobs);
	int r = proc_start(p);
	if (r < 0)
		kp_err("starting the transcoder for %u jobs failed: %s", (unsigned)jobs, uv_strerror(r));
}

int transcoder_start(struct supervisor *s)
{
	struct proc *p = proc_by_peer(s, kp_Peer_PEER_TRANSCODER);
	int r = proc_start(p);
	if (r < 0)
		return r;
	transcoder_demand(s, kp_Peer_PEER_RTCD, s->transcode_jobs);
	return 0;
}

void transcoder_close(struct supervisor *s)
{
	if (s->linger_timer.data)
		uv_close((uv_handle_t *)&s->linger_timer, NULL);
}
