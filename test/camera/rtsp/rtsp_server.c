/* The test camera's RTSP server: RTSP/1.0 over TCP (OPTIONS, DESCRIBE, SETUP, PLAY,
 * TEARDOWN, GET_PARAMETER), digest authentication, fixture frames packetized with
 * common/rtp_h26x.c and RTCP sender reports, either interleaved on the RTSP connection
 * (RFC 2326 10.12) or over UDP (RFC 2326 12.39, rtsp_udp.c), a bounded output queue per
 * client, and the drop/stall/garbage/cut-mid-frame faults and the UDP ones (a camera
 * that refuses UDP with 461, one whose UDP never arrives).
 * With --audio (AAC, G.711 or Opus) the main stream has a second track (trackID=1, set
 * up after the video in the same session, as real cameras and libavformat do; interleaved
 * on TCP only): AAC in RFC 3640 AAC-hbr packets, one access unit each (3.2.1:
 * AU-headers-length 16, then a 13-bit size and a 3-bit index), PCMU in 20 ms packets
 * (RFC 3551 4.5.14, payload type 0), or one Opus packet per RTP packet (RFC 7587 4.2,
 * 48 kHz clock); its RTP clock the sample rate, starting with the first audio frame at
 * or after the first video frame sent, with its own sender reports. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "camera.h"
#include "rtp_h26x.h"
#include "rtsp_digest.h"
#include "rtsp_request.h"
#include "rtsp_sdp.h"
#include "rtsp_udp.h"

#define RTSP_REALM          "KeepPeek"
#define RTSP_MTU            1400
#define RTSP_PAYLOAD_TYPE   96
#define RTSP_AUDIO_PT       97
#define RTSP_IN_CAP         (RTSP_MAX_HEADER_BYTES + RTSP_MAX_BODY + 4)
#define RTSP_MAX_QUEUED     (8 * KP_MIB) /* unsent bytes before a client counts as not reading */
#define RTSP_SR_INTERVAL_MS 5000
#define RTSP_RESPONSE_MAX   (CAM_SDP_MAX + 2048)

struct rtsp_server {
	uv_tcp_t tcp;
	const struct cam_config *cfg;
};

struct rtsp_client {
	uv_tcp_t tcp;
	uv_timer_t tick;
	int open_handles;
	struct rtsp_server *srv;
	uint8_t in[RTSP_IN_CAP];
	size_t in_len;
	char nonce[33];
	bool authed;
	int stream; /* 0 main, 1 sub, -1 before SETUP */
	char session[17];
	uint8_t ch_rtp, ch_rtcp;
	struct rtsp_udp *udp; /* RTP over UDP; NULL: interleaved */
	bool playing, stalled, closing;
	struct cam_sub *sub;
	uint64_t accepted_ms, last_sr_ms;
	uint32_t ts_base;
	/* The capture clock: uv_now when the frame of pts 0 was due. Sender reports map now to
	 * RTP time on it for every track, as live555's RTCPInstance does (convertToRTPTimestamp
	 * of the current time), so a frame sent late does not move the mapping. */
	uint64_t clock0_ms;
	bool have_frame;
	uint32_t packets, octets;
	uint8_t *batch;
	size_t batch_len, batch_cap;
	struct rtp_packetizer pk;
	/* the audio track */
	bool audio_setup;
	uint8_t ch_artp, ch_artcp;
	uint32_t a_ssrc, a_ts_base, a_packets, a_octets;
	uint16_t a_seq;
	uint64_t v0_us;
	struct cam_audio_sub *asub;
	/* quirks (cam_faults) */
	uint32_t last_ts; /* the last picture's RTP time */
	bool jumped, restarted;
};

struct write_req {
	uv_write_t req;
	uv_buf_t buf;
	uint8_t data[];
};

static uint64_t slow_clients; /* disconnected for not reading their media */
static bool cut_done;         /* cut-mid-frame happens once, in the first session */

static void random_hex(char *out, size_t bytes)
{
	uint8_t r[32];
	if (getrandom(r, bytes, 0) != (ssize_t)bytes)
		for (size_t i = 0; i < bytes; i++)
			r[i] = (uint8_t)rand();
	for (size_t i = 0; i < bytes; i++)
		snprintf(out + 2 * i, 3, "%02x", r[i]);
}

static uint32_t random_u32(void)
{
	uint32_t v;
	if (getrandom(&v, sizeof v, 0) != sizeof v)
		v = (uint32_t)rand();
	return v;
}

static void on_handle_closed(uv_handle_t *h)
{
	struct rtsp_client *c = h->data;
	if (--c->open_handles == 0) {
		free(c->batch);
		free(c);
	}
}

static void client_close(struct rtsp_client *c, const char *why)
{
	if (c->closing)
		return;
	c->closing = true;
	if (why)
		fprintf(stderr, "keeppeek-test-camera: rtsp: client closed: %s\n", why);
	cam_source_unsubscribe(c->sub);
	c->sub = NULL;
	if (c->udp)
		rtsp_udp_close(c->udp);
	c->udp = NULL;
	cam_audio_unsubscribe(c->asub);
	c->asub = NULL;
	uv_close((uv_handle_t *)&c->tick, on_handle_closed);
	uv_close((uv_handle_t *)&c->tcp, on_handle_closed);
}

