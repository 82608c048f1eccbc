/* keeppeekctl's credential commands, run in the supervisor: user-add, user-passwd,
 * user-del, user-role, user-list, token-create, token-revoke, token-list (keeppeekctl turns
 * "user add" into "user-add" and reads the password itself). Passwords are hashed on a
 * pool thread, so those two answer later. Exit codes: 0 ok, 1 failure, 2 usage. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/crypto.h>

#include "auth.h"
#include "auth_store.h"
#include "json.h"
#include "kp_time.h"
#include "log.h"

/* A user-add or user-passwd waiting for its hash. */
struct pending {
	struct auth_asker asker;
	bool add;
	char name[AUTH_NAME_MAX + 1];
	kp_Role role;
};

static void answer(struct supervisor *s, const struct auth_asker *a, int code, const char *text)
{
	if (a->webd) {
		auth_web_answer(a->webd, a->id, code, text, strlen(text));
		return;
	}
	int r = control_answer(s, a->ticket, code, text, strlen(text));
	if (r < 0 && r != -ENOENT)
		kp_warn("control client: answer not delivered: %s", strerror(-r));
}

void auth_web_answer(struct proc *webd, uint32_t id, int code, const char *text, size_t len)
{
	char line[512], msg[1100];
	if (code == 0 && len && text[0] == '{') {
		query_reply(webd, id, 200, "", "application/json", text, len);
		return;
	}
	while (len && text[len - 1] == '\n')
		len--;
	if (code != 0) {
		query_reply(webd, id, code == 2 ? 400 : 409, code == 2 ? "bad_request" : "refused", "text/plain", text,
			    len);
		return;
	}
	snprintf(line, sizeof line, "%.*s", (int)len, text);
	size_t o = (size_t)snprintf(msg, sizeof msg, "{\"message\":");
	int n = json_quote(msg + o, sizeof msg - o - 1, line);
	if (n < 0) {
		query_reply(webd, id, 500, "too_large", "text/plain", "answer too large", 16);
		return;
	}
	o += (size_t)n;
	msg[o++] = '}';
	query_reply(webd, id, 200, "", "application/json", msg, o);
}

static void hashed(struct supervisor *s, void *arg, int result, const char *hash)
{
	struct pending *pd = arg;
	struct auth_store *st = auth_store_get();
	char out[256];
	int code = 1;
	if (result < 0) {
		kp_err("auth: hashing the password of %s failed: %s", pd->name, strerror(-result));
		snprintf(out, sizeof out, "hashing the password failed: %s\n", strerror(-result));
	} else if (pd->add) {
		int r = auth_store_user_add(st, pd->name, pd->role, hash);
		if (r == -EEXIST)
			snprintf(out, sizeof out, "user %s already exists\n", pd->name);
		else if (r == -ENOSPC)
			snprintf(out, sizeof out, "there are already %d users\n", AUTH_MAX_USERS);
		else if (r < 0) {
			kp_err("auth: adding user %s: writing %s/users failed: %s", pd->name, st->dir, strerror(-r));
			snprintf(out, sizeof out, "writing %s/users failed: %s\n", st->dir, strerror(-r));
		} else {
			kp_notice("auth: user %s added (%s)", pd->name, auth_role_name(pd->role));
			snprintf(out, sizeof out, "user %s added (%s)\n", pd->name, auth_role_name(pd->role));
			code = 0;
		}
	} else {
		int r = auth_store_user_set_hash(st, pd->name, hash);
		if (r == -ENOENT)
			snprintf(out, sizeof out, "no user %s\n", pd->name);
		else if (r < 0) {
			kp_err("auth: new password of %s: writing %s/users failed: %s", pd->name, st->dir,
			       strerror(-r));
			snprintf(out, sizeof out, "writing %s/users failed: %s\n", st->dir, strerror(-r));
		} else {
			unsigned n = auth_end_sessions(pd->name);
			auth_revoked(s, pd->name);
			kp_notice("auth: password of %s changed; %u sessions ended", pd->name, n);
			snprintf(out, sizeof out, "password of %s changed; %u sessions ended\n", pd->name, n);
			code = 0;
		}
	}
	answer(s, &pd->asker, code, out);
	free(pd);
}

