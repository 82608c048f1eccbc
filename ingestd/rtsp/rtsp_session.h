/* One RTSP session of one stream, on the stream's own thread (rtsp_driver.c): connect
 * (TLS for rtsps://, OpenSSL, the certificate not verified, as libavformat's default
 * and as cameras' self-signed certificates need), OPTIONS, DESCRIBE (a 401 answered once
 * with the URL's credentials, rtsp_auth.h), SETUP of the video and, when asked, the audio
 * track, PLAY, then RTP until the end: interleaved on the connection (RFC 2326 10.12) or
 * over UDP from a port pair in rtp_ports (12.39) with a reorder window; RTCP receiver
 * reports every RTSP_RR_INTERVAL_MS (RFC 3550 6.4.2), keep-alive before the session's
 * timeout (GET_PARAMETER when the camera's Public lists it, else OPTIONS), TEARDOWN
 * at a stop. Every blocking wait is cut into slices that check the stop flag. */
#ifndef KP_INGEST_RTSP_SESSION_H
#define KP_INGEST_RTSP_SESSION_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "rtsp_track.h"

#define RTSP_OPEN_TIMEOUT_US (10 * 1000000LL) /* connect, DESCRIBE, SETUP, PLAY: each reply */
#define RTSP_READ_TIMEOUT_US (10 * 1000000LL) /* without a media packet before giving up */
#define RTSP_UDP_WAIT_US     (5 * 1000000LL)  /* from PLAY to the first packet over UDP */
#define RTSP_REORDER_SLOTS   64               /* UDP packets held to put them back in order */
#define RTSP_REORDER_WAIT_US 100000           /* how long a missing one is waited for */
#define RTSP_UDP_RCVBUF      2097152          /* SO_RCVBUF asked for (capped by rmem_max) */
#define RTSP_RR_INTERVAL_MS  5000
#define RTSP_MAX_REDIRECTS   3  /* 3xx to OPTIONS or DESCRIBE followed */
#define RTSP_ALIVE_MAX_S     60 /* keep-alive every half the session timeout, capped at this */
#define RTSP_BUF_SIZE        (RTSP_MAX_HEAD + RTSP_MAX_BODY + 4 + 65535)

struct rtsp_session_ctx {
	const char *name;   /* the camera's, for the log */
	const char *stream; /* "main" or "sub" */
	const char *url;
	bool udp;
	unsigned port_min, port_max;
	bool want_audio;
	atomic_bool *stop;
	struct rtsp_track_sink sink;
	/* counts since the last call (rtp_lost_packets, loss_dropped, truncated_dropped,
	 * foreign_dropped, resyncs, malformed); transport non-NULL once PLAY succeeded */
	void (*report)(void *arg, const struct ing_transport_report *delta);
	void (*bytes)(void *arg, uint64_t n);
	void *arg;
};

enum rtsp_end { RTSP_END_FAILED, RTSP_END_NO_UDP };

/* Runs one session to its end. Returns RTSP_END_NO_UDP when UDP could not carry the
 * media (461 to the SETUP, or nothing within RTSP_UDP_WAIT_US of PLAY), else
 * RTSP_END_FAILED; reason says why either way, *auth is set for a refused login. */
enum rtsp_end rtsp_session_run(const struct rtsp_session_ctx *c, char *reason, size_t cap, bool *auth);

#endif
