/* One RTSP session (see rtsp_session.h). */
#include "rtsp_session.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>

#include "kp_time.h"
#include "log.h"
#include "rtsp_auth.h"
#include "rtsp_msg.h"
#include "rtsp_sdp_read.h"

#define SLICE_MS 100 /* the longest a wait goes without looking at the stop flag */

struct reorder_slot {
	uint8_t *pkt;
	size_t len;
	uint16_t seq;
	int64_t at_us;
};

struct reorder {
	bool have;
	uint16_t expected;
	unsigned count;
	struct reorder_slot slot[RTSP_REORDER_SLOTS];
};

struct sess_track {
	bool used;
	struct rtsp_track t;
	char url[RTSP_MAX_URL];
	unsigned ch[2];   /* interleaved channels */
	int fd[2];        /* UDP: RTP, RTCP */
	unsigned port[2]; /* our UDP ports */
	struct sockaddr_storage rtcp_peer, rtp_peer;
	bool have_rtcp_peer;
	struct reorder ro;
	uint64_t logged_resyncs, logged_foreign, logged_pt, logged_malformed; /* counts already in the log */
	bool logged_end_on_ts;
};

struct sess {
	const struct rtsp_session_ctx *c;
	struct rtsp_url url;
	int fd;
	SSL_CTX *ssl_ctx;
	SSL *ssl;
	struct sockaddr_storage peer;
	socklen_t peer_len;
	uint8_t *buf; /* the connection's bytes */
	size_t len, consumed;
	uint8_t dgram[65536]; /* one UDP datagram */
	unsigned cseq;
	struct rtsp_auth auth;
	bool auth_tried;
	unsigned redirects;
	char session[RTSP_MAX_SESSION];
	unsigned timeout_s;
	bool get_parameter;
	char base[RTSP_MAX_URL];
	struct sess_track v, a;
	uint32_t our_ssrc;
	bool bye;
	uint64_t bytes;
	struct ing_transport_report rep; /* the totals last reported */
	char *reason;
	size_t cap;
	bool *auth_failed;
	uint64_t repaired_logged;
	unsigned alive_status_logged; /* the last keep-alive failure status logged */
	bool alive_resent;            /* the keep-alive was sent again after a stale nonce */
};

static bool stopped(const struct sess *s)
{
	return atomic_load(s->c->stop);
}

__attribute__((format(printf, 2, 3))) static int fail(struct sess *s, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(s->reason, s->cap, fmt, ap);
	va_end(ap);
	return -1;
}

/* ---- the connection ---- */

static int wait_fd(struct sess *s, int fd, short events, int64_t deadline_us, const char *what)
{
	for (;;) {
		if (stopped(s))
			return fail(s, "%s: stopped", what);
		int64_t left = deadline_us - kp_mono_us();
		if (left <= 0)
			return fail(s, "%s: timed out", what);
		struct pollfd p = {.fd = fd, .events = events};
		int n = poll(&p, 1, left / 1000 < SLICE_MS ? (int)(left / 1000) + 1 : SLICE_MS);
		if (n > 0)
			return 0;
		if (n < 0 && errno != EINTR)
			return fail(s, "%s: poll: %s", what, strerror(errno));
	}
}

static int tcp_connect(struct sess *s, int64_t deadline_us)
{
	char port[8];
	snprintf(port, sizeof port, "%u", s->url.port);
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_ADDRCONFIG}, *res = NULL;
	int e = getaddrinfo(s->url.host, port, &hints, &res);
	if (e)
		return fail(s, "connect: %s: %s", s->url.host, gai_strerror(e));
	int err = ECONNREFUSED;
	for (struct addrinfo *ai = res; ai && s->fd < 0; ai = ai->ai_next) {
		int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		if (fd < 0) {
			err = errno;
			continue;
		}
		if (connect(fd, ai->ai_addr, ai->ai_addrlen) < 0 && errno != EINPROGRESS) {
			err = errno;
			close(fd);
			continue;
		}
		if (wait_fd(s, fd, POLLOUT, deadline_us, "connect") < 0) {
			close(fd);
			freeaddrinfo(res);
			return -1;
		}
		socklen_t l = sizeof err;
		if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &l) < 0 || err) {
			close(fd);
			continue;
		}
		s->fd = fd;
		memcpy(&s->peer, ai->ai_addr, ai->ai_addrlen);
		s->peer_len = ai->ai_addrlen;
	}
	freeaddrinfo(res);
	if (s->fd < 0)
		return fail(s, "connect: %s", strerror(err));
	int one = 1;
	setsockopt(s->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	return 0;
}

static int tls_wait(struct sess *s, int r, int64_t deadline_us, const char *what)
{
	int e = SSL_get_error(s->ssl, r);
	if (e == SSL_ERROR_WANT_READ)
		return wait_fd(s, s->fd, POLLIN, deadline_us, what);
	if (e == SSL_ERROR_WANT_WRITE)
		return wait_fd(s, s->fd, POLLOUT, deadline_us, what);
	char msg[160] = "";
	unsigned long code = ERR_get_error();
	if (code)
		ERR_error_string_n(code, msg, sizeof msg);
	return fail(s, "%s: TLS: %s", what, code ? msg : e == SSL_ERROR_ZERO_RETURN ? "closed" : "failed");
}

static int tls_start(struct sess *s, int64_t deadline_us)
{
	s->ssl_ctx = SSL_CTX_new(TLS_client_method());
	if (!s->ssl_ctx || !(s->ssl = SSL_new(s->ssl_ctx)) || !SSL_set_fd(s->ssl, s->fd))
		return fail(s, "connect: TLS: out of memory");
	SSL_set_verify(s->ssl, SSL_VERIFY_NONE, NULL);
	SSL_set_tlsext_host_name(s->ssl, s->url.host);
	int r;
	while ((r = SSL_connect(s->ssl)) != 1)
		if (tls_wait(s, r, deadline_us, "connect") < 0)
			return -1;
	return 0;
}