static void on_written(uv_write_t *req, int status)
{
	struct rtsp_client *c = req->data;
	free(req);
	if (status < 0 && status != UV_ECANCELED)
		client_close(c, uv_strerror(status));
}

static int client_write(struct rtsp_client *c, const void *data, size_t len)
{
	if (c->closing)
		return -EPIPE;
	struct write_req *w = malloc(sizeof *w + len);
	if (!w)
		return -ENOMEM;
	memcpy(w->data, data, len);
	w->buf = uv_buf_init((char *)w->data, (unsigned)len);
	w->req.data = c;
	int r = uv_write(&w->req, (uv_stream_t *)&c->tcp, &w->buf, 1, on_written);
	if (r < 0) {
		free(w);
		client_close(c, uv_strerror(r));
	}
	return r;
}

/* ---- media ---- */

static struct cam_source *client_source(const struct rtsp_client *c, int stream)
{
	return stream == 0 ? c->srv->cfg->main : stream == 1 ? c->srv->cfg->sub : NULL;
}

static int batch_reserve(struct rtsp_client *c, size_t more)
{
	if (c->batch_cap - c->batch_len >= more)
		return 0;
	size_t cap = c->batch_cap ? c->batch_cap : 64 * 1024;
	while (cap - c->batch_len < more)
		cap *= 2;
	uint8_t *b = realloc(c->batch, cap);
	if (!b)
		return -ENOMEM;
	c->batch = b;
	c->batch_cap = cap;
	return 0;
}

/* Appends one interleaved frame ('$', channel, 16-bit length, data) to the batch. */
static int batch_add(struct rtsp_client *c, uint8_t channel, const uint8_t *data, size_t len)
{
	if (len > RTP_MAX_PACKET || batch_reserve(c, 4 + len) < 0)
		return -ENOMEM;
	uint8_t *p = c->batch + c->batch_len;
	p[0] = '$';
	p[1] = channel;
	p[2] = (uint8_t)(len >> 8);
	p[3] = (uint8_t)len;
	memcpy(p + 4, data, len);
	c->batch_len += 4 + len;
	return 0;
}

static void put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static int send_rtp(struct rtsp_client *c, const uint8_t *pkt, size_t len);

/* Whether an RTP payload is the parameter sets (alone or aggregated). */
static bool param_packet(const struct rtsp_client *c, const uint8_t *payload)
{
	if (c->pk.codec == KP_CODEC_H264) {
		unsigned t = payload[0] & 0x1f;
		return t == 7 || t == 8 || t == 24;
	}
	unsigned t = (payload[0] >> 1) & 0x3f;
	return t == 32 || t == 33 || t == 34 || t == 48;
}

/* The marker and timestamp quirks on one packet (cam_faults). */
static int emit_rtp(void *arg, const uint8_t *pkt, size_t len)
{
	struct rtsp_client *c = arg;
	const struct cam_faults *f = &c->srv->cfg->faults;
	if (!f->sps_marker && !f->no_marker && !f->pt50_dup)
		return send_rtp(c, pkt, len);
	uint8_t q[RTSP_MTU];
	if (len > sizeof q || len <= RTP_HEADER_SIZE)
		return send_rtp(c, pkt, len);
	memcpy(q, pkt, len);
	if (f->sps_marker && c->have_frame && param_packet(c, q + RTP_HEADER_SIZE)) {
		q[1] |= 0x80;
		put32(q + 4, c->last_ts);
	}
	if (f->no_marker)
		q[1] &= 0x7f;
	int r = send_rtp(c, q, len);
	if (r == 0 && f->pt50_dup && (pkt[1] & 0x80)) {
		q[1] = 50; /* the same sequence number, another payload type */
		r = send_rtp(c, q, len);
		c->packets--; /* not one of the stream's (its RTCP counts the real ones) */
		c->octets -= (uint32_t)(len - RTP_HEADER_SIZE);
	}
	return r;
}

static int send_rtp(struct rtsp_client *c, const uint8_t *pkt, size_t len)
{
	c->packets++;
	c->octets += (uint32_t)(len - RTP_HEADER_SIZE);
	if (c->udp) {
		rtsp_udp_send_rtp(c->udp, pkt, len);
		return 0;
	}
	return batch_add(c, c->ch_rtp, pkt, len);
}

static int count_rtp(void *arg, const uint8_t *pkt, size_t len)
{
	(void)pkt, (void)len;
	(*(unsigned *)arg)++;
	return 0;
}

struct cut {
	struct rtsp_client *c;
	unsigned left;
};

static int emit_until_cut(void *arg, const uint8_t *pkt, size_t len)
{
	struct cut *k = arg;
	if (!k->left)
		return 0;
	k->left--;
	return batch_add(k->c, k->c->ch_rtp, pkt, len);
}

static void on_cut_shutdown(uv_shutdown_t *req, int status)
{
	struct rtsp_client *c = req->data;
	(void)status;
	free(req);
	client_close(c, "fault: connection cut in the middle of a frame");
}

/* cut-mid-frame: the first half of this frame's RTP packets (at least one, and at
 * least one short of all of them), then a FIN once they are written, as a camera
 * rebooting or a link going down mid-frame. A frame of one packet is sent whole and the
 * next one is tried. Returns true once the cut is under way. */
