/* The configuration routes (keeppeek-api(7)): the key table and the running
 * configuration for every signed-in user (secrets redacted by the supervisor), plans and
 * their apply, a search for cameras on the local segments and a try of a camera URL,
 * for admins. webd only checks the request and asks the
 * supervisor (ConfigAsk), which makes and applies plans exactly as for keeppeekctl. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "kp_limits.h"
#include "params.h"
#include "webd.h"

/* A plan request: a few keys, up to KP_PLAN_MAX_FIELDS fields. */
#define PLAN_TOKS 64
/* An apply: {"plan": TEXT}, the text escaped in JSON. */
#define APPLY_BODY_MAX (2 * KP_PLAN_MAX_BYTES + 64)
#define PLAN_BODY_MAX  (16 * 1024)

static void ask(struct web_req *r, kp_Envelope *env, const void *tail, size_t len)
{
	env->which_msg = kp_Envelope_config_ask_tag;
	snprintf(env->msg.config_ask.principal, sizeof env->msg.config_ask.principal, "%s", web_req_principal(r)->name);
	webd_ask_supervisor(r, env, &env->msg.config_ask.id, tail, len, true);
}

static void route_keys(struct web_req *r)
{
	kp_Envelope env = kp_Envelope_init_zero;
	env.msg.config_ask.kind = kp_ConfigAskKind_CONFIG_ASK_KEYS;
	ask(r, &env, NULL, 0);
}

static void route_snapshot(struct web_req *r)
{
	kp_Envelope env = kp_Envelope_init_zero;
	env.msg.config_ask.kind = kp_ConfigAskKind_CONFIG_ASK_SNAPSHOT;
	if (webd_param_uint(r, "offset", KP_MAX_CAMERAS, &env.msg.config_ask.offset) < 0)
		return;
	ask(r, &env, NULL, 0);
}

/* Cameras on the local segments (ingestd's search, about 3 s). */
static void route_discover(struct web_req *r)
{
	kp_Envelope env = kp_Envelope_init_zero;
	env.msg.config_ask.kind = kp_ConfigAskKind_CONFIG_ASK_DISCOVER;
	ask(r, &env, NULL, 0);
}

static int parse_body(struct web_req *r, struct json_doc *d, struct json_tok *toks, unsigned ntoks)
{
	size_t len;
	const uint8_t *body = web_req_body(r, &len);
	if (json_parse(d, (const char *)body, len, toks, ntoks) < 0) {
		web_reply_error(r, 400, "bad_json", "the body is not JSON: %s at byte %zu", d->err_why, d->err_at);
		return -1;
	}
	if (d->toks[0].type != JSON_OBJECT) {
		web_reply_error(r, 400, "bad_json", "the body must be a JSON object");
		return -1;
	}
	return 0;
}

/* args[i] = "KEY=VALUE" for each member of the object at t: strings as they are,
 * integers in decimal, true/false as yes/no. */
static int add_fields(struct web_req *r, const struct json_doc *d, int t, kp_ConfigAsk *q)
{
	if (t < 0)
		return 0;
	if (d->toks[t].type != JSON_OBJECT) {
		web_reply_error(r, 400, "bad_json", "set must be an object of KEY: VALUE");
		return -1;
	}
	int k = t + 1;
	for (uint32_t i = 0; i < d->toks[t].size; i++, k = (int)d->toks[k + 1].next) {
		int v = k + 1;
		if (q->args_count == sizeof q->args / sizeof q->args[0]) {
			web_reply_error(r, 400, "too_many_fields", "a plan sets at most %d fields", KP_PLAN_MAX_FIELDS);
			return -1;
		}
		char key[40], value[sizeof q->args[0]];
		int64_t n;
		int kl = json_get_str(d, k, key, sizeof key);
		int ok = kl > 0;
		if (ok && d->toks[v].type == JSON_STRING)
			ok = json_get_str(d, v, value, sizeof value) >= 0;
		else if (ok && d->toks[v].type == JSON_NUMBER)
			ok = json_get_int(d, v, &n) == 0 && snprintf(value, sizeof value, "%lld", (long long)n) > 0;
		else if (ok && (d->toks[v].type == JSON_TRUE || d->toks[v].type == JSON_FALSE))
			snprintf(value, sizeof value, "%s", d->toks[v].type == JSON_TRUE ? "yes" : "no");
		else
			ok = 0;
		char *arg = q->args[q->args_count];
		if (!ok || (size_t)snprintf(arg, sizeof q->args[0], "%s=%s", key, value) >= sizeof q->args[0]) {
			web_reply_error(
			    r, 400, "bad_field",
			    "set wants KEY: VALUE with a string, an integer or true/false of at most %zu bytes",
			    sizeof q->args[0] - 2);
			return -1;
		}
		q->args_count++;
	}
	return 0;
}

