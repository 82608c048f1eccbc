/* The one place that decides where a session's audio comes from and starts it. Live:
 * the camera's audio as ingestd hands it, made Opus once per camera (audio_live.c: Opus
 * passes through, AAC through a shared transcoder job). Playback: the recording's audio
 * track, made Opus for this session (audio_opus.c), at rate 1 only (playback.c). A
 * session whose offer has no Opus, or a live camera without audio, is answered inactive
 * with Opus listed (docs/decisions/0015-webrtc-audio.md). */
#include <errno.h>
#include <stdio.h>

#include "rtcd.h"

enum rtc_audio_src rtc_audio_choose(const struct rtc_session *s, bool opus_offered)
{
	if (!opus_offered)
		return RTC_AUDIO_NONE;
	if (s->mode == RTC_PLAYBACK)
		return RTC_AUDIO_RECORDED; /* whatever the recording has, when it has any */
	switch (rtc_audio_live_codec(s->camera)) {
	case kp_AudioCodec_AUDIO_OPUS:
		return RTC_AUDIO_PASSTHROUGH;
	case kp_AudioCodec_AUDIO_AAC:
		return RTC_AUDIO_TRANSCODE;
	default:
		return RTC_AUDIO_NONE;
	}
}

/* The cursor's audio frames (its arg is the session). */
static void recorded(void *arg, const struct rtc_audio_frame *a)
{
	struct rtc_session *s = arg;
	if (s->audio.bridge)
		rtc_opus_bridge_feed(s->audio.bridge, a);
}

int rtc_audio_start(struct rtc_session *s)
{
	s->audio.ts_init = false;
	if (!s->audio.send || s->audio.src == RTC_AUDIO_NONE)
		return 0;
	if (s->mode == RTC_PLAYBACK) {
		if (!s->audio.bridge) {
			char name[KP_CAMERA_NAME_MAX + 32];
			snprintf(name, sizeof name, "%s playback audio", s->camera);
			s->audio.bridge = rtc_opus_bridge_new(name, rtc_session_audio_cb, s);
			if (!s->audio.bridge)
				return -ENOMEM;
		}
		if (s->cursor)
			rtc_cursor_set_audio(s->cursor, recorded);
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
	if (s->cursor)
		rtc_cursor_set_audio(s->cursor, NULL);
	rtc_opus_bridge_free(s->audio.bridge);
	s->audio.bridge = NULL;
}