static bool cut_mid_frame(struct rtsp_client *c, const struct cam_frame *f, uint32_t ts)
{
	unsigned n = 0;
	struct rtp_packetizer saved = c->pk;
	if (rtp_packetize(&c->pk, f->data, f->len, ts, count_rtp, &n) != 0 || n < 2) {
		c->pk = saved;
		return false;
	}
	c->pk = saved;
	struct cut k = {.c = c, .left = n / 2};
	c->batch_len = 0;
	uv_shutdown_t *req = malloc(sizeof *req);
	if (!req || rtp_packetize(&c->pk, f->data, f->len, ts, emit_until_cut, &k) != 0 ||
	    client_write(c, c->batch, c->batch_len) < 0) {
		free(req);
		client_close(c, "cannot cut a frame");
		return true;
	}
	cut_done = true;
	c->stalled = true;
	fprintf(stderr,
		"keeppeek-test-camera: rtsp: fault: cutting the connection after %u of %u RTP packets of frame %llu\n",
		n / 2, n, (unsigned long long)f->seq);
	req->data = c;
	if (uv_shutdown(req, (uv_stream_t *)&c->tcp, on_cut_shutdown) < 0) {
		free(req);
		client_close(c, "fault: connection cut in the middle of a frame");
	}
	return true;
}

static void send_garbage(struct rtsp_client *c)
{
	uint8_t junk[1400];
	for (size_t i = 0; i < sizeof junk; i++)
		junk[i] = (uint8_t)random_u32();
	client_write(c, junk, sizeof junk);
}

static bool fault_due(const struct rtsp_client *c, unsigned after_s)
{
	return after_s && uv_now(c->tcp.loop) - c->accepted_ms >= (uint64_t)after_s * 1000;
}

/* RTCP compound packet: sender report plus SDES CNAME (RFC 3550 6.4.1, 6.5) for one
 * track: its SSRC, its RTP time now (last_ts at uv_now last_ms, clock rate per second)
 * and counts, on its RTCP channel. */
static void send_sender_report(struct rtsp_client *c, uint32_t ssrc, uint32_t last_ts, uint64_t last_ms, uint32_t rate,
			       uint32_t packets, uint32_t octets, uint8_t channel)
{
	static const char cname[] = "keeppeek-test-camera";
	uint8_t p[28 + 8 + 2 + sizeof cname + 3];
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	p[0] = 0x80;
	p[1] = 200;
	p[2] = 0;
	p[3] = 6;
	put32(p + 4, ssrc);
	put32(p + 8, (uint32_t)(now.tv_sec + 2208988800u));
	put32(p + 12, (uint32_t)(((uint64_t)now.tv_nsec << 32) / 1000000000u));
	put32(p + 16, last_ts + (uint32_t)((uv_now(c->tcp.loop) - last_ms) * rate / 1000));
	put32(p + 20, packets);
	put32(p + 24, octets);
	size_t sdes = 4 + 4 + 2 + (sizeof cname - 1) + 1; /* header, SSRC, item, end */
	size_t padded = (sdes + 3) & ~(size_t)3;
	memset(p + 28, 0, padded);
	p[28] = 0x81;
	p[29] = 202;
	p[30] = 0;
	p[31] = (uint8_t)(padded / 4 - 1);
	put32(p + 32, ssrc);
	p[36] = 1;
	p[37] = (uint8_t)(sizeof cname - 1);
	memcpy(p + 38, cname, sizeof cname - 1);
	if (c->udp && channel == c->ch_rtcp) { /* video over UDP: its RTCP port */
		rtsp_udp_send_rtcp(c->udp, p, 28 + padded);
		return;
	}
	c->batch_len = 0;
	if (batch_add(c, channel, p, 28 + padded) == 0)
		client_write(c, c->batch, c->batch_len);
}

/* Sender reports for every track before the first media packet, one NTP time for the
 * RTP times of the first video frame, as live555's RTCPInstance does (its first report
 * goes out when the session starts, RFC 3550 6.2 leaves the first interval open): a
 * receiver then maps both tracks to one clock from their first packets (RFC 3550 6.4.1). */
static void first_reports(struct rtsp_client *c, const struct cam_frame *f, uint32_t ts)
{
	uint64_t now = uv_now(c->tcp.loop);
	c->clock0_ms = now > f->pts_us / 1000 ? now - f->pts_us / 1000 : 0;
	send_sender_report(c, c->pk.ssrc, ts, now, 90000, 0, 0, c->ch_rtcp);
	if (!c->audio_setup)
		return;
	uint32_t rate = cam_audio_rate(c->srv->cfg->audio);
	send_sender_report(c, c->a_ssrc, c->a_ts_base + (uint32_t)(f->pts_us * rate / 1000000), now, rate, 0, 0,
			   c->ch_artcp);
}

/* The audio the RTSP main stream carries: AAC or G.711 (ADPCM is Baichuan's). */
static struct cam_audio *rtsp_audio(const struct rtsp_client *c)
{
	struct cam_audio *a = c->srv->cfg->audio;
	return a && cam_audio_kind(a) != CAM_AUDIO_ADPCM ? a : NULL;
}