static int send_all(struct sess *s, const void *p, size_t n, int64_t deadline_us)
{
	const uint8_t *b = p;
	while (n) {
		ssize_t w;
		if (s->ssl) {
			int r = SSL_write(s->ssl, b, n > 65536 ? 65536 : (int)n);
			if (r <= 0) {
				if (tls_wait(s, r, deadline_us, "send") < 0)
					return -1;
				continue;
			}
			w = r;
		} else {
			w = send(s->fd, b, n, MSG_NOSIGNAL);
			if (w < 0 && (errno == EAGAIN || errno == EINTR)) {
				if (wait_fd(s, s->fd, POLLOUT, deadline_us, "send") < 0)
					return -1;
				continue;
			}
			if (w < 0)
				return fail(s, "send: %s", strerror(errno));
		}
		b += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Reads what is there into the buffer (after dropping what was consumed). 1 with bytes,
 * 0 when none came within the slice, -1 with the reason set. */
static int pump(struct sess *s, int timeout_ms)
{
	if (s->consumed) {
		memmove(s->buf, s->buf + s->consumed, s->len - s->consumed);
		s->len -= s->consumed;
		s->consumed = 0;
	}
	if (s->len == RTSP_BUF_SIZE)
		return fail(s, "read: a message longer than the buffer (%d bytes)", RTSP_BUF_SIZE);
	if (!s->ssl || !SSL_pending(s->ssl)) {
		struct pollfd p = {.fd = s->fd, .events = POLLIN};
		int n = poll(&p, 1, timeout_ms);
		if (n < 0 && errno != EINTR)
			return fail(s, "read: poll: %s", strerror(errno));
		if (n <= 0)
			return 0;
	}
	ssize_t r;
	if (s->ssl) {
		int k = SSL_read(s->ssl, s->buf + s->len, (int)(RTSP_BUF_SIZE - s->len));
		if (k <= 0) {
			int e = SSL_get_error(s->ssl, k);
			if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE)
				return 0;
			return e == SSL_ERROR_ZERO_RETURN ? fail(s, "read: the camera closed the connection")
							  : tls_wait(s, k, 0, "read");
		}
		r = k;
	} else {
		r = recv(s->fd, s->buf + s->len, RTSP_BUF_SIZE - s->len, 0);
		if (r < 0 && (errno == EAGAIN || errno == EINTR))
			return 0;
		if (r < 0)
			return fail(s, "read: %s", strerror(errno));
		if (r == 0)
			return fail(s, "read: the camera closed the connection");
	}
	s->len += (size_t)r;
	s->bytes += (uint64_t)r;
	return 1;
}

/* ---- RTCP ---- */

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static void put32(uint8_t *p, uint32_t v)
{
	put16(p, (uint16_t)(v >> 16));
	put16(p + 2, (uint16_t)v);
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* A receiver report with its block and an SDES CNAME (RFC 3550 6.1: every compound
 * packet has an SDES CNAME). Returns its length (at most 64 bytes) or 0. */
static size_t build_rr(struct sess *s, struct sess_track *t, int64_t now_us, uint8_t out[64])
{
	uint8_t block[24];
	bool have = rtsp_track_report_block(&t->t, now_us, block);
	out[0] = have ? 0x81 : 0x80;
	out[1] = 201;
	put16(out + 2, have ? 7 : 1);
	put32(out + 4, s->our_ssrc);
	size_t n = 8;
	if (have) {
		memcpy(out + 8, block, 24);
		n = 32;
	}
	static const char cname[] = "keeppeek";
	size_t sdes = 4 + 4 + 2 + sizeof cname - 1 + 1;
	size_t padded = (sdes + 3) & ~(size_t)3;
	memset(out + n, 0, padded);
	out[n] = 0x81;
	out[n + 1] = 202;
	put16(out + n + 2, (uint16_t)(padded / 4 - 1));
	put32(out + n + 4, s->our_ssrc);
	out[n + 8] = 1;
	out[n + 9] = sizeof cname - 1;
	memcpy(out + n + 10, cname, sizeof cname - 1);
	return n + padded;
}

static void send_rr(struct sess *s, struct sess_track *t, int64_t now_us)
{
	uint8_t pkt[4 + 64];
	size_t n = build_rr(s, t, now_us, pkt + 4);
	if (s->c->udp) {
		if (t->have_rtcp_peer)
			sendto(t->fd[1], pkt + 4, n, MSG_NOSIGNAL | MSG_DONTWAIT, (struct sockaddr *)&t->rtcp_peer,
			       t->rtcp_peer.ss_family == AF_INET6 ? sizeof(struct sockaddr_in6)
								  : sizeof(struct sockaddr_in));
		return;
	}
	pkt[0] = '$';
	pkt[1] = (uint8_t)t->ch[1];
	put16(pkt + 2, (uint16_t)n);
	send_all(s, pkt, n + 4, kp_mono_us() + RTSP_OPEN_TIMEOUT_US);
}

/* An RTCP compound packet from the camera: sender reports time the track; a BYE ends
 * the session. */
static void rtcp_in(struct sess *s, struct sess_track *t, const uint8_t *p, size_t n, int64_t now_us)
{
	while (n >= 4) {
		size_t len = ((size_t)p[2] << 8 | p[3]) * 4 + 4;
		if ((p[0] >> 6) != 2 || len > n)
			return;
		/* a report of another source than the one locked is not this track's clock */
		if (p[1] == 200 && len >= 28 && (!t->t.have_seq || get32(p + 4) == t->t.ssrc)) {
			uint64_t ntp = (uint64_t)get32(p + 8) << 32 | get32(p + 12);
			rtsp_track_sr(&t->t, ntp, get32(p + 16), now_us);
		} else if (p[1] == 203 && t == &s->v)
			s->bye = true;
		p += len;
		n -= len;
	}
}

/* ---- media ---- */

static void media_log(struct sess *s, struct sess_track *t)
{
	uint64_t repaired = t->t.ts.repaired;
	if (repaired != s->repaired_logged && (!s->repaired_logged || repaired - s->repaired_logged >= 1000)) {
		kp_warn("camera %s: %s stream: %llu timestamps repaired (DTS not increasing or PTS before DTS)",
			s->c->name, s->c->stream, (unsigned long long)(repaired - s->repaired_logged));
		s->repaired_logged = repaired;
	}
	if (t->t.video && t->t.depack.end_on_ts && !t->logged_end_on_ts) {
		kp_notice("camera %s: %s stream: the camera's RTP marker bits do not end its pictures (set on every "
			  "slice or never); pictures now end at a timestamp change",
			  s->c->name, s->c->stream);
		t->logged_end_on_ts = true;
	}
}

/* Source restarts and foreign packets, for either track (see rtsp_track.h). */
static void source_log(struct sess *s, struct sess_track *t)
{
	const char *what = t == &s->v ? "video" : "audio";
	if (t->t.malformed != t->logged_malformed && t->t.last_error) {
		kp_warn("camera %s: %s stream: malformed %s RTP payload (%llu so far): %s", s->c->name, s->c->stream,
			what, (unsigned long long)t->t.malformed, t->t.last_error);
		t->logged_malformed = t->t.malformed;
	}
	if (t->t.resyncs != t->logged_resyncs) {
		kp_warn("camera %s: %s stream: %s RTP source restarted (SSRC %08x, sequence %u; %llu restarts so "
			"far); waiting for a keyframe",
			s->c->name, s->c->stream, what, t->t.ssrc, t->t.first_seq, (unsigned long long)t->t.resyncs);
		t->logged_resyncs = t->t.resyncs;
	}
	if (t->t.foreign_ssrc && !t->logged_foreign) {
		kp_warn("camera %s: %s stream: %s RTP packets of an SSRC other than %08x dropped", s->c->name,
			s->c->stream, what, t->t.ssrc);
		t->logged_foreign = t->t.foreign_ssrc;
	}
	if (t->t.other_pt && !t->logged_pt) {
		kp_notice("camera %s: %s stream: %s RTP packets of a payload type other than the SDP's %d dropped",
			  s->c->name, s->c->stream, what, t->t.payload_type);
		t->logged_pt = t->t.other_pt;
	}
}

static void rtp_in(struct sess *s, struct sess_track *t, const uint8_t *p, size_t n, int64_t now_us)
{
	const char *why;
	rtsp_track_rtp(&t->t, p, n, now_us, &why);
	if (t == &s->v && s->a.used)
		rtsp_track_audio_ready(&s->a.t);
}

/* Counts to the driver when they changed. */
static void report(struct sess *s, const char *transport, uint64_t truncated)
{
	const struct rtsp_track *v = &s->v.t, *a = &s->a.t;
	struct ing_transport_report now = {.rtp_lost_packets = v->lost_packets + a->lost_packets,
					   .loss_dropped = v->loss_dropped,
					   .foreign_dropped =
					       v->foreign_ssrc + v->other_pt + a->foreign_ssrc + a->other_pt,
					   .resyncs = v->resyncs + a->resyncs,
					   .malformed = v->malformed + a->malformed};
	struct ing_transport_report d = {.transport = transport,
					 .rtp_lost_packets = now.rtp_lost_packets - s->rep.rtp_lost_packets,
					 .loss_dropped = now.loss_dropped - s->rep.loss_dropped,
					 .truncated_dropped = truncated,
					 .foreign_dropped = now.foreign_dropped - s->rep.foreign_dropped,
					 .resyncs = now.resyncs - s->rep.resyncs,
					 .malformed = now.malformed - s->rep.malformed};
	if (transport || truncated || d.rtp_lost_packets || d.loss_dropped || d.foreign_dropped || d.resyncs ||
	    d.malformed)
		s->c->report(s->c->arg, &d);
	s->rep = now;
	if (s->bytes) {
		s->c->bytes(s->c->arg, s->bytes);
		s->bytes = 0;
	}
}

/* ---- UDP ---- */

static void reorder_deliver(struct sess *s, struct sess_track *t, int64_t now_us)
{
	struct reorder *r = &t->ro;
	for (;;) {
		struct reorder_slot *sl = &r->slot[r->expected % RTSP_REORDER_SLOTS];
		if (!sl->pkt || sl->seq != r->expected)
			return;
		rtp_in(s, t, sl->pkt, sl->len, now_us);
		free(sl->pkt);
		sl->pkt = NULL;
		r->count--;
		r->expected++;
	}
}

/* Gives up on missing packets waited for longer than RTSP_REORDER_WAIT_US (or all, when
 * force): the next held one goes on, and the track counts the gap. */
static void reorder_tick(struct sess *s, struct sess_track *t, int64_t now_us, bool force)
{
	struct reorder *r = &t->ro;
	while (r->count) {
		int best = -1, best_d = RTSP_REORDER_SLOTS;
		int64_t oldest = INT64_MAX;
		for (int i = 0; i < RTSP_REORDER_SLOTS; i++) {
			const struct reorder_slot *sl = &r->slot[i];
			if (!sl->pkt)
				continue;
			int d = (uint16_t)(sl->seq - r->expected);
			if (d < best_d) {
				best_d = d;
				best = i;
			}
			if (sl->at_us < oldest)
				oldest = sl->at_us;
		}
		if (best < 0 || (!force && now_us - oldest < RTSP_REORDER_WAIT_US))
			return;
		r->expected = r->slot[best].seq;
		reorder_deliver(s, t, now_us);
	}
}

static void reorder_free(struct reorder *r)
{
	for (int i = 0; i < RTSP_REORDER_SLOTS; i++)
		free(r->slot[i].pkt);
	memset(r, 0, sizeof *r);
}

static void reorder_push(struct sess *s, struct sess_track *t, const uint8_t *p, size_t n, int64_t now_us)
{
	struct reorder *r = &t->ro;
	if (n < RTP_HEADER_SIZE || (p[0] >> 6) != 2) {
		rtp_in(s, t, p, n, now_us); /* counted as malformed there */
		return;
	}
	uint16_t seq = (uint16_t)(p[2] << 8 | p[3]);
	if (t->t.have_seq && get32(p + 8) != t->t.ssrc) {
		/* another source's: the track drops it, or restarts with it (rtsp_track.h) */
		rtp_in(s, t, p, n, now_us);
		if (get32(p + 8) == t->t.ssrc) { /* restarted: what the old source left is dropped */
			reorder_free(r);
			r->have = true;
			r->expected = (uint16_t)(seq + 1);
		}
		return;
	}
	if (!r->have) {
		r->have = true;
		r->expected = seq;
	}
	int d = (int16_t)(seq - r->expected);
	if (d < 0) {
		uint64_t resyncs = t->t.resyncs;
		rtp_in(s, t, p, n, now_us);    /* too late: the track counts it */
		if (t->t.resyncs != resyncs) { /* or a source that jumped back restarted there */
			reorder_free(r);
			r->have = true;
			r->expected = (uint16_t)(seq + 1);
		}
		return;
	}
	if (d >= RTSP_REORDER_SLOTS) {
		reorder_tick(s, t, now_us, true);
		r->expected = seq;
	}
	if (seq == r->expected) {
		rtp_in(s, t, p, n, now_us);
		r->expected++;
		reorder_deliver(s, t, now_us);
		return;
	}
	struct reorder_slot *sl = &r->slot[seq % RTSP_REORDER_SLOTS];
	if (sl->pkt)
		return; /* a duplicate */
	if (!(sl->pkt = malloc(n)))
		return;
	memcpy(sl->pkt, p, n);
	sl->len = n;
	sl->seq = seq;
	sl->at_us = now_us;
	r->count++;
}

/* Binds an even/odd pair within [port_min, port_max], from a random even start. */
static int udp_open(struct sess *s, struct sess_track *t)
{
	unsigned lo = (s->c->port_min + 1) & ~1u, hi = s->c->port_max;
	if (lo + 1 > hi)
		return fail(s, "SETUP: rtp_ports %u-%u has no even/odd pair", s->c->port_min, s->c->port_max);
	unsigned pairs = (hi - lo + 1) / 2, start = 0;
	RAND_bytes((unsigned char *)&start, sizeof start);
	for (unsigned k = 0; k < pairs; k++) {
		unsigned port = lo + 2 * ((start + k) % pairs);
		int fd[2] = {-1, -1};
		bool ok = true;
		for (int i = 0; i < 2 && ok; i++) {
			fd[i] = socket(s->peer.ss_family, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
			if (fd[i] < 0)
				return fail(s, "SETUP: UDP socket: %s", strerror(errno));
			struct sockaddr_storage a = {.ss_family = s->peer.ss_family};
			socklen_t al;
			if (s->peer.ss_family == AF_INET6) {
				((struct sockaddr_in6 *)&a)->sin6_port = htons((uint16_t)(port + (unsigned)i));
				al = sizeof(struct sockaddr_in6);
			} else {
				((struct sockaddr_in *)&a)->sin_port = htons((uint16_t)(port + (unsigned)i));
				al = sizeof(struct sockaddr_in);
			}
			ok = bind(fd[i], (struct sockaddr *)&a, al) == 0;
		}
		if (!ok) {
			for (int i = 0; i < 2; i++)
				if (fd[i] >= 0)
					close(fd[i]);
			continue;
		}
		int rcv = RTSP_UDP_RCVBUF;
		setsockopt(fd[0], SOL_SOCKET, SO_RCVBUF, &rcv, sizeof rcv);
		t->fd[0] = fd[0];
		t->fd[1] = fd[1];
		t->port[0] = port;
		t->port[1] = port + 1;
		return 0;
	}
	return fail(s, "SETUP: no free UDP port pair in rtp_ports %u-%u", s->c->port_min, s->c->port_max);
}

/* Whether a datagram comes from the camera's address. */
static bool from_camera(const struct sess *s, const struct sockaddr_storage *from)
{
	if (from->ss_family != s->peer.ss_family)
		return false;
	if (from->ss_family == AF_INET6)
		return !memcmp(&((const struct sockaddr_in6 *)from)->sin6_addr,
			       &((const struct sockaddr_in6 *)&s->peer)->sin6_addr, sizeof(struct in6_addr));
	return ((const struct sockaddr_in *)from)->sin_addr.s_addr ==
	       ((const struct sockaddr_in *)&s->peer)->sin_addr.s_addr;
}

/* ---- requests ---- */

/* Handles what is at the start of the buffer that is not a reply: interleaved frames
 * and requests from the camera. Returns 1 when a reply is next, 0 when more bytes are
 * needed, -1 on a malformed stream. */
static int demux(struct sess *s, int64_t now_us)
{
	for (;;) {
		const uint8_t *p = s->buf + s->consumed;
		size_t n = s->len - s->consumed;
		while (n && (*p == '\r' || *p == '\n'))
			p++, n--, s->consumed++;
		if (!n)
			return 0;
		if (*p == '$') {
			if (n < 4)
				return 0;
			size_t len = (size_t)p[2] << 8 | p[3];
			if (n < 4 + len)
				return 0;
			unsigned ch = p[1];
			struct sess_track *tracks[2] = {&s->v, &s->a};
			for (int i = 0; i < 2; i++) {
				struct sess_track *t = tracks[i];
				if (!t->used)
					continue;
				if (ch == t->ch[0])
					rtp_in(s, t, p + 4, len, now_us);
				else if (ch == t->ch[1])
					rtcp_in(s, t, p + 4, len, now_us);
			}
			s->consumed += 4 + len;
			continue;
		}
		if (n < 5)
			return 0;
		if (!memcmp(p, "RTSP/", 5))
			return 1;
		size_t used;
		const char *why;
		char answer[128];
		int r = rtsp_request_answer(p, n, &used, answer, sizeof answer, &why);
		if (r == -EAGAIN)
			return 0;
		if (r < 0)
			return fail(s, "malformed data on the RTSP connection: %s", why);
		s->consumed += used;
		if (answer[0] && send_all(s, answer, strlen(answer), kp_mono_us() + RTSP_OPEN_TIMEOUT_US) < 0)
			return -1;
	}
}

/* Sends a request and reads its reply (interleaved media meanwhile goes to the
 * tracks). The reply stays in the buffer until the next pump. */
static int request(struct sess *s, const char *method, const char *uri, const char *extra, struct rtsp_reply *r)
{
	for (int attempt = 0;; attempt++) {
		char head[RTSP_MAX_URL + RTSP_AUTH_MAX_HEADER + 1024], auth[RTSP_AUTH_MAX_HEADER + RTSP_MAX_URL] = "";
		if (s->auth.kind != RTSP_AUTH_NONE &&
		    rtsp_auth_header(&s->auth, s->url.user, s->url.pass, method, uri, auth, sizeof auth) < 0)
			return fail(s, "%s: credentials too long to send", method);
		unsigned cseq = ++s->cseq;
		int n = snprintf(
		    head, sizeof head, "%s %s RTSP/1.0\r\nCSeq: %u\r\nUser-Agent: KeepPeek\r\n%s%s%s%s%s\r\n", method,
		    uri, cseq, auth, s->session[0] ? "Session: " : "", s->session, s->session[0] ? "\r\n" : "", extra);
		if (n < 0 || (size_t)n >= sizeof head)
			return fail(s, "%s: request too long", method);
		int64_t deadline = kp_mono_us() + RTSP_OPEN_TIMEOUT_US;
		if (send_all(s, head, (size_t)n, deadline) < 0)
			return -1;
		for (;;) {
			int64_t now = kp_mono_us();
			int d = demux(s, now);
			if (d < 0)
				return -1;
			if (d == 1) {
				size_t used;
				const char *why;
				int e = rtsp_reply_parse(s->buf + s->consumed, s->len - s->consumed, r, &used, &why);
				if (e == 0 && r->cseq >= 0 && (unsigned long)r->cseq != cseq) {
					s->consumed += used; /* a late reply to a keep-alive */
					continue;
				}
				if (e == 0) {
					s->consumed += used;
					break;
				}
				if (e != -EAGAIN)
					return fail(s, "%s: malformed reply: %s", method, why);
			}
			if (stopped(s))
				return fail(s, "%s: stopped", method);
			if (now > deadline)
				return fail(s, "%s: timed out", method);
			if (pump(s, SLICE_MS) < 0) {
				char why[160];
				snprintf(why, sizeof why, "%s", s->reason);
				return fail(s, "%s: %s", method, why);
			}
		}
		if (r->status != 401)
			return 0;
		if (attempt > 0 || !s->url.have_user) {
			*s->auth_failed = true;
			return fail(s, "%s: login refused: 401%s", method,
				    s->url.have_user ? "" : " (no credentials in the URL)");
		}
		const struct rtsp_span *h;
		const char *why = NULL;
		bool any = false;
		for (unsigned k = 0; (h = rtsp_reply_header(r, "WWW-Authenticate", k)); k++) {
			int e = rtsp_auth_challenge(&s->auth, *h, &why);
			if (e == 0)
				any = true;
			else if (e != -ENOTSUP)
				return fail(s, "%s: malformed WWW-Authenticate: %s", method, why);
		}
		if (!any) {
			*s->auth_failed = true;
			return fail(s, "%s: login refused: 401 without a Basic or MD5 Digest challenge%s%s", method,
				    why ? ": " : "", why ? why : "");
		}
	}
}

static bool ok(const struct rtsp_reply *r)
{
	return r->status >= 200 && r->status < 300;
}

static int status_fail(struct sess *s, const char *method, const struct rtsp_reply *r)
{
	return fail(s, "%s: %u %.*s", method, r->status, (int)(r->reason.n > 80 ? 80 : r->reason.n), r->reason.p);
}

/* ---- the session's description ---- */

static long params_from(const char *b64list, uint8_t *out, size_t cap, size_t *w)
{
	const char *p = b64list;
	while (*p) {
		size_t n = strcspn(p, ",");
		if (n) {
			if (cap - *w < 4)
				return -ENOBUFS;
			long k = sdp_base64_decode(p, n, out + *w + 4, cap - *w - 4);
			if (k < 0)
				return k;
			if (k > 0) {
				memcpy(out + *w, "\0\0\0\1", 4);
				*w += 4 + (size_t)k;
			}
		}
		p += n + (p[n] == ',');
	}
	return 0;
}

static int video_params(const struct sdp_media *m, enum kp_codec codec, uint8_t *out, size_t cap, size_t *ret)
{
	char v[SDP_MAX_FMTP];
	size_t w = 0;
	if (codec == KP_CODEC_H264) {
		if (sdp_fmtp_get(m->fmtp, "sprop-parameter-sets", v, sizeof v) == 0 && params_from(v, out, cap, &w) < 0)
			return -EBADMSG;
	} else {
		static const char *const keys[] = {"sprop-vps", "sprop-sps", "sprop-pps"};
		for (int i = 0; i < 3; i++)
			if (sdp_fmtp_get(m->fmtp, keys[i], v, sizeof v) == 0 && params_from(v, out, cap, &w) < 0)
				return -EBADMSG;
	}
	*ret = w;
	return 0;
}

static unsigned fmtp_uint(const char *fmtp, const char *key, unsigned def)
{
	char v[16];
	if (sdp_fmtp_get(fmtp, key, v, sizeof v) < 0)
		return def;
	char *e;
	unsigned long x = strtoul(v, &e, 10);
	return *e || e == v || x > 64 ? 65 : (unsigned)x; /* 65: refused by rtp_aac_init */
}

/* The audio track's format, or false (said in the log) when it is not one we record. */
static bool audio_format(struct sess *s, const struct sdp_media *m, struct kp_audio_format *f, unsigned *sl,
			 unsigned *il, unsigned *dl)
{
	memset(f, 0, sizeof *f);
	if (!strcasecmp(m->encoding, "PCMU") || !strcasecmp(m->encoding, "PCMA")) {
		if (m->channels != 1 || !m->clock) {
			kp_notice("camera %s: G.711 audio with %u channels is not recorded (mono is)", s->c->name,
				  m->channels);
			return false;
		}
		*f = (struct kp_audio_format){.codec = !strcasecmp(m->encoding, "PCMU") ? KP_AUDIO_PCMU : KP_AUDIO_PCMA,
					      .rate = m->clock,
					      .channels = 1};
		kp_info("camera %s: recording G.711 audio as Opus, %u Hz", s->c->name, f->rate);
		return true;
	}
	if (!strcasecmp(m->encoding, "opus")) { /* RFC 7587: 48 kHz; the rtpmap says 2 channels */
		*f = (struct kp_audio_format){
		    .codec = KP_AUDIO_OPUS, .rate = 48000, .channels = m->channels == 1 ? 1u : 2u};
		kp_info("camera %s: recording Opus audio, %u channels", s->c->name, f->channels);
		return true;
	}
	if (!strcasecmp(m->encoding, "mpeg4-generic")) {
		char hex[2 * KP_AUDIO_CONFIG_MAX + 1], mode[16] = "";
		uint8_t asc[KP_AUDIO_CONFIG_MAX];
		long n =
		    sdp_fmtp_get(m->fmtp, "config", hex, sizeof hex) == 0 ? sdp_hex_decode(hex, asc, sizeof asc) : -1;
		sdp_fmtp_get(m->fmtp, "mode", mode, sizeof mode);
		if (n <= 0 || kp_aac_config_parse(asc, (size_t)n, f) < 0) {
			kp_warn("camera %s: AAC audio without a usable config in its fmtp: not recorded", s->c->name);
			return false;
		}
		*sl = fmtp_uint(m->fmtp, "sizelength", 0);
		*il = fmtp_uint(m->fmtp, "indexlength", 0);
		*dl = fmtp_uint(m->fmtp, "indexdeltalength", 0);
		if (*sl < 1 || *sl > 16 || *il > 8 || *dl > 8) {
			kp_warn("camera %s: AAC audio (mode %s) with sizeLength %u, indexLength %u: not recorded "
				"(AU headers with sizes are)",
				s->c->name, mode[0] ? mode : "?", *sl, *il);
			return false;
		}
		kp_info("camera %s: recording AAC audio, %u Hz, %u channels", s->c->name, f->rate, f->channels);
		return true;
	}
	kp_notice("camera %s: audio in %s is not recorded (AAC, Opus and mono G.711 are)", s->c->name,
		  m->encoding[0] ? m->encoding : "an unnamed payload");
	return false;
}

/* ---- SETUP, PLAY ---- */

/* Opens a way through a NAT or stateful firewall between us and the camera for its
 * media, as libavformat's ff_rtp_send_punch_packets and retina's punch_firewall_hole do:
 * from each of our UDP ports to the camera's, an empty RTP packet (version 2, PT 0) and
 * an empty receiver report. Best effort: a failed send is not an error. */
static void punch(struct sess *s, struct sess_track *t)
{
	socklen_t al = s->peer.ss_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
	uint8_t rtp[RTP_HEADER_SIZE] = {0x80, 0};
	put32(rtp + 8, s->our_ssrc);
	sendto(t->fd[0], rtp, sizeof rtp, MSG_NOSIGNAL | MSG_DONTWAIT, (struct sockaddr *)&t->rtp_peer, al);
	uint8_t rr[8] = {0x80, 201, 0, 1};
	put32(rr + 4, s->our_ssrc);
	sendto(t->fd[1], rr, sizeof rr, MSG_NOSIGNAL | MSG_DONTWAIT, (struct sockaddr *)&t->rtcp_peer, al);
}

static int setup(struct sess *s, struct sess_track *t, unsigned ch, bool *refused_461)
{
	char extra[128];
	if (s->c->udp) {
		if (udp_open(s, t) < 0)
			return -1;
		snprintf(extra, sizeof extra, "Transport: RTP/AVP;unicast;client_port=%u-%u\r\n", t->port[0],
			 t->port[1]);
	} else
		snprintf(extra, sizeof extra, "Transport: RTP/AVP/TCP;unicast;interleaved=%u-%u\r\n", ch, ch + 1);
	struct rtsp_reply r;
	if (request(s, "SETUP", t->url, extra, &r) < 0)
		return -1;
	if (r.status == 461) {
		*refused_461 = true;
		return fail(s, "SETUP: the camera refused RTP over %s (461 Unsupported Transport)%s",
			    s->c->udp ? "UDP" : "TCP", s->c->udp ? "" : "; transport = udp or auto may work");
	}
	if (!ok(&r)) {
		*refused_461 = s->c->udp; /* under auto, any refusal of UDP tries TCP */
		return status_fail(s, "SETUP", &r);
	}
	const struct rtsp_span *sh = rtsp_reply_header(&r, "Session", 0), *th = rtsp_reply_header(&r, "Transport", 0);
	const char *why;
	if (!sh)
		return fail(s, "SETUP: reply without a Session");
	char id[RTSP_MAX_SESSION];
	unsigned timeout_s;
	if (rtsp_session_parse(*sh, id, sizeof id, &timeout_s, &why) < 0)
		return fail(s, "SETUP: malformed Session: %s", why);
	if (!s->session[0]) {
		memcpy(s->session, id, sizeof id);
		s->timeout_s = timeout_s;
	} else if (strcmp(id, s->session)) {
		/* XMeye H264DVR answers each SETUP with a new id (231970, then 231980) and
		 * plays with the first (retina 7c5a656, its testdata h264dvr_setup_*.txt) */
		kp_warn("camera %s: SETUP answered with session %s after %s; the first is kept", s->c->name, id,
			s->session);
	}
	struct rtsp_transport tr;
	if (!th || rtsp_transport_parse(*th, &tr, &why) < 0)
		return fail(s, "SETUP: malformed or missing Transport: %s", th ? why : "none");
	if (tr.tcp != !s->c->udp) {
		*refused_461 = s->c->udp; /* a UDP request answered with TCP: UDP refused */
		return fail(s, "SETUP: the camera answered RTP over %s to a request for %s", tr.tcp ? "TCP" : "UDP",
			    s->c->udp ? "UDP" : "TCP");
	}
	if (s->c->udp) {
		if (tr.have_server_port) {
			for (int i = 0; i < 2; i++) {
				struct sockaddr_storage *a = i ? &t->rtcp_peer : &t->rtp_peer;
				memcpy(a, &s->peer, sizeof s->peer);
				uint16_t port = htons((uint16_t)tr.server_port[i]);
				if (s->peer.ss_family == AF_INET6)
					((struct sockaddr_in6 *)a)->sin6_port = port;
				else
					((struct sockaddr_in *)a)->sin_port = port;
			}
			t->have_rtcp_peer = true;
			punch(s, t);
		}
	} else {
		t->ch[0] = tr.have_interleaved ? tr.interleaved[0] : ch;
		t->ch[1] = tr.have_interleaved ? tr.interleaved[1] : ch + 1;
		if (t == &s->a && (t->ch[0] == s->v.ch[0] || t->ch[0] == s->v.ch[1] || t->ch[1] == s->v.ch[0] ||
				   t->ch[1] == s->v.ch[1]))
			return fail(s, "SETUP: the camera put audio on the video's interleaved channels %u-%u",
				    t->ch[0], t->ch[1]);
	}
	t->used = true;
	return 0;
}

/* A 3xx to OPTIONS or DESCRIBE (libavformat follows them with their Location): the
 * connection is closed and the session starts again at the new URL, at most
 * RTSP_MAX_REDIRECTS times; the credentials go along to the same host only. 1 to start
 * again, -1 with the reason set. */
static int redirect(struct sess *s, const char *method, const struct rtsp_reply *r)
{
	const struct rtsp_span *loc = rtsp_reply_header(r, "Location", 0);
	char url[RTSP_MAX_URL];
	if (!loc || rtsp_span_copy(*loc, url, sizeof url) < 0)
		return fail(s, "%s: %u without a usable Location", method, r->status);
	if (++s->redirects > RTSP_MAX_REDIRECTS)
		return fail(s, "%s: more than %d redirects (the last to %s)", method, RTSP_MAX_REDIRECTS, url);
	struct rtsp_url u;
	const char *why;
	if (rtsp_url_parse(url, &u, &why) < 0)
		return fail(s, "%s: redirected to %s: %s", method, url, why);
	if (!u.have_user && !strcasecmp(u.host, s->url.host)) {
		memcpy(u.user, s->url.user, sizeof u.user);
		memcpy(u.pass, s->url.pass, sizeof u.pass);
		u.have_user = s->url.have_user;
	}
	kp_notice("camera %s: %s stream: %s redirected (%u) to %s%s", s->c->name, s->c->stream, method, r->status,
		  u.uri, s->url.have_user && !u.have_user ? " (the credentials are not sent to another host)" : "");
	if (s->ssl) {
		SSL_free(s->ssl);
		s->ssl = NULL;
	}
	if (s->ssl_ctx) {
		SSL_CTX_free(s->ssl_ctx);
		s->ssl_ctx = NULL;
	}
	if (s->fd >= 0)
		close(s->fd);
	s->fd = -1;
	s->len = s->consumed = 0;
	s->auth.kind = RTSP_AUTH_NONE; /* the new server challenges anew */
	s->get_parameter = false;
	s->url = u;
	return 1;
}

static bool redirected(const struct rtsp_reply *r)
{
	return r->status >= 300 && r->status < 400;
}

/* 0, 1 when redirected (start again), -1. */
static int describe(struct sess *s, struct sdp_session *sdp)
{
	struct rtsp_reply r;
	if (request(s, "OPTIONS", s->url.uri, "", &r) < 0)
		return -1;
	if (redirected(&r))
		return redirect(s, "OPTIONS", &r);
	if (ok(&r)) {
		const struct rtsp_span *pub = rtsp_reply_header(&r, "Public", 0);
		for (size_t i = 0; pub && i + 13 <= pub->n; i++)
			if (!strncasecmp(pub->p + i, "GET_PARAMETER", 13))
				s->get_parameter = true;
	}
	if (request(s, "DESCRIBE", s->url.uri, "Accept: application/sdp\r\n", &r) < 0)
		return -1;
	if (redirected(&r))
		return redirect(s, "DESCRIBE", &r);
	if (!ok(&r))
		return status_fail(s, "DESCRIBE", &r);
	const char *why;
	if (sdp_read(r.body, r.body_len, sdp, &why) < 0)
		return fail(s, "DESCRIBE: malformed SDP: %s", why);
	const struct rtsp_span *b = rtsp_reply_header(&r, "Content-Base", 0);
	if (!b)
		b = rtsp_reply_header(&r, "Content-Location", 0);
	char hb[RTSP_MAX_URL];
	if (b && rtsp_span_copy(*b, hb, sizeof hb) < 0)
		return fail(s, "DESCRIBE: Content-Base longer than allowed");
	int fix = rtsp_base_fixup(s->url.uri, b ? hb : s->url.uri, s->base, sizeof s->base);
	if (fix == -ENOBUFS)
		return fail(s, "DESCRIBE: Content-Base longer than allowed");
	if (fix == 1)
		kp_notice("camera %s: Content-Base \"%s\" is no rtsp:// URL; taken as %s", s->c->name, hb, s->base);
	else if (fix < 0)
		kp_warn("camera %s: Content-Base \"%s\" is no usable URL; the request's URL is used", s->c->name, hb);
	if (sdp->control[0] && strcmp(sdp->control, "*")) {
		char agg[RTSP_MAX_URL];
		if (rtsp_url_resolve(s->base, sdp->control, agg, sizeof agg) < 0)
			return fail(s, "DESCRIBE: session control URL too long");
		memcpy(s->base, agg, sizeof agg);
	}
	return 0;
}

static const struct sdp_media *find(const struct sdp_session *sdp, const char *type)
{
	for (unsigned i = 0; i < sdp->n_media; i++)
		if (!strcmp(sdp->media[i].type, type))
			return &sdp->media[i];
	return NULL;
}

static int start(struct sess *s, bool *no_udp)
{
	struct sdp_session *sdp = malloc(sizeof *sdp);
	if (!sdp)
		return fail(s, "out of memory");
	int ret = -1, d;
	do {
		int64_t deadline = kp_mono_us() + RTSP_OPEN_TIMEOUT_US;
		if (tcp_connect(s, deadline) < 0 || (s->url.tls && tls_start(s, deadline) < 0))
			goto out;
	} while ((d = describe(s, sdp)) == 1);
	if (d < 0)
		goto out;
	const struct sdp_media *vm = find(sdp, "video");
	if (!vm) {
		fail(s, "no video stream");
		goto out;
	}
	enum kp_codec codec;
	if (!strcasecmp(vm->encoding, "H264"))
		codec = KP_CODEC_H264;
	else if (!strcasecmp(vm->encoding, "H265") || !strcasecmp(vm->encoding, "HEVC"))
		codec = KP_CODEC_H265;
	else {
		fail(s, "unsupported codec %s", vm->encoding[0] ? vm->encoding : "(no rtpmap)");
		goto out;
	}
	uint8_t params[ING_RTSP_MAX_PARAMS];
	size_t plen = 0;
	if (video_params(vm, codec, params, sizeof params, &plen) < 0) {
		/* the stream's own parameter sets come in band before its keyframes */
		kp_warn("camera %s: malformed parameter sets in the SDP's fmtp, ignored; waiting for those in the "
			"stream",
			s->c->name);
		plen = 0;
	}
	if (rtsp_track_video_init(&s->v.t, &s->c->sink, codec, params, plen, vm->fps, vm->clock ? vm->clock : 90000) <
	    0) {
		fail(s, "video clock rate %u (H.264 and H.265 have 90000)", vm->clock);
		goto out;
	}
	s->v.t.payload_type = vm->pt;
	if (rtsp_url_resolve(s->base, vm->control, s->v.url, sizeof s->v.url) < 0) {
		fail(s, "DESCRIBE: video control URL too long");
		goto out;
	}
	bool refused = false;
	if (setup(s, &s->v, 0, &refused) < 0) {
		*no_udp = refused && s->c->udp;
		goto out;
	}
	const struct sdp_media *am = s->c->want_audio ? find(sdp, "audio") : NULL;
	struct kp_audio_format af;
	unsigned sl = 0, il = 0, dl = 0;
	if (am && audio_format(s, am, &af, &sl, &il, &dl) &&
	    rtsp_track_audio_init(&s->a.t, &s->c->sink, &s->v.t, &af, sl, il, dl) == 0 &&
	    rtsp_url_resolve(s->base, am->control, s->a.url, sizeof s->a.url) == 0) {
		char why[sizeof s->a.url + 64];
		s->a.t.payload_type = am->pt;
		if (setup(s, &s->a, 2, &refused) < 0) {
			/* the video goes on without it */
			snprintf(why, sizeof why, "%s", s->reason);
			kp_warn("camera %s: audio: %s; recording video only", s->c->name, why);
			rtsp_track_free(&s->a.t);
			s->a.used = false;
		} else
			s->v.t.has_audio = true;
	}
	struct rtsp_reply r;
	if (request(s, "PLAY", s->base, "Range: npt=0.000-\r\n", &r) < 0)
		goto out;
	if (!ok(&r)) {
		status_fail(s, "PLAY", &r);
		goto out;
	}
	ret = 0;
out:
	free(sdp);
	return ret;
}

/* Half the session's timeout, at most 30 s: some cameras time out sooner than they say. */
static int64_t alive_us(const struct sess *s)
{
	return (int64_t)(s->timeout_s < RTSP_ALIVE_MAX_S ? s->timeout_s : RTSP_ALIVE_MAX_S) * 500000;
}

static void keep_alive(struct sess *s)
{
	char head[RTSP_MAX_URL + RTSP_AUTH_MAX_HEADER + 512], auth[RTSP_AUTH_MAX_HEADER + RTSP_MAX_URL] = "";
	const char *method = s->get_parameter ? "GET_PARAMETER" : "OPTIONS";
	if (s->auth.kind != RTSP_AUTH_NONE)
		rtsp_auth_header(&s->auth, s->url.user, s->url.pass, method, s->base, auth, sizeof auth);
	int n =
	    snprintf(head, sizeof head, "%s %s RTSP/1.0\r\nCSeq: %u\r\nUser-Agent: KeepPeek\r\n%sSession: %s\r\n\r\n",
		     method, s->base, ++s->cseq, auth, s->session);
	if (n > 0 && (size_t)n < sizeof head)
		send_all(s, head, (size_t)n, kp_mono_us() + RTSP_OPEN_TIMEOUT_US);
}

/* Replies on the connection while streaming (keep-alives): consumed; a 401 renews the
 * challenge for the next one. */
static int replies(struct sess *s)
{
	for (;;) {
		int d = demux(s, kp_mono_us());
		if (d <= 0)
			return d;
		struct rtsp_reply r;
		size_t used;
		const char *why;
		int e = rtsp_reply_parse(s->buf + s->consumed, s->len - s->consumed, &r, &used, &why);
		if (e == -EAGAIN)
			return 0;
		if (e < 0)
			return fail(s, "malformed reply on the RTSP connection: %s", why);
		const struct rtsp_span *h;
		bool stale = false;
		for (unsigned k = 0; r.status == 401 && (h = rtsp_reply_header(&r, "WWW-Authenticate", k)); k++) {
			rtsp_auth_challenge(&s->auth, *h, &why);
			for (size_t i = 0; i + 10 <= h->n; i++)
				if (!strncasecmp(h->p + i, "stale=true", 10) ||
				    !strncasecmp(h->p + i, "stale=\"true", 11))
					stale = true;
		}
		if (!ok(&r) && r.status != s->alive_status_logged) {
			kp_warn("camera %s: %s stream: keep-alive answered %u %.*s%s", s->c->name, s->c->stream,
				r.status, (int)(r.reason.n > 80 ? 80 : r.reason.n), r.reason.p,
				stale ? " (stale nonce: sent again with the new one)" : "");
			s->alive_status_logged = r.status;
		}
		s->consumed += used;
		if (r.status == 401 && stale && !s->alive_resent) {
			s->alive_resent = true; /* once per keep-alive: a camera that never takes it is not flooded */
			keep_alive(s);
		}
	}
}

/* Reads media until the end. first_wait_us: how long the first packet may take. */
static int stream(struct sess *s, int64_t first_wait_us, bool *no_media)
{
	int64_t now = kp_mono_us(), last_media = now, started = now;
	int64_t next_rr = now, next_alive = now + alive_us(s);
	bool any = false;
	uint64_t packets = 0;
	for (;;) {
		if (stopped(s))
			return fail(s, "read: stopped");
		if (s->bye)
			return fail(s, "read: the camera ended the stream (RTCP BYE)");
		struct pollfd p[5];
		struct sess_track *owner[5] = {NULL};
		int n = 0;
		p[n++] = (struct pollfd){.fd = s->fd, .events = POLLIN};
		int timeout = SLICE_MS;
		if (s->c->udp) {
			struct sess_track *tr[2] = {&s->v, &s->a};
			for (int i = 0; i < 2; i++) {
				if (!tr[i]->used)
					continue;
				for (int k = 0; k < 2; k++) {
					owner[n] = tr[i];
					p[n++] = (struct pollfd){.fd = tr[i]->fd[k], .events = POLLIN};
				}
				if (tr[i]->ro.count)
					timeout = RTSP_REORDER_WAIT_US / 4000;
			}
		}
		bool tls_pending = s->ssl && SSL_pending(s->ssl);
		int k = poll(p, (nfds_t)n, tls_pending ? 0 : timeout);
		if (k < 0 && errno != EINTR)
			return fail(s, "read: poll: %s", strerror(errno));
		now = kp_mono_us();
		if (tls_pending || (k > 0 && p[0].revents)) {
			if (pump(s, 0) < 0 || replies(s) < 0)
				return -1;
		}
		for (int i = 1; i < n && k > 0; i++) {
			if (!p[i].revents)
				continue;
			struct sess_track *t = owner[i];
			bool rtcp = p[i].fd == t->fd[1];
			for (int burst = 0; burst < 64; burst++) {
				struct sockaddr_storage from;
				socklen_t fl = sizeof from;
				ssize_t r = recvfrom(p[i].fd, s->dgram, sizeof s->dgram, MSG_DONTWAIT,
						     (struct sockaddr *)&from, &fl);
				if (r < 0)
					break;
				if (!from_camera(s, &from))
					continue;
				s->bytes += (uint64_t)r;
				if (rtcp)
					rtcp_in(s, t, s->dgram, (size_t)r, now);
				else
					reorder_push(s, t, s->dgram, (size_t)r, now);
			}
		}
		if (s->c->udp) {
			reorder_tick(s, &s->v, now, false);
			if (s->a.used)
				reorder_tick(s, &s->a, now, false);
		}
		if (s->v.t.packets != packets) {
			packets = s->v.t.packets;
			last_media = now;
			any = true;
		}
		media_log(s, &s->v);
		source_log(s, &s->v);
		if (s->a.used)
			source_log(s, &s->a);
		report(s, NULL, 0);
		if (!any && now - started > first_wait_us) {
			*no_media = true;
			return fail(s, "no media within %lld s of PLAY",
				    (long long)((first_wait_us + 500000) / 1000000));
		}
		if (any && now - last_media > RTSP_READ_TIMEOUT_US)
			return fail(s, "read: no media for %lld s", (long long)(RTSP_READ_TIMEOUT_US / 1000000));
		if (now >= next_rr) {
			send_rr(s, &s->v, now);
			if (s->a.used)
				send_rr(s, &s->a, now);
			next_rr = now + RTSP_RR_INTERVAL_MS * 1000LL;
		}
		if (now >= next_alive) {
			s->alive_resent = false;
			keep_alive(s);
			next_alive = now + alive_us(s);
		}
	}
}

static void close_track(struct sess_track *t)
{
	for (int i = 0; i < 2; i++)
		if (t->fd[i] >= 0)
			close(t->fd[i]);
	reorder_free(&t->ro);
	rtsp_track_free(&t->t);
}

enum rtsp_end rtsp_session_run(const struct rtsp_session_ctx *c, char *reason, size_t cap, bool *auth)
{
	struct sess *s = calloc(1, sizeof *s);
	uint8_t *buf = malloc(RTSP_BUF_SIZE);
	if (!s || !buf) {
		snprintf(reason, cap, "out of memory");
		free(s);
		free(buf);
		return RTSP_END_FAILED;
	}
	*s = (struct sess){.c = c,
			   .fd = -1,
			   .buf = buf,
			   .reason = reason,
			   .cap = cap,
			   .auth_failed = auth,
			   .timeout_s = RTSP_TIMEOUT_DEF_S};
	s->v.fd[0] = s->v.fd[1] = s->a.fd[0] = s->a.fd[1] = -1;
	RAND_bytes((unsigned char *)&s->our_ssrc, sizeof s->our_ssrc);
	uint8_t rnd[8];
	RAND_bytes(rnd, sizeof rnd);
	for (int i = 0; i < 8; i++)
		snprintf(s->auth.cnonce + 2 * i, 3, "%02x", rnd[i]);
	enum rtsp_end end = RTSP_END_FAILED;
	const char *why;
	bool no_udp = false, no_media = false;
	if (rtsp_url_parse(c->url, &s->url, &why) < 0) {
		snprintf(reason, cap, "connect: %s", why);
	} else if (start(s, &no_udp) < 0) {
		if (no_udp)
			end = RTSP_END_NO_UDP;
	} else {
		report(s, c->udp ? "udp" : "tcp", 0);
		stream(s, c->udp ? RTSP_UDP_WAIT_US : RTSP_OPEN_TIMEOUT_US, &no_media);
		if (no_media && c->udp)
			end = RTSP_END_NO_UDP;
	}
	size_t cut = s->v.used ? rtsp_track_end(&s->v.t) : 0;
	if (cut && !stopped(s))
		kp_warn("camera %s: %s stream: the connection ended; its last access unit (%zu bytes so far) may be "
			"cut and is dropped",
			c->name, c->stream, cut);
	report(s, NULL, cut && !stopped(s) ? 1 : 0);
	if (s->fd >= 0 && s->session[0]) {
		char head[RTSP_MAX_URL + RTSP_AUTH_MAX_HEADER + 512], a[RTSP_AUTH_MAX_HEADER + RTSP_MAX_URL] = "";
		if (s->auth.kind != RTSP_AUTH_NONE)
			rtsp_auth_header(&s->auth, s->url.user, s->url.pass, "TEARDOWN", s->base, a, sizeof a);
		int n = snprintf(head, sizeof head,
				 "TEARDOWN %s RTSP/1.0\r\nCSeq: %u\r\nUser-Agent: KeepPeek\r\n%sSession: %s\r\n\r\n",
				 s->base, ++s->cseq, a, s->session);
		if (n > 0 && (size_t)n < sizeof head && !s->ssl)
			send(s->fd, head, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT); /* not waited for */
		else if (n > 0 && (size_t)n < sizeof head)
			SSL_write(s->ssl, head, n);
	}
	if (s->ssl) {
		SSL_free(s->ssl);
		SSL_CTX_free(s->ssl_ctx);
	} else if (s->ssl_ctx)
		SSL_CTX_free(s->ssl_ctx);
	if (s->fd >= 0)
		close(s->fd);
	close_track(&s->v);
	close_track(&s->a);
	free(s->buf);
	free(s);
	return end;
}
