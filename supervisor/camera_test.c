/* A camera URL tried before it is saved, for `keeppeekctl camera test URL` and the
 * Settings page: the URL is checked and its ${NAME} and file: secrets expanded here
 * (the loader's own rules), then ingestd tries it (CameraTest) and its
 * CameraTestResult is answered to the asker, as text or JSON. One test at a time. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "auth.h"
#include "config.h"
#include "log.h"
#include "supervisor.h"

#define TEST_TIMEOUT_MS  10000
#define TEST_DEADLINE_MS 20000 /* the asker hears by then even if ingestd is silent */

static struct {
	bool running, timer_open;
	uint32_t id;
	uint64_t ticket;
	struct proc *webd;
	uint32_t qid;
	bool json;
	char redacted[1100];
	uv_timer_t deadline;
} T;

static const char *const codec_names[] = {"", "h264", "h265"};

static void answer(struct supervisor *s, const kp_CameraTestResult *r)
{
	static char text[2048];
	struct kp_out o = {.buf = text, .len = sizeof text};
	text[0] = '\0';
	const char *codec = r->codec < 3 ? codec_names[r->codec] : "";
	if (T.json) {
		kp_out_put(&o, "{\"url\":");
		kp_out_json_string(&o, T.redacted);
		kp_out_put(&o, ",\"ok\":%s,\"auth_failed\":%s,\"reason\":", r->ok ? "true" : "false",
			   r->auth_failed ? "true" : "false");
		kp_out_json_string(&o, r->reason);
		kp_out_put(&o, ",\"codec\":\"%s\",\"width\":%u,\"height\":%u,\"elapsed_ms\":%u}\n", codec,
			   (unsigned)r->width, (unsigned)r->height, (unsigned)r->elapsed_ms);
	} else if (r->ok) {
		kp_out_put(&o, "%s: ok, %s %ux%u, first keyframe after %u ms\n", T.redacted, codec, (unsigned)r->width,
			   (unsigned)r->height, (unsigned)r->elapsed_ms);
	} else {
		kp_out_put(&o, "%s: %s%s\n", T.redacted, r->auth_failed ? "the camera refused the credentials: " : "",
			   r->reason);
	}
	if (T.webd) {
		auth_web_answer(T.webd, T.qid, 0, text, strlen(text));
	} else {
		int e = control_answer(s, T.ticket, r->ok ? 0 : 1, text, strlen(text));
		if (e < 0 && e != -ENOENT)
			kp_warn("camera test: answer to keeppeekctl not delivered: %s", strerror(-e));
	}
	T.running = false;
	uv_timer_stop(&T.deadline);
}

static void on_deadline(uv_timer_t *t)
{
	kp_CameraTestResult r = kp_CameraTestResult_init_zero;
	snprintf(r.reason, sizeof r.reason, "ingestd did not finish the test in time");
	answer(t->data, &r);
}

void camera_test_on_result(struct supervisor *s, const kp_CameraTestResult *r)
{
	if (T.running && r->id == T.id)
		answer(s, r);
}

int camera_test_start(struct supervisor *s, const char *url, uint64_t ticket, struct proc *webd, uint32_t qid,
		      bool json, char *err, size_t errlen)
{
	static struct kp_config cfg;
	static struct kp_config_errors errs;
	static char text[1200];
	if (T.running) {
		snprintf(err, errlen, "a camera test is running; try again");
		return -EBUSY;
	}
	if (strchr(url, '\n') ||
	    (size_t)snprintf(text, sizeof text, "[camera \"test\"]\nurl = %s\n", url) >= sizeof text ||
	    kp_config_load_string("the URL", text, &cfg, &errs) < 0) {
		snprintf(err, errlen, "%.*s", (int)strcspn(errs.text, "\n"),
			 errs.count ? errs.text : "the URL is too long");
		return -EINVAL;
	}
	struct proc *p = proc_by_peer(s, kp_Peer_PEER_INGESTD);
	if (!p || p->state != PROC_RUNNING || !p->ipc) {
		snprintf(err, errlen, "ingestd is not running: no test now");
		return -ENOTCONN;
	}
	static kp_Envelope env;
	memset(&env, 0, sizeof env);
	env.which_msg = kp_Envelope_camera_test_tag;
	env.msg.camera_test.id = ++T.id;
	env.msg.camera_test.timeout_ms = TEST_TIMEOUT_MS;
	snprintf(env.msg.camera_test.url, sizeof env.msg.camera_test.url, "%s", cfg.cameras[0].url.val);
	int r = kp_ipc_send(p->ipc, &env, NULL, 0, NULL, 0);
	memset(&env, 0, sizeof env);
	memset(&cfg.cameras[0].url, 0, sizeof cfg.cameras[0].url);
	if (r < 0) {
		snprintf(err, errlen, "asking ingestd failed: %s", strerror(-r));
		return r;
	}
	if (!T.timer_open) {
		uv_timer_init(s->loop, &T.deadline);
		T.deadline.data = s;
		T.timer_open = true;
	}
	uv_timer_start(&T.deadline, on_deadline, TEST_DEADLINE_MS, 0);
	kp_redact_url(url, T.redacted, sizeof T.redacted);
	T.running = true;
	T.ticket = ticket;
	T.webd = webd;
	T.qid = qid;
	T.json = json;
	return 0;
}

void camera_test_close(void)
{
	if (T.timer_open)
		uv_close((uv_handle_t *)&T.deadline, NULL);
	T.timer_open = false;
}
