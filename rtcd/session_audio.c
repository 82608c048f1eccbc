/* A session's audio stream: Opus frames as RTP packets (RFC 7587 4.2: one frame per
 * packet, timestamps on a 48 kHz clock whatever the encoded bandwidth), SRTP-protected
 * with the session's outbound context under their own SSRC, and their sender report,
 * whose RTP time maps to the same NTP instant as the video's (RFC 3550 6.4.1), which
 * is what a browser lines the two tracks up by. No retransmission: the answer offers
 * no NACK for audio (a lost 20 ms frame is concealed by the decoder). */
#include <errno.h>
#include <string.h>

#include "kp_time.h"
#include "log.h"
#include "rtcd.h"
#include "rtcp.h"

#define OPUS_CLOCK     48000
#define AUDIO_JUMP_SEC 10 /* a timestamp further than this from the last one restarts the clock */

void rtc_session_send_audio(struct rtc_session *s, const struct rtc_audio_frame *a)
{
	struct rtc_audio_out *o = &s->audio;
	if (s->state != RTC_STREAMING || !o->send || a->codec != kp_AudioCodec_AUDIO_OPUS || a->rate != OPUS_CLOCK ||
	    a->len == 0 || a->len > RTC_MTU - RTP_HEADER_SIZE)
		return;
	int64_t d = a->pts - o->ts_base_pts;
	if (!o->ts_init || d < 0 || d > (int64_t)AUDIO_JUMP_SEC * OPUS_CLOCK) {
		/* A new source, a seek or a jump: the RTP clock goes on one 20 ms frame later. */
		o->ts_base_pts = a->pts;
		o->ts_base_rtp = o->last_ts + OPUS_CLOCK / 50;
		o->ts_init = true;
		o->marker = true; /* the first packet of a talkspurt (RFC 7587 4.2) */
	}
	uint32_t ts = o->ts_base_rtp + (uint32_t)(a->pts - o->ts_base_pts);
	uint8_t pkt[RTC_MTU + RTC_SRTP_TRAILER_MAX];
	pkt[0] = 0x80;
	pkt[1] = (uint8_t)((o->marker ? 0x80 : 0) | o->pt);
	pkt[2] = (uint8_t)(o->seq >> 8);
	pkt[3] = (uint8_t)o->seq;
	pkt[4] = (uint8_t)(ts >> 24);
	pkt[5] = (uint8_t)(ts >> 16);
	pkt[6] = (uint8_t)(ts >> 8);
	pkt[7] = (uint8_t)ts;
	pkt[8] = (uint8_t)(o->ssrc >> 24);
	pkt[9] = (uint8_t)(o->ssrc >> 16);
	pkt[10] = (uint8_t)(o->ssrc >> 8);
	pkt[11] = (uint8_t)o->ssrc;
	memcpy(pkt + RTP_HEADER_SIZE, a->data, a->len);
	int l = (int)(RTP_HEADER_SIZE + a->len);
	if (rtc_eng->srtp_protect(s->srtp_out, pkt, &l) < 0) {
		rtc_metrics.srtp_errors++;
		return;
	}
	o->seq++;
	o->marker = false;
	o->last_ts = ts;
	o->last_send_ms = kp_mono_ms();
	if (rtc_eng->ice_send(s->ice, pkt, (size_t)l) < 0)
		return; /* socket full: this frame is lost, the decoder conceals it */
	o->packets++;
	o->octets += (uint32_t)a->len;
	rtc_metrics.audio_packets_sent++;
	rtc_metrics.packets_sent++;
	rtc_metrics.bytes_sent += (uint64_t)l;
}

void rtc_session_audio_cb(void *arg, const struct rtc_audio_frame *a)
{
	rtc_session_send_audio(arg, a);
}

void rtc_session_audio_sr(struct rtc_session *s, uint64_t now_ms, uint64_t ntp)
{
	struct rtc_audio_out *o = &s->audio;
	if (!o->packets)
		return;
	uint8_t buf[128 + RTC_SRTP_TRAILER_MAX + 4];
	struct rtcp_sr sr = {
	    .ssrc = o->ssrc,
	    .ntp = ntp,
	    /* The RTP time of now: the last frame's, plus the time since it was sent. */
	    .rtp_ts = o->last_ts + (uint32_t)((now_ms - o->last_send_ms) * (OPUS_CLOCK / 1000)),
	    .packets = o->packets,
	    .octets = o->octets,
	    .cname = "keeppeek",
	};
	int len = rtcp_write_sr(&sr, buf, 128);
	if (len < 0)
		return;
	if (rtc_eng->srtp_protect_rtcp(s->srtp_out, buf, &len) < 0) {
		rtc_metrics.srtp_errors++;
		return;
	}
	rtc_eng->ice_send(s->ice, buf, (size_t)len);
}