/* One AAC frame as one RTP packet (RFC 3640 3.2.1, 3.3.6), marker set (3.2); or one
 * G.711 packet (RFC 3551 4.5.14), marker clear. */
static void on_audio(const struct cam_audio_frame *f, void *arg)
{
	struct rtsp_client *c = arg;
	if (c->closing || c->stalled || f->raw_len > 8191 || f->raw_len > RTSP_MTU)
		return;
	enum cam_audio_kind kind = cam_audio_kind(c->srv->cfg->audio);
	bool pcmu = kind == CAM_AUDIO_PCMU, raw = pcmu || kind == CAM_AUDIO_OPUS;
	uint8_t p[RTP_HEADER_SIZE + 4 + RTSP_MTU];
	uint32_t ts = c->a_ts_base + (uint32_t)(f->pts_us * cam_audio_rate(c->srv->cfg->audio) / 1000000);
	p[0] = 0x80;
	p[1] = pcmu ? 0 : kind == CAM_AUDIO_OPUS ? RTSP_AUDIO_PT : 0x80 | RTSP_AUDIO_PT;
	p[2] = (uint8_t)(c->a_seq >> 8);
	p[3] = (uint8_t)c->a_seq;
	c->a_seq++;
	put32(p + 4, ts);
	put32(p + 8, c->a_ssrc);
	size_t at = RTP_HEADER_SIZE;
	if (!raw) {
		p[at++] = 0;
		p[at++] = 16; /* AU-headers-length in bits */
		p[at++] = (uint8_t)(f->raw_len >> 5);
		p[at++] = (uint8_t)(f->raw_len << 3); /* AU-index 0 */
	}
	memcpy(p + at, f->raw, f->raw_len);
	size_t len = at + f->raw_len;
	c->batch_len = 0;
	if (batch_add(c, c->ch_artp, p, len) < 0 || client_write(c, c->batch, c->batch_len) < 0)
		return;
	if (!c->a_packets)
		cam_stats.audio_rtsp.first_offset_us = (int64_t)(f->pts_us - c->v0_us);
	c->a_packets++;
	c->a_octets += (uint32_t)(len - RTP_HEADER_SIZE);
	cam_stats.audio_rtsp.frames_sent++;
}

static void on_frame(const struct cam_frame *f, void *arg)
{
	struct rtsp_client *c = arg;
	const struct cam_faults *faults = &c->srv->cfg->faults;
	if (c->closing || c->stalled)
		return;
	if (fault_due(c, faults->stall_after_s)) {
		c->stalled = true; /* keep the socket, say nothing more */
		uv_read_stop((uv_stream_t *)&c->tcp);
		return;
	}
	if (fault_due(c, faults->garbage_after_s)) {
		send_garbage(c);
		return;
	}
	if (uv_stream_get_write_queue_size((uv_stream_t *)&c->tcp) > RTSP_MAX_QUEUED) {
		slow_clients++;
		fprintf(stderr, "keeppeek-test-camera: rtsp: %llu client(s) disconnected for not reading\n",
			(unsigned long long)slow_clients);
		client_close(c, "output queue over 8 MiB");
		return;
	}
	if (fault_due(c, faults->seq_jump_s) && !c->jumped) {
		c->jumped = true;
		c->pk.seq = (uint16_t)(c->pk.seq - 10000); /* back: the harder way for a reorder window */
		fprintf(stderr, "keeppeek-test-camera: rtsp: seq-jump: sequence jumps to %u\n", c->pk.seq);
	}
	if (fault_due(c, faults->ssrc_change_s) && !c->restarted) {
		c->restarted = true; /* an encoder restart: all three start again */
		c->pk.ssrc = random_u32();
		c->pk.seq = (uint16_t)random_u32();
		c->ts_base = random_u32();
		fprintf(stderr, "keeppeek-test-camera: rtsp: ssrc-change: SSRC %08X\n", c->pk.ssrc);
	}
	uint32_t ts = c->ts_base + (uint32_t)(f->pts_us * 9 / 100);
	if (!c->udp && !cut_done && fault_due(c, faults->cut_mid_frame_s) && cut_mid_frame(c, f, ts))
		return;
	if (c->udp && faults->udp_silent)
		return; /* frames that never arrive are not counted as sent */
	if (!c->have_frame)
		first_reports(c, f, ts);
	c->batch_len = 0;
	if (rtp_packetize(&c->pk, f->data, f->len, ts, emit_rtp, c) != 0) {
		client_close(c, "cannot packetize a frame");
		return;
	}
	c->have_frame = true;
	c->last_ts = ts;
	if (!c->udp && client_write(c, c->batch, c->batch_len) < 0)
		return;
	if (c->audio_setup && !c->asub) {
		c->v0_us = f->pts_us;
		if (cam_audio_subscribe(c->srv->cfg->audio, f->pts_us, on_audio, c, &c->asub) < 0) {
			client_close(c, "too many audio subscribers");
			return;
		}
	}
	struct cam_stream_stats *st = &cam_stats.rtsp[c->stream];
	st->frames_sent++;
	st->bytes_sent += c->udp ? f->len : c->batch_len;
}