static int copy_str(struct web_req *r, const struct json_doc *d, int t, char *out, size_t cap, const char *what)
{
	if (t < 0 || d->toks[t].type != JSON_STRING || json_get_str(d, t, out, cap) < 1) {
		web_reply_error(r, 400, "bad_json", "%s must be a non-empty string of at most %zu bytes", what,
				cap - 1);
		return -1;
	}
	return 0;
}

/* {"url": URL}: ingestd tries it (at most 10 s) and nothing is saved. */
static void route_test(struct web_req *r)
{
	static struct json_tok toks[8];
	static kp_Envelope env;
	memset(&env, 0, sizeof env);
	kp_ConfigAsk *q = &env.msg.config_ask;
	q->kind = kp_ConfigAskKind_CONFIG_ASK_TEST;
	struct json_doc d;
	if (parse_body(r, &d, toks, 8) < 0 ||
	    copy_str(r, &d, json_obj_get(&d, 0, "url"), q->args[0], sizeof q->args[0], "url") < 0)
		return;
	q->args_count = 1;
	ask(r, &env, NULL, 0);
}

/* {"cameras": TARGETS, "set": {...}} | {"add": NAME, "url": URL, "set": {...}} | {"remove": NAME} */
static void route_plan(struct web_req *r)
{
	static struct json_tok toks[PLAN_TOKS];
	static kp_Envelope env;
	memset(&env, 0, sizeof env);
	kp_ConfigAsk *q = &env.msg.config_ask;
	q->kind = kp_ConfigAskKind_CONFIG_ASK_PLAN;
	struct json_doc d;
	if (parse_body(r, &d, toks, PLAN_TOKS) < 0)
		return;
	int cams = json_obj_get(&d, 0, "cameras"), add = json_obj_get(&d, 0, "add"), rm = json_obj_get(&d, 0, "remove");
	if ((cams >= 0) + (add >= 0) + (rm >= 0) != 1) {
		web_reply_error(r, 400, "bad_json", "give one of cameras (with set), add (with url) or remove");
		return;
	}
	int set = json_obj_get(&d, 0, "set");
	if (cams >= 0) {
		snprintf(q->args[0], sizeof q->args[0], "edit");
		if (copy_str(r, &d, cams, q->args[1], sizeof q->args[1], "cameras") < 0)
			return;
		q->args_count = 2;
	} else if (add >= 0) {
		snprintf(q->args[0], sizeof q->args[0], "add");
		char url[sizeof q->args[0] - 4];
		if (copy_str(r, &d, add, q->args[1], KP_CAMERA_NAME_MAX + 1, "add") < 0 ||
		    copy_str(r, &d, json_obj_get(&d, 0, "url"), url, sizeof url, "url") < 0)
			return;
		snprintf(q->args[2], sizeof q->args[2], "url=%s", url);
		q->args_count = 3;
	} else {
		snprintf(q->args[0], sizeof q->args[0], "remove");
		if (copy_str(r, &d, rm, q->args[1], KP_CAMERA_NAME_MAX + 1, "remove") < 0)
			return;
		q->args_count = 2;
	}
	if (add_fields(r, &d, set, q) < 0)
		return;
	ask(r, &env, NULL, 0);
}

/* {"plan": TEXT}: the text goes to the supervisor as the tail. */
static void route_apply(struct web_req *r)
{
	static struct json_tok toks[8];
	static char plan[KP_PLAN_MAX_BYTES + 1];
	struct json_doc d;
	if (parse_body(r, &d, toks, 8) < 0)
		return;
	int t = json_obj_get(&d, 0, "plan");
	int n = t >= 0 && d.toks[t].type == JSON_STRING ? json_get_str(&d, t, plan, sizeof plan) : -1;
	if (n < 1) {
		web_reply_error(r, 400, "bad_json", "plan must be the text of a plan, at most %d bytes",
				KP_PLAN_MAX_BYTES);
		return;
	}
	kp_Envelope env = kp_Envelope_init_zero;
	env.msg.config_ask.kind = kp_ConfigAskKind_CONFIG_ASK_APPLY;
	ask(r, &env, plan, (size_t)n);
}

const struct web_route webd_config_routes[] = {
    {WEB_GET | WEB_HEAD, "/api/v1/config/keys", 0, 0, route_keys},
    {WEB_GET | WEB_HEAD, "/api/v1/config", 0, 0, route_snapshot},
    {WEB_GET, "/api/v1/config/discover", WEB_ADMIN, 0, route_discover},
    {WEB_POST, "/api/v1/config/plan", WEB_ADMIN | WEB_CHANGES, PLAN_BODY_MAX, route_plan},
    {WEB_POST, "/api/v1/config/apply", WEB_ADMIN | WEB_CHANGES, APPLY_BODY_MAX, route_apply},
    {WEB_POST, "/api/v1/config/test", WEB_ADMIN | WEB_CHANGES, PLAN_BODY_MAX, route_test},
    {0, NULL, 0, 0, NULL},
};
