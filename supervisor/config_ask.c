/* webd's ConfigAsk (the browser's Settings page): the key table, a page of the running
 * configuration with secrets redacted, a plan with its difference, and the apply of a
 * plan, each answered as JSON. Plans are made and applied by config_apply.c, exactly as
 * for keeppeekctl. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auth.h"
#include "config_keys.h"
#include "config_snapshot.h"
#include "json.h"
#include "log.h"
#include "supervisor.h"

#define CONFIG_ANSWER_MAX (KP_PLAN_MAX_BYTES * 2 + 4096) /* a plan and its difference, escaped */

static void keys(struct json_w *w)
{
	static const char *const users[] = {"keeppeekd", "ingestd", "recorderd", "webd", "rtcd"};
	static const char *const types[] = {
	    [KP_KEY_STR] = "text",        [KP_KEY_UINT] = "integer",         [KP_KEY_BOOL] = "boolean",
	    [KP_KEY_ENUM] = "choice",     [KP_KEY_GB] = "gigabytes",         [KP_KEY_PORT_RANGE] = "port-range",
	    [KP_KEY_STREAMS] = "streams", [KP_KEY_CAMERA_URL] = "url",       [KP_KEY_RTSP_URL] = "rtsp-url",
	    [KP_KEY_LISTEN] = "listen",   [KP_KEY_HOSTPORT] = "host-port",   [KP_KEY_ADDRESSES] = "addresses",
	    [KP_KEY_LABELS] = "labels",   [KP_KEY_RTP_PORTS] = "port-range", [KP_KEY_DURATION] = "duration",
	};
	jw_obj(w);
	jw_key(w, "keys");
	jw_arr(w);
	for (size_t i = 0; i < kp_config_nkeys; i++) {
		const struct kp_key *k = &kp_config_keys[i];
		jw_obj(w);
		jw_key(w, "section");
		jw_str(w, k->section);
		jw_key(w, "name");
		jw_str(w, k->name);
		jw_key(w, "type");
		jw_str(w, k->type < sizeof types / sizeof types[0] && types[k->type] ? types[k->type] : "text");
		if (k->type == KP_KEY_UINT || k->type == KP_KEY_GB) {
			jw_key(w, "min");
			jw_int(w, k->min);
			jw_key(w, "max");
			jw_int(w, k->max);
		}
		if (k->type == KP_KEY_ENUM) {
			jw_key(w, "values");
			jw_arr(w);
			for (unsigned v = 0; k->values[v]; v++)
				jw_str(w, k->values[v]);
			jw_arr_end(w);
		}
		jw_key(w, "default");
		if (k->def)
			jw_str(w, k->def);
		else
			jw_null(w);
		jw_key(w, "secret");
		jw_bool(w, k->flags & KP_KEY_SECRET);
		jw_key(w, "required");
		jw_bool(w, k->flags & KP_KEY_REQUIRED);
		jw_key(w, "readers");
		jw_arr(w);
		for (unsigned b = 0; b < 5; b++)
			if (k->users & (1u << b))
				jw_str(w, users[b]);
		jw_arr_end(w);
		jw_key(w, "doc");
		jw_str(w, k->doc);
		jw_obj_end(w);
	}
	jw_arr_end(w);
	jw_obj_end(w);
}

/* {"plan": TEXT, "changes": ["CAMERA: KEY: OLD -> NEW", ...]} */
static void plan_json(struct json_w *w, const char *plan, size_t len)
{
	jw_obj(w);
	jw_key(w, "plan");
	jw_strn(w, plan, len);
	jw_key(w, "changes");
	jw_arr(w);
	for (const char *l = plan; l < plan + len;) {
		const char *nl = memchr(l, '\n', (size_t)(plan + len - l));
		size_t n = nl ? (size_t)(nl - l) : (size_t)(plan + len - l);
		if (n > 2 && l[0] == '#' && l[1] == ' ' && strncmp(l, "# KeepPeek", 10) && memchr(l, ':', n))
			jw_strn(w, l + 2, n - 2);
		l += n + 1;
	}
	jw_arr_end(w);
	jw_obj_end(w);
}