static void on_tick(uv_timer_t *t)
{
	struct rtsp_client *c = t->data;
	if (c->closing)
		return;
	if (fault_due(c, c->srv->cfg->faults.drop_after_s)) {
		client_close(c, "fault: drop after N seconds");
		return;
	}
	uint64_t now = uv_now(t->loop);
	if (c->playing && c->have_frame && !c->stalled && now - c->last_sr_ms >= RTSP_SR_INTERVAL_MS) {
		c->last_sr_ms = now;
		send_sender_report(c, c->pk.ssrc, c->ts_base, c->clock0_ms, 90000, c->packets, c->octets, c->ch_rtcp);
		if (c->audio_setup)
			send_sender_report(c, c->a_ssrc, c->a_ts_base, c->clock0_ms, cam_audio_rate(c->srv->cfg->audio),
					   c->a_packets, c->a_octets, c->ch_artcp);
	}
}

/* ---- requests ---- */

struct response {
	char buf[RTSP_RESPONSE_MAX];
	size_t len;
};

__attribute__((format(printf, 2, 3))) static void resp_add(struct response *r, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(r->buf + r->len, sizeof r->buf - r->len, fmt, ap);
	va_end(ap);
	if (n > 0)
		r->len += (size_t)n < sizeof r->buf - r->len ? (size_t)n : sizeof r->buf - r->len - 1;
}

static void resp_start(struct response *r, int code, const char *text, uint32_t cseq)
{
	r->len = 0;
	resp_add(r, "RTSP/1.0 %d %s\r\nCSeq: %u\r\nServer: KeepPeek test camera\r\n", code, text, cseq);
}

static void send_response(struct rtsp_client *c, struct response *r, const char *body, size_t body_len)
{
	if (body)
		resp_add(r, "Content-Length: %zu\r\n", body_len);
	resp_add(r, "\r\n");
	client_write(c, r->buf, r->len);
	if (body)
		client_write(c, body, body_len);
}

static void send_simple(struct rtsp_client *c, int code, const char *text, uint32_t cseq)
{
	struct response r;
	resp_start(&r, code, text, cseq);
	send_response(c, &r, NULL, 0);
}

/* The stream a request URI names: 0 main, 1 sub, or -1. Accepts absolute rtsp:// and
 * rtsps:// URIs and paths, with an optional /trackID=0 (video) or /trackID=1 (audio,
 * *ret_track 1) and trailing slash. */
static int uri_stream(struct rtsp_str uri, int *ret_track)
{
	static const struct {
		const char *path;
		int stream;
	} paths[] = {
	    {"/main", 0},
	    {"/sub", 1},
	    {"/h264Preview_01_main", 0},
	    {"/h264Preview_01_sub", 1},
	    {"/h265Preview_01_main", 0},
	    {"/h265Preview_01_sub", 1},
	};
	const char *p = uri.p, *end = uri.p + uri.n;
	size_t scheme = uri.n > 7 && strncmp(p, "rtsp://", 7) == 0    ? 7
			: uri.n > 8 && strncmp(p, "rtsps://", 8) == 0 ? 8
								      : 0;
	if (scheme) {
		p = memchr(p + scheme, '/', (size_t)(end - p) - scheme);
		if (!p)
			return -1;
	}
	const char *q = memchr(p, '?', (size_t)(end - p));
	if (q)
		end = q;
	struct rtsp_str path = {p, (size_t)(end - p)};
	if (path.n && path.p[path.n - 1] == '/')
		path.n--;
	static const char track[] = "/trackID=0";
	*ret_track = 0;
	if (path.n >= sizeof track - 1 && memcmp(path.p + path.n - (sizeof track - 1), track, sizeof track - 2) == 0 &&
	    (path.p[path.n - 1] == '0' || path.p[path.n - 1] == '1')) {
		*ret_track = path.p[path.n - 1] - '0';
		path.n -= sizeof track - 1;
	}
	for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++)
		if (path.n == strlen(paths[i].path) && memcmp(path.p, paths[i].path, path.n) == 0)
			return paths[i].stream;
	return -1;
}

/* True when the request may proceed; otherwise a 401 has been sent. */
static bool check_auth(struct rtsp_client *c, const struct rtsp_request *req)
{
	const struct cam_config *cfg = c->srv->cfg;
	if (!cfg->user || !cfg->user[0])
		return true;
	const struct rtsp_str *h = rtsp_request_header(req, "Authorization");
	struct rtsp_digest d;
	const char *why;
	bool ok =
	    h && rtsp_digest_parse(*h, &d, &why) == 0 && !cfg->faults.wrong_password &&
	    cam_digest_check(&d, req->method, cfg->user, cfg->password ? cfg->password : "", RTSP_REALM, c->nonce);
	if (ok) {
		if (!c->authed)
			cam_stats.logins_ok++;
		c->authed = true;
		return true;
	}
	if (h)
		cam_stats.logins_refused++;
	struct response r;
	resp_start(&r, 401, "Unauthorized", req->cseq);
	resp_add(&r, "WWW-Authenticate: Digest realm=\"%s\", nonce=\"%s\"\r\n", RTSP_REALM, c->nonce);
	send_response(c, &r, NULL, 0);
	return false;
}

