/* The media a WebRTC session sends, whatever its source: access units in Annex-B with
 * their timing, and audio frames (Opus). Live sources (ingestd's access units, GOP cache), stored playback
 * cursors (playback.c, fragments read through descriptors from recorderd) and the
 * H.265->H.264 transcode (transcode.c) all hand a session rtc_au values through an
 * rtc_au_cb; the session packetizes and sends them. */
#ifndef KP_RTCD_MEDIA_H
#define KP_RTCD_MEDIA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "ipc.h"
#include "keeppeek.pb.h"
#include "worker.h"

struct rtc_au {
	const uint8_t *data; /* Annex-B, start codes included; parameter sets before a keyframe */
	size_t len;
	kp_Codec codec;
	bool keyframe;
	int64_t pts_90k; /* presentation time on the source's 90 kHz clock */
	int64_t dts_90k; /* decode time (live and transcoded units; the MSE timeline), <= pts_90k */
	int64_t wall_ms; /* wall-clock time of the frame (Unix ms) */
	uint32_t width, height;
};

typedef void (*rtc_au_cb)(void *arg, const struct rtc_au *au);

/* One audio frame a session may send: Opus as the camera sent it or as recorded
 * (passthrough), or Opus from the transcoder's audio job. */
struct rtc_audio_frame {
	const uint8_t *data;
	size_t len;
	kp_AudioCodec codec;
	uint32_t rate, channels;
	int64_t pts; /* in 1/rate units */
	int64_t wall_ms;
	const uint8_t *config; /* AAC: the AudioSpecificConfig (the transcoder's input format) */
	size_t config_len;
};

typedef void (*rtc_audio_cb)(void *arg, const struct rtc_audio_frame *a);

/* ---- live audio (audio_live.c) ---- */

/* ingestd's AudioUnit of a camera's main stream (routed by main.c). */
void rtc_audio_live_on_unit(const kp_AudioUnit *m, const uint8_t *data, size_t len);
/* The codec of the camera's live audio: AUDIO_NONE when none arrived in the last
 * RTC_AUDIO_STALE_MS. */
kp_AudioCodec rtc_audio_live_codec(const char *camera);
/* Delivers the camera's live audio frames to cb(arg) until rtc_audio_live_leave. 0 or
 * -ENOMEM. */
int rtc_audio_live_join(const char *camera, rtc_audio_cb cb, void *arg);
void rtc_audio_live_leave(const char *camera, void *arg);

/* ---- stored playback (playback.c) ---- */
struct rtc_cursor;

struct rtc_cursor_state {
	int64_t position_ms; /* wall-clock time of the last frame handed out */
	bool playing;
	unsigned rate;     /* 1, 2, 4, 8 */
	bool ended;        /* nothing recorded after position */
	const char *error; /* non-NULL: the cursor failed (a sentence) */
};

typedef void (*rtc_cursor_state_cb)(void *arg, const struct rtc_cursor_state *st);

/* Opens a cursor on camera/stream at the keyframe at or before at_ms and starts playing
 * at 1x (asks recorderd for MediaPiece descriptors and paces frames by their recorded
 * timestamps). NULL with errno EMFILE when the server-wide ceiling (1,024) is reached;
 * the per-session ceiling (16) is the session's to count. */
struct rtc_cursor *rtc_cursor_open(struct kp_worker *w, const char *camera, unsigned stream, int64_t at_ms,
				   rtc_au_cb au, rtc_cursor_state_cb state, void *arg);
/* The recording's audio track (track 2) from now on, to audio(arg of rtc_cursor_open):
 * paced with the video at rate 1, none at other rates. */
void rtc_cursor_set_audio(struct rtc_cursor *c, rtc_audio_cb audio);
void rtc_cursor_play(struct rtc_cursor *c);
void rtc_cursor_pause(struct rtc_cursor *c);
void rtc_cursor_seek(struct rtc_cursor *c, int64_t at_ms);
/* 1, 2, 4 or 8; above 2 only keyframes are sent. -EINVAL for another rate. */
int rtc_cursor_rate(struct rtc_cursor *c, unsigned rate);
void rtc_cursor_close(struct rtc_cursor *c);
unsigned rtc_cursors_open_count(void);
/* MediaPiece frames from recorderd (routed by main.c). */
void rtc_playback_on_piece(struct kp_ipc_frame *f);

/* ---- H.265 -> H.264 transcode (transcode.c, a job in the transcoder process) ---- */
struct rtc_transcode;

/* The transcode ended under its viewer (the transcoder died, or its codec failed): err
 * an errno, reason a sentence. The viewer must still release it. */
typedef void (*rtc_transcode_lost_cb)(void *arg, int err, const char *reason);

/* One transcode job per camera stream, shared by its viewers: the first viewer opens it,
 * the last one's release closes it. NULL with errno EBUSY when the configured number of
 * concurrent transcodes is running. Output goes to every subscriber's callback. */
struct rtc_transcode *rtc_transcode_acquire(const char *camera, unsigned stream, rtc_au_cb au,
					    rtc_transcode_lost_cb lost, void *arg);
void rtc_transcode_release(struct rtc_transcode *t, void *arg);
/* Live H.265 access units of that camera stream (from ingestd), fed by main.c. */
void rtc_transcode_feed(const char *camera, unsigned stream, const struct rtc_au *au);
void rtc_transcode_set_max(unsigned max_concurrent);
unsigned rtc_transcodes_running(void);

#endif
