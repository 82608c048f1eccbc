/* A camera URL tried before it is saved (CameraTest): the same driver a configured
 * camera gets, started with the main stream only and a sink of its own that waits for
 * the first keyframe, a refusal or a failure, at most the request's timeout; then the
 * driver is stopped and one CameraTestResult goes back to the supervisor. One test at a
 * time: a second request meanwhile is answered "busy" at once. */
#include "probe.h"

#include <stdio.h>
#include <string.h>

#include "cameras.h"
#include "config.h"
#include "kp_time.h"
#include "log.h"

#define PROBE_DEFAULT_MS 10000
#define PROBE_LIMIT_MS   30000

static struct {
	struct kp_worker *w;
	const struct ing_driver_ops *ops;
	struct ing_driver *drv;
	struct ing_camera_info info;
	struct ing_sink sink;
	char url[1100], redacted[1100];
	uv_timer_t timer, finish;
	bool open, running, answered;
	uint64_t started_ms;
	kp_CameraTestResult res;
} P;

static void send_result(const kp_CameraTestResult *r)
{
	kp_Envelope env = kp_Envelope_init_zero;
	env.which_msg = kp_Envelope_camera_test_result_tag;
	env.msg.camera_test_result = *r;
	int e = kp_worker_send_supervisor(P.w, &env);
	if (e < 0)
		kp_warn("camera test: answering the supervisor failed: %d", e);
}

/* Stops the driver from the loop, never from inside one of its sink calls. */
static void on_finish(uv_timer_t *t)
{
	(void)t;
	uv_timer_stop(&P.timer);
	if (P.drv)
		P.ops->stop(P.drv);
	P.drv = NULL;
	P.res.elapsed_ms = (uint32_t)(kp_mono_ms() - P.started_ms);
	kp_info("camera test of %s: %s%s%s", P.redacted, P.res.ok ? "ok" : "failed", P.res.reason[0] ? ": " : "",
		P.res.reason);
	send_result(&P.res);
	P.running = false;
}

static void conclude(bool ok, bool auth, const char *reason)
{
	if (P.answered)
		return;
	P.answered = true;
	P.res.ok = ok;
	P.res.auth_failed = auth;
	snprintf(P.res.reason, sizeof P.res.reason, "%s", reason ? reason : "");
	uv_timer_start(&P.finish, on_finish, 0, 0);
}

static void on_timeout(uv_timer_t *t)
{
	(void)t;
	conclude(false, false, "no keyframe of the main stream within the time allowed");
}

static void sink_state(void *ctx, enum kp_stream_index s, enum ing_state st, const char *reason)
{
	(void)ctx;
	if (s == KP_STREAM_INDEX_MAIN && st == ING_AUTH_FAILED)
		conclude(false, true, reason);
}

static void sink_au(void *ctx, enum kp_stream_index s, const struct kp_access_unit *au)
{
	(void)ctx;
	if (s != KP_STREAM_INDEX_MAIN || !au->keyframe)
		return;
	P.res.codec = (kp_Codec)au->codec;
	P.res.width = au->width;
	P.res.height = au->height;
	conclude(true, false, "");
}

static void sink_bytes(void *ctx, enum kp_stream_index s, uint64_t n)
{
	(void)ctx;
	(void)s;
	(void)n;
}

static void sink_event(void *ctx, const char *kind, const char *labels, int64_t wall_ms)
{
	(void)ctx;
	(void)kind;
	(void)labels;
	(void)wall_ms;
}

static void sink_failed(void *ctx, bool auth_failed, const char *reason)
{
	(void)ctx;
	conclude(false, auth_failed, reason);
}

static void sink_stream_failed(void *ctx, enum kp_stream_index s, const char *reason)
{
	(void)ctx;
	if (s == KP_STREAM_INDEX_MAIN)
		conclude(false, false, reason);
}

void ing_probe(struct kp_worker *w, const kp_CameraTest *rq)
{
	uv_loop_t *loop = kp_worker_loop(w);
	P.w = w;
	if (!P.open) {
		uv_timer_init(loop, &P.timer);
		uv_timer_init(loop, &P.finish);
		P.open = true;
	}
	kp_CameraTestResult busy = kp_CameraTestResult_init_zero;
	busy.id = rq->id;
	if (P.running) {
		snprintf(busy.reason, sizeof busy.reason, "another camera test is running; try again");
		send_result(&busy);
		return;
	}
	const struct ing_driver_ops *ops = ing_driver_for(rq->url);
	if (!ops) {
		snprintf(busy.reason, sizeof busy.reason, "the URL's scheme is not baichuan, bcudp, rtsp or rtsps");
		send_result(&busy);
		return;
	}
	memset(&P.res, 0, sizeof P.res);
	P.res.id = rq->id;
	P.ops = ops;
	P.answered = false;
	snprintf(P.url, sizeof P.url, "%s", rq->url);
	kp_redact_url(P.url, P.redacted, sizeof P.redacted);
	P.info = (struct ing_camera_info){.name = "camera-test",
					  .url = P.url,
					  .url_redacted = P.redacted,
					  .sub_url = "",
					  .streams = KP_STREAM_MAIN,
					  .rtsp_transport = KP_RTSP_TCP,
					  .rtp_port_min = KP_RTP_PORT_MIN_DEFAULT,
					  .rtp_port_max = KP_RTP_PORT_MAX_DEFAULT};
	P.sink = (struct ing_sink){.stream_state = sink_state,
				   .access_unit = sink_au,
				   .bytes = sink_bytes,
				   .event = sink_event,
				   .failed = sink_failed,
				   .stream_failed = sink_stream_failed};
	P.started_ms = kp_mono_ms();
	P.running = true;
	int r = ops->start(&P.info, &P.sink, loop, &P.drv);
	if (r < 0) {
		P.drv = NULL;
		conclude(false, false, "the camera's driver could not start");
		return;
	}
	uint64_t ms = rq->timeout_ms ? rq->timeout_ms : PROBE_DEFAULT_MS;
	uv_timer_start(&P.timer, on_timeout, ms > PROBE_LIMIT_MS ? PROBE_LIMIT_MS : ms, 0);
	kp_info("camera test of %s: connecting", P.redacted);
}

void ing_probe_stop(void)
{
	if (!P.open)
		return;
	if (P.drv)
		P.ops->stop(P.drv);
	P.drv = NULL;
	uv_close((uv_handle_t *)&P.timer, NULL);
	uv_close((uv_handle_t *)&P.finish, NULL);
	P.open = false;
}