static void handle_describe(struct rtsp_client *c, const struct rtsp_request *req, int stream)
{
	struct cam_source *src = client_source(c, stream);
	struct cam_sdp_track t = {.codec = cam_source_codec(src),
				  .payload_type = RTSP_PAYLOAD_TYPE,
				  .fps = cam_source_fps(src),
				  .control = "trackID=0"};
	struct cam_audio *audio = stream == 0 ? rtsp_audio(c) : NULL;
	struct cam_sdp_audio a = {.payload_type = RTSP_AUDIO_PT, .control = "trackID=1"};
	if (audio) {
		a.pcmu = cam_audio_kind(audio) == CAM_AUDIO_PCMU;
		a.opus = cam_audio_kind(audio) == CAM_AUDIO_OPUS;
		a.rate = cam_audio_rate(audio);
		a.channels = cam_audio_channels(audio);
		cam_audio_config(audio, &a.config, &a.config_len);
		t.audio = &a;
	}
	cam_source_size(src, &t.width, &t.height);
	for (int i = 0; i < 3; i++)
		cam_source_param_set(src, i, &t.param[i], &t.param_len[i]);
	char sdp[CAM_SDP_MAX];
	size_t n;
	if (cam_sdp_write(&t, random_u32(), "127.0.0.1", sdp, sizeof sdp, &n) < 0) {
		send_simple(c, 500, "Internal Server Error", req->cseq);
		return;
	}
	const struct cam_faults *f = &c->srv->cfg->faults;
	char *sprop = f->bad_sprop ? strstr(sdp, "sprop-parameter-sets=") : NULL;
	if (sprop) /* '*' is no base64 */
		sprop[strlen("sprop-parameter-sets=")] = '*';
	struct response r;
	resp_start(&r, 200, "OK", req->cseq);
	size_t base = req->uri.n, skip = 0;
	while (base && req->uri.p[base - 1] == '/')
		base--;
	if (f->base_no_scheme && base > 7 && !strncmp(req->uri.p, "rtsp://", 7))
		skip = 7;
	resp_add(&r, "Content-Base: %.*s/\r\nContent-Type: application/sdp\r\n", (int)(base - skip), req->uri.p + skip);
	send_response(c, &r, sdp, n);
}

/* RTP over UDP for this session (RFC 2326 12.39): to the SETUP's sender at its
 * client_port pair, from two ports of ours. Returns 0 or a negative errno. */
static int setup_udp(struct rtsp_client *c, const struct rtsp_transport *t, uint16_t server_port[2])
{
	struct sockaddr_storage local, peer;
	int llen = sizeof local, plen = sizeof peer;
	int r = uv_tcp_getsockname(&c->tcp, (struct sockaddr *)&local, &llen);
	if (r == 0)
		r = uv_tcp_getpeername(&c->tcp, (struct sockaddr *)&peer, &plen);
	if (r == 0)
		r = rtsp_udp_open(c->tcp.loop, (struct sockaddr *)&local, (struct sockaddr *)&peer, t->client_port,
				  &c->srv->cfg->faults, &c->udp, server_port);
	return r;
}

/* Whether the request names this client's session. */
static bool session_matches(const struct rtsp_client *c, const struct rtsp_request *req)
{
	const struct rtsp_str *h = rtsp_request_header(req, "Session");
	if (!h || c->stream < 0)
		return false;
	size_t n = 0;
	while (n < h->n && h->p[n] != ';')
		n++;
	return n == strlen(c->session) && memcmp(h->p, c->session, n) == 0;
}

/* SETUP of the main stream's audio track, in the session its video's SETUP made. */
static void setup_audio(struct rtsp_client *c, const struct rtsp_request *req, const struct rtsp_transport *t)
{
	if (c->audio_setup || c->playing) {
		send_simple(c, 459, "Aggregate Operation Not Allowed", req->cseq);
		return;
	}
	if (c->stream != 0 || !session_matches(c, req)) {
		send_simple(c, 454, "Session Not Found", req->cseq);
		return;
	}
	if (!t->tcp || c->udp) { /* this camera sends audio interleaved only */
		send_simple(c, 461, "Unsupported Transport", req->cseq);
		return;
	}
	c->audio_setup = true;
	c->ch_artp = t->interleaved[0];
	c->ch_artcp = t->interleaved[1];
	c->a_ssrc = random_u32();
	c->a_seq = (uint16_t)random_u32();
	c->a_ts_base = random_u32();
	struct response r;
	resp_start(&r, 200, "OK", req->cseq);
	resp_add(&r, "Transport: RTP/AVP/TCP;unicast;interleaved=%u-%u;ssrc=%08X;mode=\"PLAY\"\r\n", c->ch_artp,
		 c->ch_artcp, c->a_ssrc);
	if (c->srv->cfg->faults.session_change) { /* XMeye: 231970 for video, 231980 for audio */
		char other[sizeof c->session];
		random_hex(other, 8);
		resp_add(&r, "Session: %s;timeout=60\r\n", other);
	} else
		resp_add(&r, "Session: %s;timeout=60\r\n", c->session);
	send_response(c, &r, NULL, 0);
}

/* SETUP (RFC 2326 10.4): the client's preferred transport of those offered (12.39),
 * or 461 Unsupported Transport (11.3.11) when we serve none of them; the udp-461
 * fault serves TCP only, like cameras that have no RTP over UDP. track 1 is the main
 * stream's audio. */
