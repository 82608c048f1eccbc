/* The one place that decides where a session's audio comes from and starts it: Opus as
 * the camera sends it (live) or as recorded (playback) passes through; AAC is the
 * transcoder's audio job, which is not wired here yet: such a session's audio m-line
 * is answered inactive with Opus listed, as for a camera without audio
 * (docs/decisions/0015-webrtc-audio.md). */
#include <errno.h>

#include "rtcd.h"

enum rtc_audio_src rtc_audio_choose(const struct rtc_session *s, bool opus_offered)
{
	if (!opus_offered)
		return RTC_AUDIO_NONE;
	switch (rtc_audio_live_codec(s->camera)) {
	case kp_AudioCodec_AUDIO_OPUS:
		return RTC_AUDIO_PASSTHROUGH;
	case kp_AudioCodec_AUDIO_AAC:
		return RTC_AUDIO_TRANSCODE;
	default:
		return RTC_AUDIO_NONE;
	}
}

int rtc_audio_start(struct rtc_session *s)
{
	s->audio.ts_init = false;
	if (!s->audio.send || s->audio.src != RTC_AUDIO_PASSTHROUGH)
		return 0;
	if (s->mode == RTC_PLAYBACK) {
		if (s->cursor)
			rtc_cursor_set_audio(s->cursor, rtc_session_audio_cb);
		return 0;
	}
	if (s->audio.joined)
		return 0;
	int r = rtc_audio_live_join(s->camera, rtc_session_audio_cb, s);
	if (r == 0)
		s->audio.joined = true;
	return r;
}

void rtc_audio_stop(struct rtc_session *s)
{
	if (s->audio.joined)
		rtc_audio_live_leave(s->camera, s);
	s->audio.joined = false;
}