/* user-add NAME ROLE PASSWORD, user-passwd NAME PASSWORD */
static int set_password(struct supervisor *s, const kp_ControlRequest *req, bool add, struct kp_out *o,
			const struct auth_asker *asker)
{
	struct auth_store *st = auth_store_get();
	pb_size_t want = add ? 3 : 2;
	kp_Role role = kp_Role_ROLE_NONE;
	if (req->args_count != want || !auth_name_valid(req->args[0]) ||
	    (add && (auth_role_parse(req->args[1], &role) < 0 || role == kp_Role_ROLE_PUBLISHER))) {
		kp_out_put(o, "usage: user %s (NAME: up to %d of A-Z a-z 0-9 . _ - @)\n",
			   add ? "add NAME --role admin|viewer" : "passwd NAME", AUTH_NAME_MAX);
		return 2;
	}
	const char *password = req->args[want - 1];
	size_t len = strlen(password);
	if (len < AUTH_PASSWORD_MIN || len > 256) {
		kp_out_put(o, "a password has %d to 256 bytes\n", AUTH_PASSWORD_MIN);
		return 2;
	}
	bool exists = auth_store_user(st, req->args[0]) != NULL;
	if (add && exists) {
		kp_out_put(o, "user %s already exists\n", req->args[0]);
		return 1;
	}
	if (!add && !exists) {
		kp_out_put(o, "no user %s\n", req->args[0]);
		return 1;
	}
	struct pending *pd = calloc(1, sizeof *pd);
	if (!pd) {
		kp_out_put(o, "out of memory\n");
		return 1;
	}
	*pd = (struct pending){.asker = *asker, .add = add, .role = role};
	snprintf(pd->name, sizeof pd->name, "%s", req->args[0]);
	int r = auth_hash_async(s, password, len, hashed, pd);
	if (r < 0) {
		free(pd);
		kp_out_put(o, "cannot hash the password now: %s; try again\n",
			   r == -EBUSY ? "too many are being hashed" : strerror(-r));
		return 1;
	}
	return CONTROL_PENDING;
}

static int user_del(struct supervisor *s, const kp_ControlRequest *req, struct kp_out *o)
{
	struct auth_store *st = auth_store_get();
	if (req->args_count != 1) {
		kp_out_put(o, "usage: user del NAME\n");
		return 2;
	}
	int r = auth_store_user_del(st, req->args[0]);
	if (r == -ENOENT) {
		kp_out_put(o, "no user %s\n", req->args[0]);
		return 1;
	}
	if (r < 0) {
		kp_err("auth: deleting user %s: writing %s/users failed: %s", req->args[0], st->dir, strerror(-r));
		kp_out_put(o, "writing %s/users failed: %s\n", st->dir, strerror(-r));
		return 1;
	}
	unsigned n = auth_end_sessions(req->args[0]);
	auth_revoked(s, req->args[0]);
	kp_notice("auth: user %s deleted; %u sessions ended", req->args[0], n);
	kp_out_put(o, "user %s deleted; %u sessions ended\n", req->args[0], n);
	return 0;
}

/* user-role NAME ROLE: the sessions of that user end, so that the new role holds at once. */
static int user_role(struct supervisor *s, const kp_ControlRequest *req, struct kp_out *o)
{
	struct auth_store *st = auth_store_get();
	kp_Role role;
	if (req->args_count != 2 || auth_role_parse(req->args[1], &role) < 0 || role == kp_Role_ROLE_PUBLISHER) {
		kp_out_put(o, "usage: user role NAME admin|viewer\n");
		return 2;
	}
	int r = auth_store_user_set_role(st, req->args[0], role);
	if (r == -ENOENT) {
		kp_out_put(o, "no user %s\n", req->args[0]);
		return 1;
	}
	if (r < 0) {
		kp_err("auth: new role of %s: writing %s/users failed: %s", req->args[0], st->dir, strerror(-r));
		kp_out_put(o, "writing %s/users failed: %s\n", st->dir, strerror(-r));
		return 1;
	}
	unsigned n = auth_end_sessions(req->args[0]);
	auth_revoked(s, req->args[0]);
	kp_notice("auth: user %s is now %s; %u sessions ended", req->args[0], auth_role_name(role), n);
	kp_out_put(o, "user %s is now %s; %u sessions ended\n", req->args[0], auth_role_name(role), n);
	return 0;
}

static void user_list(bool json, struct kp_out *o)
{
	const struct auth_store *st = auth_store_get();
	kp_out_put(o, json ? "{\"users\":[" : "%-32s %s\n", "NAME", "ROLE");
	for (unsigned i = 0; i < st->nusers; i++) {
		const struct auth_user *u = &st->users[i];
		if (json) {
			kp_out_put(o, "%s{\"name\":", i ? "," : "");
			kp_out_json_string(o, u->name);
			kp_out_put(o, ",\"role\":\"%s\"}", auth_role_name(u->role));
		} else
			kp_out_put(o, "%-32s %s\n", u->name, auth_role_name(u->role));
	}
	if (json)
		kp_out_put(o, "]}\n");
}

