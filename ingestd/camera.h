/* ingestd's core as the protocol drivers see it: a camera with one or two streams,
 * the states a stream reports, the access units and events a driver hands over through
 * the sink table the core gives it, and the driver operations. The core
 * (ingestd/cameras.c) owns camera lifetimes, reconnect backoff, counters and the IPC to
 * recorderd, rtcd and the supervisor; drivers are a layer below it and only call through
 * their sink. */
#ifndef KP_INGEST_CAMERA_H
#define KP_INGEST_CAMERA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "audio.h"
#include "config.h"
#include "h26x.h"

enum kp_stream_index { KP_STREAM_INDEX_MAIN = 0, KP_STREAM_INDEX_SUB = 1 };

enum ing_state {
	ING_CONNECTING,  /* connecting or logging in */
	ING_STREAMING,   /* media flowing */
	ING_AUTH_FAILED, /* the camera refused our credentials (retried with backoff) */
	ING_UNREACHABLE, /* connect failed, timed out, or the link broke */
	ING_BACKOFF,     /* waiting before the next attempt */
	ING_STOPPED,     /* not configured to run */
	ING_RETRYING,    /* this stream alone failed (refused); retried on its own backoff */
};

/* One access unit in Annex-B form (start codes), as received, in decode order: no
 * transcoding. With B-frames PTS is not monotonic; DTS always is. */
struct kp_access_unit {
	enum kp_codec codec;
	bool keyframe;
	int64_t pts_90k;        /* presentation time, 90 kHz, >= dts_90k */
	int64_t dts_90k;        /* decode time, 90 kHz, continuous and strictly increasing per stream */
	int64_t wall_us;        /* receive time, CLOCK_REALTIME microseconds */
	uint32_t width, height; /* 0 when unknown */
	const uint8_t *data;
	size_t len;
};

/* One audio frame as recorded: AAC without its ADTS header, or an Opus packet. fmt describes the track
 * (rate, channels, AudioSpecificConfig); pts_90k is on the video's clock. */
struct kp_audio_unit {
	struct kp_audio_format fmt;
	uint32_t samples; /* in this unit (Opus packets vary); 0: fmt.frame_samples */
	int64_t pts_90k;
	int64_t wall_us;
	const uint8_t *data;
	size_t len;
};

/* What a driver is told about its camera. Strings live as long as the camera. */
struct ing_camera_info {
	const char *name;
	const char *url; /* secrets expanded; never log it, use url_redacted */
	const char *url_redacted;
	const char *sub_url; /* RTSP only: the sub stream's URL, "" when none */
	unsigned streams;    /* KP_STREAM_MAIN | KP_STREAM_SUB bits from config.h */
	bool motion_events;
	enum kp_rtsp_transport rtsp_transport; /* RTSP only */
	unsigned rtp_port_min, rtp_port_max;   /* RTSP over UDP: local ports */
	bool audio; /* hand over the main stream's audio (the driver may skip it otherwise) */
};

/* What an RTSP stream's transport did since its last report: the transport in use
 * ("tcp", "udp"; NULL: unchanged) and counts to add. */
struct ing_transport_report {
	const char *transport;
	uint64_t rtp_lost_packets;  /* RTP packets missing from the sequence */
	uint64_t loss_dropped;      /* access units dropped for a missing packet, up to a keyframe */
	uint64_t truncated_dropped; /* access units dropped because the connection ended in them */
	uint64_t overrun_dropped;   /* access units dropped up to a keyframe: the loop fell behind */
	uint64_t foreign_dropped;   /* RTP packets of another SSRC or payload type than the SDP's */
	uint64_t resyncs;           /* RTP source restarts (rtsp_track.h) */
	uint64_t malformed;         /* RTP packets or payloads that did not parse */
	uint64_t audio_dropped;     /* audio units not recorded: the loop fell behind */
};

/* Where a driver reports, set by the core when it starts the driver; ctx goes back on
 * every call. The table and the info outlive the driver. Called from the loop thread. */
struct ing_sink {
	void *ctx;
	/* A stream's state with a short reason ("login refused: 401"). */
	void (*stream_state)(void *ctx, enum kp_stream_index s, enum ing_state st, const char *reason);
	/* One access unit (copied by the core; data may be reused after return). */
	void (*access_unit)(void *ctx, enum kp_stream_index s, const struct kp_access_unit *au);
	/* One audio frame of the main stream (copied by the core); only when info->audio. */
	void (*audio_unit)(void *ctx, const struct kp_audio_unit *au);
	/* Received bytes of a stream (wire bytes, including protocol overhead). */
	void (*bytes)(void *ctx, enum kp_stream_index s, uint64_t n);
	/* RTSP: the transport in use and what it lost (optional for other drivers). */
	void (*transport)(void *ctx, enum kp_stream_index s, const struct ing_transport_report *r);
	/* A motion alarm or other camera event; kind is "motion", labels comma-separated
	 * ("people,vehicle") or "". */
	void (*event)(void *ctx, const char *kind, const char *labels, int64_t wall_ms);
	/* The driver failed for good (auth refused, connection lost, protocol error). The
	 * core stops the driver (from the loop, after this returns) and retries with backoff.
	 * auth_failed selects the auth-failed state instead of unreachable. */
	void (*failed)(void *ctx, bool auth_failed, const char *reason);
	/* One stream failed while the session lives on: the camera refused it (Baichuan
	 * status 400 to msg 3), or its own RTSP connection ended while another stream of the
	 * camera runs. The driver sends nothing more for s until the core asks it to try
	 * again through ops->retry_stream, after the stream's own backoff; the other
	 * streams keep running. */
	void (*stream_failed)(void *ctx, enum kp_stream_index s, const char *reason);
};

struct ing_driver;

struct ing_driver_ops {
	const char *scheme; /* "baichuan", "bcudp", "rtsp", "rtsps" */
	/* Starts connecting; returns 0 or a negative errno. The driver reports progress
	 * through sink->stream_state, and on a fatal error calls sink->failed once. */
	int (*start)(const struct ing_camera_info *info, const struct ing_sink *sink, uv_loop_t *loop,
		     struct ing_driver **ret);
	/* Stops and frees the driver; no sink calls may follow for this instance. Called from
	 * the loop thread; must not block for long (RTSP threads are interrupted). */
	void (*stop)(struct ing_driver *drv);
	/* Requests stream s again on the running session after sink->stream_failed. Returns
	 * 0 (progress and a new failure come through the sink) or a negative errno, which
	 * the core counts as another failure of that stream. */
	int (*retry_stream)(struct ing_driver *drv, enum kp_stream_index s);
};

/* Drivers, one per scheme family. */
extern const struct ing_driver_ops ing_baichuan_driver; /* baichuan:// and bcudp:// */
extern const struct ing_driver_ops ing_rtsp_driver;     /* rtsp:// and rtsps:// */

#endif
