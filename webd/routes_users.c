/* Users and API tokens for admins in the browser (keeppeek-api(7)): list, add, new
 * password, new role and delete a user; list, create (the token is answered once) and revoke a
 * token. Each is one of keeppeekctl's user-* or token-* commands, run by the supervisor
 * (ConfigAsk AUTH), which holds the credential store; webd holds no credential. */
#include <stdio.h>
#include <string.h>

#include "json.h"
#include "webd.h"

#define USERS_BODY_MAX 2048
#define USERS_TOKS     16

/* Runs command with up to three arguments for the admin of r. */
static void run(struct web_req *r, const char *command, const char *a1, const char *a2, const char *a3)
{
	static kp_Envelope env;
	memset(&env, 0, sizeof env);
	kp_ConfigAsk *q = &env.msg.config_ask;
	env.which_msg = kp_Envelope_config_ask_tag;
	q->kind = kp_ConfigAskKind_CONFIG_ASK_AUTH;
	const char *args[4] = {command, a1, a2, a3};
	for (int i = 0; i < 4 && args[i]; i++)
		snprintf(q->args[q->args_count++], sizeof q->args[0], "%s", args[i]);
	snprintf(q->principal, sizeof q->principal, "%s", web_req_principal(r)->name);
	webd_ask_supervisor(r, &env, &q->id, NULL, 0, true);
	memset(&env, 0, sizeof env); /* a password may be in it */
}

/* The strings of the JSON object body named by keys (NULL-terminated), each at most
 * cap - 1 bytes; 0, or -1 after answering 400. */
static int body_strings(struct web_req *r, const char *const *keys, char (*out)[300])
{
	struct json_tok toks[USERS_TOKS];
	struct json_doc d;
	size_t len;
	const uint8_t *body = web_req_body(r, &len);
	if (json_parse(&d, (const char *)body, len, toks, USERS_TOKS) < 0 || d.toks[0].type != JSON_OBJECT) {
		web_reply_error(r, 400, "bad_json", "the body must be a JSON object");
		return -1;
	}
	for (int i = 0; keys[i]; i++) {
		int t = json_obj_get(&d, 0, keys[i]);
		if (t < 0 || d.toks[t].type != JSON_STRING || json_get_str(&d, t, out[i], sizeof out[0]) < 1) {
			web_reply_error(r, 400, "bad_json", "%s must be a non-empty string of at most %zu bytes",
					keys[i], sizeof out[0] - 1);
			return -1;
		}
	}
	return 0;
}

/* The NAME of PREFIX/NAME[/rest], with rest in *rest ("" when none). */
static int name_of(struct web_req *r, const char *prefix, char *name, size_t cap, const char **rest)
{
	const char *p = web_req_path(r) + strlen(prefix);
	size_t n = strcspn(p, "/");
	if (!n || n >= cap) {
		web_reply_error(r, 404, "not_found", "no such user or token");
		return -1;
	}
	memcpy(name, p, n);
	name[n] = '\0';
	*rest = p + n;
	return 0;
}

static void route_users(struct web_req *r)
{
	static char v[3][300];
	static const char *const keys[] = {"name", "role", "password", NULL};
	if (web_req_method(r) != WEB_POST) {
		run(r, "user-list", NULL, NULL, NULL);
		return;
	}
	if (body_strings(r, keys, v) == 0)
		run(r, "user-add", v[0], v[1], v[2]);
	memset(v, 0, sizeof v);
}

/* POST /api/v1/users/NAME/password {"password"}, POST /api/v1/users/NAME/role {"role"};
 * DELETE /api/v1/users/NAME */
static void route_user(struct web_req *r)
{
	static char v[1][300];
	static const char *const keys[] = {"password", NULL};
	char name[80];
	const char *rest;
	if (name_of(r, "/api/v1/users/", name, sizeof name, &rest) < 0)
		return;
	if (web_req_method(r) == WEB_DELETE && !rest[0]) {
		run(r, "user-del", name, NULL, NULL);
		return;
	}
	if (web_req_method(r) == WEB_POST && !strcmp(rest, "/role")) {
		static const char *const role_keys[] = {"role", NULL};
		if (body_strings(r, role_keys, v) == 0)
			run(r, "user-role", name, v[0], NULL);
		return;
	}
	if (web_req_method(r) != WEB_POST || strcmp(rest, "/password")) {
		web_reply_error(r, 404, "not_found",
				"POST /api/v1/users/NAME/password or /role, or DELETE /api/v1/users/NAME");
		return;
	}
	if (body_strings(r, keys, v) == 0)
		run(r, "user-passwd", name, v[0], NULL);
	memset(v, 0, sizeof v);
}

static void route_tokens(struct web_req *r)
{
	static char v[2][300];
	static const char *const keys[] = {"name", "role", NULL};
	if (web_req_method(r) != WEB_POST) {
		run(r, "token-list", NULL, NULL, NULL);
		return;
	}
	if (body_strings(r, keys, v) == 0)
		run(r, "token-create", v[0], v[1], NULL);
}

static void route_token(struct web_req *r)
{
	char name[80];
	const char *rest;
	if (name_of(r, "/api/v1/tokens/", name, sizeof name, &rest) < 0)
		return;
	if (rest[0]) {
		web_reply_error(r, 404, "not_found", "DELETE /api/v1/tokens/NAME");
		return;
	}
	run(r, "token-revoke", name, NULL, NULL);
}

const struct web_route webd_users_routes[] = {
    {WEB_GET | WEB_HEAD, "/api/v1/users", WEB_ADMIN, 0, route_users},
    {WEB_POST, "/api/v1/users", WEB_ADMIN | WEB_CHANGES, USERS_BODY_MAX, route_users},
    {WEB_POST | WEB_DELETE, "/api/v1/users/", WEB_PREFIX | WEB_ADMIN | WEB_CHANGES, USERS_BODY_MAX, route_user},
    {WEB_GET | WEB_HEAD, "/api/v1/tokens", WEB_ADMIN, 0, route_tokens},
    {WEB_POST, "/api/v1/tokens", WEB_ADMIN | WEB_CHANGES, USERS_BODY_MAX, route_tokens},
    {WEB_DELETE, "/api/v1/tokens/", WEB_PREFIX | WEB_ADMIN | WEB_CHANGES, 0, route_token},
    {0, NULL, 0, 0, NULL},
};
