/* The transcoder on demand (decision 0014): rtcd says how many transcode jobs it has
 * (TranscoderDemand); above 0 the transcoder is started (the link mesh then links it to
 * rtcd), at 0 it is stopped after KP_TRANSCODER_LINGER_MS so that a viewer who reloads
 * the page finds it running. rtcd's exit counts as a demand of 0. */
#include <stdio.h>

#include "kp_limits.h"
#include "log.h"
#include "supervisor.h"

static void on_linger(uv_timer_t *t)
{
	struct supervisor *s = t->data;
	struct proc *p = proc_by_peer(s, kp_Peer_PEER_TRANSCODER);
	char why[64];
	snprintf(why, sizeof why, "rtcd has had no transcode job for %d ms", KP_TRANSCODER_LINGER_MS);
	if (!s->transcode_jobs && p)
		proc_stop(p, why);
}

void transcoder_demand(struct supervisor *s, uint32_t jobs)
{
	struct proc *p = proc_by_peer(s, kp_Peer_PEER_TRANSCODER);
	if (!p || s->stopping)
		return;
	if (!s->linger_timer.data) {
		uv_timer_init(s->loop, &s->linger_timer);
		s->linger_timer.data = s;
	}
	s->transcode_jobs = jobs;
	if (!jobs) {
		if (p->state != PROC_STOPPED && !p->stop_wanted)
			uv_timer_start(&s->linger_timer, on_linger, KP_TRANSCODER_LINGER_MS, 0);
		return;
	}
	uv_timer_stop(&s->linger_timer);
	if (p->state == PROC_STOPPED || p->stop_wanted)
		kp_info("starting the transcoder: rtcd has %u transcode jobs", (unsigned)jobs);
	int r = proc_start(p);
	if (r < 0)
		kp_err("starting the transcoder for rtcd's %u jobs failed: %s", (unsigned)jobs, uv_strerror(r));
}

int transcoder_start(struct supervisor *s)
{
	struct proc *p = proc_by_peer(s, kp_Peer_PEER_TRANSCODER);
	int r = proc_start(p);
	if (r < 0)
		return r;
	transcoder_demand(s, s->transcode_jobs);
	return 0;
}

void transcoder_close(struct supervisor *s)
{
	if (s->linger_timer.data)
		uv_close((uv_handle_t *)&s->linger_timer, NULL);
}
