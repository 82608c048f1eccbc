/* ingestd's core as the protocol drivers see it: a camera with one or two streams,
 * the states a stream reports, the access units and events a driver hands over, and the
 * driver operations. The core (ingestd/cameras.c) owns camera lifetimes, reconnect
 * backoff, counters and the IPC to recorderd, rtcd and the supervisor. */
#ifndef KP_INGEST_CAMERA_H
#define KP_INGEST_CAMERA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "h26x.h"

enum kp_stream_index { KP_STREAM_INDEX_MAIN = 0, KP_STREAM_INDEX_SUB = 1 };

enum ing_state {
	ING_CONNECTING,  /* connecting or logging in */
	ING_STREAMING,   /* media flowing */
	ING_AUTH_FAILED, /* the camera refused our credentials (retried with backoff) */
	ING_UNREACHABLE, /* connect failed, timed out, or the link broke */
	ING_BACKOFF,     /* waiting before the next attempt */
	ING_STOPPED,     /* not configured to run */
};

/* One access unit in Annex-B form (start codes), as received: no transcoding. */
struct kp_access_unit {
	enum kp_codec codec;
	bool keyframe;
	int64_t pts_90k;        /* 90 kHz, continuous and monotonic per stream */
	int64_t wall_us;        /* receive time, CLOCK_REALTIME microseconds */
	uint32_t width, height; /* 0 when unknown */
	const uint8_t *data;
	size_t len;
};

struct ing_camera;

/* What a driver is told about its camera. Strings live as long as the camera. */
struct ing_camera_info {
	const char *name;
	const char *url; /* secrets expanded; never log it, use url_redacted */
	const char *url_redacted;
	const char *sub_url; /* RTSP only: the sub stream's URL, "" when none */
	unsigned streams;    /* KP_STREAM_MAIN | KP_STREAM_SUB bits from config.h */
	bool motion_events;
};

struct ing_driver;

struct ing_driver_ops {
	const char *scheme; /* "baichuan", "bcudp", "rtsp", "rtsps" */
	/* Starts connecting; returns 0 or a negative errno. The driver reports progress
	 * with ing_stream_state, and on a fatal error calls ing_camera_failed once. */
	int (*start)(struct ing_camera *cam, uv_loop_t *loop, struct ing_driver **ret);
	/* Stops and frees the driver; no core calls may follow for this instance. Called from
	 * the loop thread; must not block for long (RTSP threads are interrupted). */
	void (*stop)(struct ing_driver *drv);
};

const struct ing_camera_info *ing_camera_info(const struct ing_camera *cam);

/* Reports a stream's state with a short reason ("login refused: 401"). */
void ing_stream_state(struct ing_camera *cam, enum kp_stream_index s, enum ing_state st, const char *reason);

/* Hands over one access unit (copied by the core; data may be reused after return). */
void ing_stream_access_unit(struct ing_camera *cam, enum kp_stream_index s, const struct kp_access_unit *au);

/* Counts received bytes for a stream (wire bytes, including protocol overhead). */
void ing_stream_bytes(struct ing_camera *cam, enum kp_stream_index s, uint64_t n);

/* A motion alarm or other camera event; kind is "motion", labels comma-separated
 * ("people,vehicle") or "". */
void ing_camera_event(struct ing_camera *cam, const char *kind, const char *labels, int64_t wall_ms);

/* The driver failed for good (auth refused, connection lost, protocol error). The core
 * stops the driver (from the loop, after this returns) and retries with backoff.
 * auth_failed selects the auth-failed state instead of unreachable. */
void ing_camera_failed(struct ing_camera *cam, bool auth_failed, const char *reason);

/* Drivers, one per scheme family. */
extern const struct ing_driver_ops ing_baichuan_driver; /* baichuan:// and bcudp:// */
extern const struct ing_driver_ops ing_rtsp_driver;     /* rtsp:// and rtsps:// */

#endif