/* A user-* or token-* command for an admin in the browser, run as keeppeekctl's. */
static void auth_ask(struct supervisor *s, struct proc *p, const kp_ConfigAsk *q)
{
	static kp_ControlRequest req;
	static char text[64 * 1024];
	memset(&req, 0, sizeof req);
	if (!q->args_count || (strncmp(q->args[0], "user-", 5) && strncmp(q->args[0], "token-", 6))) {
		query_reply(p, q->id, 400, "bad_request", "text/plain", "not a user or token command", 27);
		return;
	}
	snprintf(req.command, sizeof req.command, "%s", q->args[0]);
	for (pb_size_t i = 1; i < q->args_count; i++)
		memcpy(req.args[req.args_count++], q->args[i], sizeof req.args[0]);
	req.json = true;
	struct kp_out o = {.buf = text, .len = sizeof text};
	text[0] = '\0';
	const struct auth_asker asker = {.webd = p, .id = q->id};
	kp_notice("auth: %s asks for %s from the browser", q->principal, req.command);
	int code = auth_control(s, &req, &o, &asker);
	memset(&req, 0, sizeof req); /* a password may be in it */
	if (code != CONTROL_PENDING)
		auth_web_answer(p, q->id, code, text, strlen(text));
}

void config_ask_answer(struct supervisor *s, struct proc *p, const kp_ConfigAsk *q, const uint8_t *tail,
		       size_t tail_len)
{
	static char out[CONFIG_ANSWER_MAX];
	static char why[KP_CONF_MAX_ERRORS * 256 + 512];
	struct json_w w;
	jw_init(&w, out, sizeof out);
	uint32_t status = 200;
	const char *code = "";
	switch (q->kind) {
	case kp_ConfigAskKind_CONFIG_ASK_KEYS:
		keys(&w);
		break;
	case kp_ConfigAskKind_CONFIG_ASK_SNAPSHOT:
		config_snapshot_page(&s->cfg, s->config_path[0] != 0, q->offset, &w);
		break;
	case kp_ConfigAskKind_CONFIG_ASK_PLAN: {
		bool usage = false;
		int len = s->config_path[0] ? config_plan_args(s, q->args_count, q->args, why, sizeof why, &usage) : -1;
		if (!s->config_path[0])
			snprintf(why, sizeof why, "keeppeekd runs without a configuration file (--demo)");
		if (len < 0) {
			status = s->config_path[0] ? 400 : 409;
			code = usage ? "bad_request" : s->config_path[0] ? "plan_refused" : "no_config_file";
		} else {
			kp_notice("config plan for %s (%d bytes)", q->principal, len);
			plan_json(&w, config_plan_buf, (size_t)len);
		}
		break;
	}
	case kp_ConfigAskKind_CONFIG_ASK_APPLY: {
		int r = -EINVAL;
		if (!s->config_path[0])
			snprintf(why, sizeof why, "keeppeekd runs without a configuration file (--demo)");
		else if (tail_len > KP_PLAN_MAX_BYTES)
			snprintf(why, sizeof why, "a plan is at most %d bytes", KP_PLAN_MAX_BYTES);
		else
			r = config_apply_plan(s, (const char *)tail, tail_len, why, sizeof why);
		if (r == 0) {
			kp_notice("config apply for %s", q->principal);
			jw_obj(&w);
			jw_key(&w, "message");
			jw_str(&w, why);
			jw_obj_end(&w);
		} else {
			status = r == -ESTALE || !s->config_path[0] ? 409 : r == -EINVAL ? 400 : 500;
			code = r == -ESTALE ? "stale_plan" : !s->config_path[0] ? "no_config_file" : "apply_failed";
		}
		break;
	}
	case kp_ConfigAskKind_CONFIG_ASK_AUTH:
		auth_ask(s, p, q);
		return;
	case kp_ConfigAskKind_CONFIG_ASK_TEST: {
		int r =
		    q->args_count == 1 ? camera_test_start(s, q->args[0], 0, p, q->id, true, why, sizeof why) : -EINVAL;
		if (r == 0)
			return;
		if (q->args_count != 1)
			snprintf(why, sizeof why, "a camera test takes one URL");
		status = r == -EINVAL ? 400 : 503;
		code = r == -EINVAL ? "bad_request" : "unavailable";
		break;
	}
	case kp_ConfigAskKind_CONFIG_ASK_DISCOVER:
		if (discover_start(s, 0, p, q->id, true, why, sizeof why) == 0)
			return;
		status = 503;
		code = "unavailable";
		break;
	default:
		status = 400;
		code = "bad_request";
		snprintf(why, sizeof why, "unknown configuration question");
	}
	if (status >= 400) {
		/* webd relays an error's tail as its message: the sentence, not JSON. */
		query_reply(p, q->id, status, code, "text/plain", why, strlen(why));
		return;
	}
	size_t len;
	if (jw_finish(&w, &len) < 0) {
		query_reply(p, q->id, 500, "too_large", "text/plain", "answer too large\n", 17);
		return;
	}
	query_reply(p, q->id, status, code, "application/json", out, len);
}