static void handle_setup(struct rtsp_client *c, const struct rtsp_request *req, int stream, int track)
{
	const struct rtsp_str *h = rtsp_request_header(req, "Transport");
	struct rtsp_transport t;
	const char *why;
	if (!h || rtsp_transport_parse(*h, &t, &why) < 0) {
		send_simple(c, 400, "Bad Request", req->cseq);
		return;
	}
	bool udp = t.udp && !c->srv->cfg->faults.udp_461 && (t.udp_first || !t.tcp);
	if (!udp && !t.tcp) {
		send_simple(c, 461, "Unsupported Transport", req->cseq);
		return;
	}
	if (track == 1) {
		setup_audio(c, req, &t);
		return;
	}
	if (c->stream >= 0) {
		send_simple(c, 459, "Aggregate Operation Not Allowed", req->cseq);
		return;
	}
	struct cam_source *src = client_source(c, stream);
	enum kp_codec codec = cam_source_codec(src) == KP_CODEC_H264 ? KP_CODEC_H264 : KP_CODEC_H265;
	if (rtp_packetizer_init(&c->pk, codec, RTSP_PAYLOAD_TYPE, random_u32(), (uint16_t)random_u32(), RTSP_MTU) < 0) {
		send_simple(c, 500, "Internal Server Error", req->cseq);
		return;
	}
	uint16_t server_port[2] = {0, 0};
	if (udp && setup_udp(c, &t, server_port) < 0) {
		send_simple(c, 500, "Internal Server Error", req->cseq);
		return;
	}
	if (udp)
		fprintf(stderr, "keeppeek-test-camera: rtsp: RTP over UDP to client ports %u-%u from %u-%u\n",
			t.client_port[0], t.client_port[1], server_port[0], server_port[1]);
	c->stream = stream;
	c->ch_rtp = t.interleaved[0];
	c->ch_rtcp = t.interleaved[1];
	c->ts_base = random_u32();
	random_hex(c->session, 8);
	struct response r;
	resp_start(&r, 200, "OK", req->cseq);
	if (udp)
		resp_add(&r,
			 "Transport: RTP/AVP;unicast;client_port=%u-%u;server_port=%u-%u;ssrc=%08X;mode=\"PLAY\"\r\n",
			 t.client_port[0], t.client_port[1], server_port[0], server_port[1], c->pk.ssrc);
	else
		resp_add(&r, "Transport: RTP/AVP/TCP;unicast;interleaved=%u-%u;ssrc=%s%08X;mode=\"PLAY\"\r\n",
			 c->ch_rtp, c->ch_rtcp, c->srv->cfg->faults.ssrc_space ? " " : "", c->pk.ssrc);
	resp_add(&r, "Session: %s;timeout=60\r\n", c->session);
	send_response(c, &r, NULL, 0);
}

static void handle_play(struct rtsp_client *c, const struct rtsp_request *req)
{
	if (c->stream < 0) {
		send_simple(c, 455, "Method Not Valid in This State", req->cseq);
		return;
	}
	if (!session_matches(c, req)) {
		send_simple(c, 454, "Session Not Found", req->cseq);
		return;
	}
	struct response r;
	resp_start(&r, 200, "OK", req->cseq);
	resp_add(&r, "Session: %s;timeout=60\r\nRange: npt=0.000-\r\n", c->session);
	send_response(c, &r, NULL, 0);
	if (c->playing)
		return;
	if (cam_source_subscribe(client_source(c, c->stream), on_frame, c, &c->sub) < 0) {
		client_close(c, "too many subscribers");
		return;
	}
	c->playing = true;
	c->last_sr_ms = uv_now(c->tcp.loop);
	cam_stats.rtsp[c->stream].sessions++;
}

/* The redirect fault: /moved/PATH is answered 302 to /PATH. True when answered. */
static bool moved(struct rtsp_client *c, const struct rtsp_request *req)
{
	static const char mark[] = "/moved/";
	if (!c->srv->cfg->faults.redirect || (strcmp(req->method, "OPTIONS") && strcmp(req->method, "DESCRIBE")))
		return false;
	const char *at = NULL;
	for (size_t i = 0; i + sizeof mark - 1 <= req->uri.n && !at; i++)
		if (!memcmp(req->uri.p + i, mark, sizeof mark - 1))
			at = req->uri.p + i;
	if (!at)
		return false;
	struct response r;
	resp_start(&r, 302, "Moved Temporarily", req->cseq);
	resp_add(&r, "Location: %.*s%.*s\r\n", (int)(at - req->uri.p), req->uri.p,
		 (int)(req->uri.n - (size_t)(at - req->uri.p) - (sizeof mark - 2)), at + sizeof mark - 2);
	send_response(c, &r, NULL, 0);
	return true;
}