/* token-create NAME ROLE: prints only the token. */
static int token_create(const kp_ControlRequest *req, struct kp_out *o)
{
	struct auth_store *st = auth_store_get();
	kp_Role role;
	if (req->args_count != 2 || !auth_name_valid(req->args[0]) || auth_role_parse(req->args[1], &role) < 0) {
		kp_out_put(o,
			   "usage: token create --name NAME --role admin|viewer|publisher (NAME: up to %d of A-Z a-z "
			   "0-9 . _ - @)\n",
			   AUTH_NAME_MAX);
		return 2;
	}
	char token[AUTH_SECRET_STRMAX];
	uint8_t digest[AUTH_DIGEST_LEN];
	int r = auth_random_string(AUTH_TOKEN_PREFIX, token, sizeof token);
	if (r == 0)
		r = auth_digest(token, digest);
	if (r == 0)
		r = auth_store_token_add(st, req->args[0], role, digest, kp_wall_ms());
	if (r == -EEXIST)
		kp_out_put(o, "a token named %s exists; revoke it first\n", req->args[0]);
	else if (r == -ENOSPC)
		kp_out_put(o, "there are already %d tokens\n", AUTH_MAX_TOKENS);
	else if (r < 0) {
		kp_err("auth: creating token %s failed: %s", req->args[0], strerror(-r));
		kp_out_put(o, "creating the token failed (writing %s/tokens): %s\n", st->dir, strerror(-r));
	} else {
		kp_notice("auth: API token %s created (%s)", req->args[0], auth_role_name(role));
		if (req->json) {
			kp_out_put(o, "{\"name\":");
			kp_out_json_string(o, req->args[0]);
			kp_out_put(o, ",\"role\":\"%s\",\"token\":\"%s\"}\n", auth_role_name(role), token);
		} else {
			kp_out_put(o, "%s\n", token);
		}
	}
	OPENSSL_cleanse(token, sizeof token);
	return r < 0 ? 1 : 0;
}

static int token_revoke(struct supervisor *s, const kp_ControlRequest *req, struct kp_out *o)
{
	struct auth_store *st = auth_store_get();
	if (req->args_count != 1) {
		kp_out_put(o, "usage: token revoke NAME\n");
		return 2;
	}
	int r = auth_store_token_del(st, req->args[0]);
	if (r == -ENOENT) {
		kp_out_put(o, "no token %s\n", req->args[0]);
		return 1;
	}
	if (r < 0) {
		kp_err("auth: revoking token %s: writing %s/tokens failed: %s", req->args[0], st->dir, strerror(-r));
		kp_out_put(o, "writing %s/tokens failed: %s\n", st->dir, strerror(-r));
		return 1;
	}
	char principal[AUTH_NAME_MAX + 8];
	snprintf(principal, sizeof principal, "token:%s", req->args[0]);
	auth_revoked(s, principal);
	kp_notice("auth: API token %s revoked", req->args[0]);
	kp_out_put(o, "token %s revoked\n", req->args[0]);
	return 0;
}

static void token_list(bool json, struct kp_out *o)
{
	const struct auth_store *st = auth_store_get();
	kp_out_put(o, json ? "{\"tokens\":[" : "%-32s %-6s %s\n", "NAME", "ROLE", "CREATED");
	for (unsigned i = 0; i < st->ntokens; i++) {
		const struct auth_token *t = &st->tokens[i];
		if (json) {
			kp_out_put(o, "%s{\"name\":", i ? "," : "");
			kp_out_json_string(o, t->name);
			kp_out_put(o, ",\"role\":\"%s\",\"created_ms\":%lld}", auth_role_name(t->role),
				   (long long)t->created_ms);
			continue;
		}
		time_t secs = (time_t)(t->created_ms / 1000);
		struct tm tm;
		char when[32] = "?";
		if (gmtime_r(&secs, &tm))
			strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
		kp_out_put(o, "%-32s %-6s %s\n", t->name, auth_role_name(t->role), when);
	}
	if (json)
		kp_out_put(o, "]}\n");
}

int auth_control(struct supervisor *s, const kp_ControlRequest *req, struct kp_out *o, const struct auth_asker *asker)
{
	const char *c = req->command;
	if (!strcmp(c, "user-add"))
		return set_password(s, req, true, o, asker);
	if (!strcmp(c, "user-passwd"))
		return set_password(s, req, false, o, asker);
	if (!strcmp(c, "user-del"))
		return user_del(s, req, o);
	if (!strcmp(c, "user-role"))
		return user_role(s, req, o);
	if (!strcmp(c, "token-create"))
		return token_create(req, o);
	if (!strcmp(c, "token-revoke"))
		return token_revoke(s, req, o);
	if (req->args_count == 0 && !strcmp(c, "user-list")) {
		user_list(req->json, o);
		return 0;
	}
	if (req->args_count == 0 && !strcmp(c, "token-list")) {
		token_list(req->json, o);
		return 0;
	}
	kp_out_put(o, "unknown command '%s'\n", c);
	return 2;
}
