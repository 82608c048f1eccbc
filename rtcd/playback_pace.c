/* Pacing stored frames by their recorded timestamps (see playback_pace.h). */
#include "playback_pace.h"

void rtc_pace_init(struct rtc_pace *p)
{
	*p = (struct rtc_pace){.rate = 1};
}

void rtc_pace_unanchor(struct rtc_pace *p)
{
	p->anchored = false;
}

void rtc_pace_set_rate(struct rtc_pace *p, unsigned rate, int64_t now_us)
{
	if (p->anchored) {
		p->media_ref += (now_us - p->clock_ref) * (int64_t)p->rate;
		p->clock_ref = now_us;
	}
	p->rate = rate;
}

int64_t rtc_pb_media_us(const struct rtc_pb_frag *f, unsigned i)
{
	const struct fmp4_sample_info *s = &f->frag.samples[i];
	uint64_t ticks = s->dts - f->frag.base_time;
	return f->start_ms * 1000 + (int64_t)(ticks * 1000000 / f->track.timescale);
}

static void anchor(struct rtc_pace *p, int64_t media_us, int64_t now_us)
{
	p->media_ref = media_us;
	p->clock_ref = now_us;
	p->anchored = true;
}

int rtc_pb_step(struct rtc_pb_frag *f, struct rtc_pace *p, int64_t now_us, struct rtc_pb_out *out, int64_t *wait_us)
{
	while (f->next < f->frag.nsamples && p->rate > 2 && !f->frag.samples[f->next].keyframe)
		f->next++;
	if (f->next >= f->frag.nsamples)
		return -1;
	int64_t media = rtc_pb_media_us(f, f->next);
	if (!p->anchored)
		anchor(p, media, now_us);
	int64_t due = p->clock_ref + (media - p->media_ref) / (int64_t)p->rate;
	if (due - now_us > RTC_PACE_MAX_GAP_US) {
		/* A gap in the recording: go on with what follows it one frame later. */
		anchor(p, media, now_us + RTC_PACE_GAP_STEP_US);
		due = now_us + RTC_PACE_GAP_STEP_US;
	}
	if (due > now_us) {
		*wait_us = due - now_us;
		return 0;
	}
	if (now_us - due > RTC_PACE_MAX_LATE_US || media < p->media_ref) {
		anchor(p, media, now_us);
		due = now_us;
	}
	out->sample = &f->frag.samples[f->next];
	out->media_us = media;
	/* Frames go out in decode order at their decode time; the RTP timestamp is the
	 * presentation time: the composition offset (B-frames) added, at the play rate. */
	int64_t cts_us = (int64_t)out->sample->cts * 1000000 / (int64_t)f->track.timescale;
	out->pts_us = due + cts_us / (int64_t)p->rate;
	f->next++;
	return 1;
}

/* ticks of timescale ts in microseconds, without overflow. */
static int64_t ticks_us(uint64_t t, uint32_t ts)
{
	return (int64_t)(t / ts) * 1000000 + (int64_t)(t % ts * 1000000 / ts);
}

int64_t rtc_pb_audio_media_us(const struct rtc_pb_frag *f, unsigned i)
{
	return f->start_ms * 1000 + ticks_us(f->frag.audio[i].dts, f->track.audio_timescale) -
	       ticks_us(f->frag.base_time, f->track.timescale);
}

int rtc_pb_audio_step(struct rtc_pb_frag *f, const struct rtc_pace *p, int64_t now_us, struct rtc_pb_out *out,
		      int64_t *wait_us)
{
	if (!p->anchored || !f->track.audio_timescale)
		return -1;
	if (p->rate != 1) {
		f->anext = f->frag.naudio;
		return -1;
	}
	while (f->anext < f->frag.naudio) {
		int64_t media = rtc_pb_audio_media_us(f, f->anext);
		int64_t due = p->clock_ref + (media - p->media_ref);
		if (media < p->media_ref || now_us - due > RTC_PACE_MAX_LATE_US) {
			f->anext++;
			continue;
		}
		if (due > now_us) {
			*wait_us = due - now_us;
			return 0;
		}
		out->sample = &f->frag.audio[f->anext++];
		out->media_us = media;
		out->pts_us = due;
		return 1;
	}
	return -1;
}