static void handle_request(struct rtsp_client *c, const struct rtsp_request *req)
{
	const char *m = req->method;
	if (moved(c, req))
		return;
	if (strcmp(m, "OPTIONS") == 0) {
		struct response r;
		resp_start(&r, 200, "OK", req->cseq);
		resp_add(&r, "Public: OPTIONS, DESCRIBE, SETUP, PLAY, TEARDOWN, GET_PARAMETER\r\n");
		send_response(c, &r, NULL, 0);
		return;
	}
	bool known = !strcmp(m, "DESCRIBE") || !strcmp(m, "SETUP") || !strcmp(m, "PLAY") || !strcmp(m, "TEARDOWN") ||
		     !strcmp(m, "GET_PARAMETER");
	if (!known) {
		send_simple(c, 501, "Not Implemented", req->cseq);
		return;
	}
	if (!check_auth(c, req))
		return;
	if (!strcmp(m, "GET_PARAMETER")) {
		struct response r;
		resp_start(&r, 200, "OK", req->cseq);
		if (c->stream >= 0)
			resp_add(&r, "Session: %s;timeout=60\r\n", c->session);
		send_response(c, &r, NULL, 0);
		return;
	}
	if (!strcmp(m, "TEARDOWN")) {
		send_simple(c, 200, "OK", req->cseq);
		client_close(c, NULL);
		return;
	}
	if (!strcmp(m, "PLAY")) {
		handle_play(c, req);
		return;
	}
	int track;
	int stream = uri_stream(req->uri, &track);
	if (stream < 0 || !client_source(c, stream) || (track == 1 && (stream != 0 || !rtsp_audio(c)))) {
		send_simple(c, 404, "Not Found", req->cseq);
		return;
	}
	if (!strcmp(m, "DESCRIBE"))
		handle_describe(c, req, stream);
	else
		handle_setup(c, req, stream, track);
}

/* Consumes complete requests and interleaved frames (client RTCP) from the input. */
static void process_input(struct rtsp_client *c)
{
	size_t off = 0;
	while (off < c->in_len && !c->closing && !c->stalled) {
		const uint8_t *p = c->in + off;
		size_t avail = c->in_len - off;
		if (p[0] == '$') {
			if (avail < 4 || avail < 4 + (size_t)(p[2] << 8 | p[3]))
				break;
			off += 4 + (size_t)(p[2] << 8 | p[3]);
			continue;
		}
		struct rtsp_request req;
		size_t used;
		const char *why;
		int r = rtsp_request_parse(p, avail, &req, &used, &why);
		if (r == -EAGAIN)
			break;
		if (r < 0) {
			send_simple(c, r == -EPROTONOSUPPORT ? 505 : 400,
				    r == -EPROTONOSUPPORT ? "RTSP Version Not Supported" : "Bad Request", 0);
			client_close(c, why);
			return;
		}
		handle_request(c, &req);
		off += used;
	}
	if (c->closing)
		return;
	memmove(c->in, c->in + off, c->in_len - off);
	c->in_len -= off;
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	struct rtsp_client *c = h->data;
	(void)suggested;
	*buf = uv_buf_init((char *)c->in + c->in_len, (unsigned)(sizeof c->in - c->in_len));
}

static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
	struct rtsp_client *c = s->data;
	(void)buf;
	if (n < 0) {
		client_close(c, n == UV_EOF ? NULL : uv_strerror((int)n));
		return;
	}
	c->in_len += (size_t)n;
	process_input(c);
	if (!c->closing && c->in_len == sizeof c->in)
		client_close(c, "input buffer full");
}

static void on_connection(uv_stream_t *server, int status)
{
	struct rtsp_server *srv = server->data;
	if (status < 0)
		return;
	struct rtsp_client *c = calloc(1, sizeof *c);
	if (!c)
		return;
	c->srv = srv;
	c->stream = -1;
	random_hex(c->nonce, 16);
	uv_tcp_init(server->loop, &c->tcp);
	c->tcp.data = c;
	c->open_handles = 1;
	if (uv_accept(server, (uv_stream_t *)&c->tcp) < 0) {
		uv_close((uv_handle_t *)&c->tcp, on_handle_closed);
		return;
	}
	uv_tcp_nodelay(&c->tcp, 1);
	uv_timer_init(server->loop, &c->tick);
	c->tick.data = c;
	c->open_handles = 2;
	c->accepted_ms = uv_now(server->loop);
	uv_timer_start(&c->tick, on_tick, 1000, 1000);
	uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read);
}

static void on_server_closed(uv_handle_t *h)
{
	free(h->data);
}

int cam_rtsp_listen(uv_loop_t *loop, const struct cam_config *cfg, const char *host, uint16_t port)
{
	struct sockaddr_storage addr;
	if (uv_ip4_addr(host, port, (struct sockaddr_in *)&addr) < 0 &&
	    uv_ip6_addr(host, port, (struct sockaddr_in6 *)&addr) < 0)
		return -EINVAL;
	struct rtsp_server *srv = calloc(1, sizeof *srv);
	if (!srv)
		return -ENOMEM;
	srv->cfg = cfg;
	uv_tcp_init(loop, &srv->tcp);
	srv->tcp.data = srv;
	int r = uv_tcp_bind(&srv->tcp, (const struct sockaddr *)&addr, 0);
	if (r == 0)
		r = uv_listen((uv_stream_t *)&srv->tcp, 16, on_connection);
	if (r < 0) {
		uv_close((uv_handle_t *)&srv->tcp, on_server_closed);
		return r;
	}
	return 0;
}
