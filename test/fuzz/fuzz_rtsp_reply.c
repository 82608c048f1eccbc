/* Fuzzes ingestd's RTSP client parsers with camera input: the first byte picks the
 * parser (a reply with its Transport, Session and WWW-Authenticate headers, an SDP with
 * its fmtp values and base64/hex decoding, a URL, an RTP packet into a video track, an
 * RFC 3640 AAC payload), the rest is its input. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "rtp_aac.h"
#include "rtsp_auth.h"
#include "rtsp_msg.h"
#include "rtsp_sdp_read.h"
#include "rtsp_track.h"

static void on_video(void *arg, const struct kp_access_unit *au)
{
	(void)arg;
	(void)au;
}

static void on_audio(void *arg, const struct kp_audio_unit *au)
{
	(void)arg;
	(void)au;
}

static void on_aac(void *arg, const uint8_t *au, size_t len, unsigned k, unsigned n)
{
	(void)arg;
	(void)au;
	(void)len;
	(void)k;
	(void)n;
}

static void reply(const uint8_t *d, size_t n)
{
	static struct rtsp_reply r;
	size_t used;
	const char *why;
	while (n && rtsp_reply_parse(d, n, &r, &used, &why) == 0) {
		const struct rtsp_span *h;
		struct rtsp_transport t;
		char id[RTSP_MAX_SESSION];
		unsigned to;
		if ((h = rtsp_reply_header(&r, "Transport", 0)))
			rtsp_transport_parse(*h, &t, &why);
		if ((h = rtsp_reply_header(&r, "Session", 0)))
			rtsp_session_parse(*h, id, sizeof id, &to, &why);
		struct rtsp_auth a = {.kind = RTSP_AUTH_NONE};
		for (unsigned k = 0; (h = rtsp_reply_header(&r, "WWW-Authenticate", k)); k++)
			rtsp_auth_challenge(&a, *h, &why);
		char out[RTSP_AUTH_MAX_HEADER];
		rtsp_auth_header(&a, "user", "pass", "DESCRIBE", "rtsp://h/x", out, sizeof out);
		d += used;
		n -= used;
	}
	char answer[128];
	rtsp_request_answer(d, n, &used, answer, sizeof answer, &why);
}

static void sdp(const uint8_t *d, size_t n)
{
	static struct sdp_session s;
	const char *why;
	if (sdp_read((const char *)d, n, &s, &why) < 0)
		return;
	for (unsigned i = 0; i < s.n_media; i++) {
		char v[SDP_MAX_FMTP];
		uint8_t b[4096];
		if (sdp_fmtp_get(s.media[i].fmtp, "sprop-parameter-sets", v, sizeof v) == 0)
			sdp_base64_decode(v, strlen(v), b, sizeof b);
		if (sdp_fmtp_get(s.media[i].fmtp, "config", v, sizeof v) == 0)
			sdp_hex_decode(v, b, sizeof b);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	const uint8_t *d = data + 1;
	size_t n = size - 1;
	static const struct rtsp_track_sink sink = {.video = on_video, .audio = on_audio};
	const char *why;
	switch (data[0] % 5) {
	case 0:
		reply(d, n);
		break;
	case 1:
		sdp(d, n);
		break;
	case 2: {
		char url[2048];
		size_t k = n < sizeof url - 1 ? n : sizeof url - 1;
		memcpy(url, d, k);
		url[k] = 0;
		struct rtsp_url u;
		rtsp_url_parse(url, &u, &why);
		break;
	}
	case 3: { /* RTP packets, each prefixed by a 2-byte length */
		static struct rtsp_track t;
		if (rtsp_track_video_init(&t, &sink, n && d[0] & 1 ? KP_CODEC_H265 : KP_CODEC_H264, NULL, 0, 0, 90000) <
		    0)
			return 0;
		int64_t now = 0;
		while (n >= 2) {
			size_t len = (size_t)d[0] << 8 | d[1];
			d += 2;
			n -= 2;
			if (len > n)
				len = n;
			rtsp_track_rtp(&t, d, len, now += 1000, &why);
			d += len;
			n -= len;
		}
		rtsp_track_end(&t);
		rtsp_track_free(&t);
		break;
	}
	default: {
		static struct rtp_aac a;
		if (rtp_aac_init(&a, 13, 3, 3) == 0)
			rtp_aac_push(&a, d, n, true, 0, on_aac, NULL, &why);
		break;
	}
	}
	return 0;
}
