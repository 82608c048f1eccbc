/* SDP for the test camera's RTSP server, with base64 parameter sets. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>

#include "rtsp_sdp.h"

int cam_base64(const uint8_t *in, size_t n, char *out, size_t cap)
{
	static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	if ((n + 2) / 3 * 4 + 1 > cap)
		return -ENOBUFS;
	size_t o = 0;
	for (size_t i = 0; i < n; i += 3) {
		uint32_t v =
		    (uint32_t)in[i] << 16 | (i + 1 < n ? (uint32_t)in[i + 1] << 8 : 0) | (i + 2 < n ? in[i + 2] : 0);
		out[o++] = tab[v >> 18 & 63];
		out[o++] = tab[v >> 12 & 63];
		out[o++] = i + 1 < n ? tab[v >> 6 & 63] : '=';
		out[o++] = i + 2 < n ? tab[v & 63] : '=';
	}
	out[o] = '\0';
	return 0;
}

struct writer {
	char *out;
	size_t cap, len;
	int err;
};

__attribute__((format(printf, 2, 3))) static void put(struct writer *w, const char *fmt, ...)
{
	if (w->err)
		return;
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(w->out + w->len, w->cap - w->len, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= w->cap - w->len)
		w->err = -ENOBUFS;
	else
		w->len += (size_t)n;
}

int cam_sdp_write(const struct cam_sdp_track *t, uint64_t session_id, const char *host, char *out, size_t cap,
		  size_t *ret_len)
{
	char b64[3][1400];
	int first = t->codec == KP_CODEC_H264 ? 1 : 0;
	if ((t->codec != KP_CODEC_H264 && t->codec != KP_CODEC_H265) || t->payload_type < 96 || t->payload_type > 127)
		return -EINVAL;
	for (int i = first; i < 3; i++) {
		if (!t->param[i] || t->param_len[i] < 2)
			return -EINVAL;
		if (cam_base64(t->param[i], t->param_len[i], b64[i], sizeof b64[i]) < 0)
			return -ENOBUFS;
	}
	if (t->codec == KP_CODEC_H264 && t->param_len[1] < 4)
		return -EINVAL; /* profile-level-id comes from SPS bytes 1..3 */
	if (cap == 0)
		return -ENOBUFS;
	struct writer w = {out, cap, 0, 0};
	put(&w, "v=0\r\n");
	put(&w, "o=- %llu 1 IN IP4 %s\r\n", (unsigned long long)session_id, host);
	put(&w, "s=KeepPeek test camera\r\n");
	put(&w, "c=IN IP4 0.0.0.0\r\n");
	put(&w, "t=0 0\r\n");
	put(&w, "a=control:*\r\n");
	put(&w, "a=range:npt=0-\r\n");
	put(&w, "m=video 0 RTP/AVP %u\r\n", t->payload_type);
	if (t->codec == KP_CODEC_H264) {
		const uint8_t *sps = t->param[1];
		put(&w, "a=rtpmap:%u H264/90000\r\n", t->payload_type);
		put(&w, "a=fmtp:%u packetization-mode=1;profile-level-id=%02X%02X%02X;sprop-parameter-sets=%s,%s\r\n",
		    t->payload_type, sps[1], sps[2], sps[3], b64[1], b64[2]);
	} else {
		put(&w, "a=rtpmap:%u H265/90000\r\n", t->payload_type);
		put(&w, "a=fmtp:%u sprop-vps=%s;sprop-sps=%s;sprop-pps=%s\r\n", t->payload_type, b64[0], b64[1],
		    b64[2]);
	}
	if (t->width && t->height)
		put(&w, "a=x-dimensions:%u,%u\r\n", t->width, t->height);
	if (t->fps)
		put(&w, "a=framerate:%u\r\n", t->fps);
	put(&w, "a=control:%s\r\n", t->control);
	const struct cam_sdp_audio *a = t->audio;
	if (a && a->opus) {
		put(&w, "m=audio 0 RTP/AVP %u\r\na=rtpmap:%u opus/48000/2\r\na=fmtp:%u sprop-stereo=%u\r\n",
		    a->payload_type, a->payload_type, a->payload_type, a->channels == 2);
		put(&w, "a=control:%s\r\n", a->control);
	} else if (a && a->pcmu) {
		put(&w, "m=audio 0 RTP/AVP 0\r\na=rtpmap:0 PCMU/8000\r\na=control:%s\r\n", a->control);
	} else if (a) {
		if (!a->config_len || a->config_len > 64 || a->payload_type < 96 || a->payload_type > 127)
			return -EINVAL;
		char hex[129];
		for (size_t i = 0; i < a->config_len; i++)
			snprintf(hex + 2 * i, 3, "%02X", a->config[i]);
		put(&w, "m=audio 0 RTP/AVP %u\r\n", a->payload_type);
		put(&w, "a=rtpmap:%u mpeg4-generic/%u/%u\r\n", a->payload_type, a->rate, a->channels);
		put(&w,
		    "a=fmtp:%u streamtype=5;profile-level-id=15;mode=AAC-hbr;config=%s;sizeLength=13;indexLength=3;"
		    "indexDeltaLength=3\r\n",
		    a->payload_type, hex);
		put(&w, "a=control:%s\r\n", a->control);
	}
	if (w.err)
		return w.err;
	*ret_len = w.len;
	return 0;
}
