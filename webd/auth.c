/* webd's side of authentication: principals from "Authorization: Bearer" (API tokens)
 * or the kp_session cookie, checked by the supervisor (AuthRequest) and cached for at
 * most AUTH_CACHE_MS keyed by a SHA-256 of the secret; role checks; CSRF defence for
 * state-changing cookie requests (same-origin Origin or Sec-Fetch-Site, and the
 * X-KeepPeek-CSRF header equal to the kp_csrf cookie); and the routes POST
 * /api/v1/login, POST /api/v1/logout and GET /api/v1/session. Password hashes and the
 * slowing of repeated failures live in the supervisor (docs/auth.md). */
#include <errno.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <openssl/sha.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "kp_time.h"
#include "json.h"
#include "log.h"
#include "webd.h"

#define AUTH_CACHE_MS   10000u
#define AUTH_CACHE_SIZE 64
#define LOGIN_MAX_BODY  (4 * KP_KIB)

struct cache_entry {
	uint8_t key[SHA256_DIGEST_LENGTH];
	uint64_t until_ms; /* 0: free */
	struct web_principal p;
};

static struct cache_entry cache[AUTH_CACHE_SIZE];

static void key_of(kp_AuthKind kind, const char *secret, uint8_t out[SHA256_DIGEST_LENGTH])
{
	unsigned char buf[1 + 257];
	size_t n = strnlen(secret, 256);
	buf[0] = (unsigned char)kind;
	memcpy(buf + 1, secret, n);
	/* The digest fetched once and one context reused: SHA256() looks the algorithm up
	 * in OpenSSL's provider tables on every call, a cost per request. */
	static EVP_MD *md;
	static EVP_MD_CTX *ctx;
	if (!md)
		md = EVP_MD_fetch(NULL, "SHA2-256", NULL);
	if (md && !ctx)
		ctx = EVP_MD_CTX_new();
	unsigned len = 0;
	if (!ctx || !EVP_DigestInit_ex2(ctx, md, NULL) || !EVP_DigestUpdate(ctx, buf, n + 1) ||
	    !EVP_DigestFinal_ex(ctx, out, &len) || len != SHA256_DIGEST_LENGTH)
		SHA256(buf, n + 1, out);
	explicit_bzero(buf, sizeof buf);
}

void webd_auth_init(void)
{
	uint8_t key[SHA256_DIGEST_LENGTH];
	key_of(kp_AuthKind_AUTH_TOKEN, "", key);
}

static const struct web_principal *cache_get(const uint8_t key[SHA256_DIGEST_LENGTH])
{
	uint64_t now = kp_mono_ms();
	for (int i = 0; i < AUTH_CACHE_SIZE; i++)
		if (cache[i].until_ms > now && memcmp(cache[i].key, key, SHA256_DIGEST_LENGTH) == 0)
			return &cache[i].p;
	return NULL;
}

static void cache_put(const uint8_t key[SHA256_DIGEST_LENGTH], const struct web_principal *p, int64_t expires_ms)
{
	uint64_t now = kp_mono_ms();
	uint64_t ttl = AUTH_CACHE_MS;
	if (expires_ms > 0) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		int64_t left = expires_ms - ((int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000);
		if (left <= 0)
			return;
		if ((uint64_t)left < ttl)
			ttl = (uint64_t)left;
	}
	int victim = 0;
	for (int i = 0; i < AUTH_CACHE_SIZE; i++) {
		if (memcmp(cache[i].key, key, SHA256_DIGEST_LENGTH) == 0 || cache[i].until_ms <= now) {
			victim = i;
			break;
		}
		if (cache[i].until_ms < cache[victim].until_ms)
			victim = i;
	}
	memcpy(cache[victim].key, key, SHA256_DIGEST_LENGTH);
	cache[victim].until_ms = now + ttl;
	cache[victim].p = *p;
}

static void cache_drop(const uint8_t key[SHA256_DIGEST_LENGTH])
{
	for (int i = 0; i < AUTH_CACHE_SIZE; i++)
		if (memcmp(cache[i].key, key, SHA256_DIGEST_LENGTH) == 0)
			cache[i].until_ms = 0;
}

/* The value of cookie name in a Cookie header, or 0 when absent or too long. */
void webd_auth_revoked(const char *principal)
{
	unsigned dropped = 0;
	for (unsigned i = 0; i < AUTH_CACHE_SIZE; i++)
		if (cache[i].until_ms && !strcmp(cache[i].p.name, principal)) {
			cache[i].until_ms = 0;
			dropped++;
		}
	unsigned closed = web_ws_close_principal(principal, 1008, "credentials revoked");
	kp_notice("credentials of %s revoked: %u cached answers dropped, %u WebSockets closed", principal, dropped,
		  closed);
}

static int cookie(const char *hdr, const char *name, char *buf, size_t cap)
{
	size_t n = strlen(name);
	for (const char *p = hdr; p && *p;) {
		while (*p == ' ' || *p == ';')
			p++;
		const char *e = strchr(p, ';');
		size_t len = e ? (size_t)(e - p) : strlen(p);
		if (len > n && p[n] == '=' && strncmp(p, name, n) == 0) {
			size_t vl = len - n - 1;
			if (vl == 0 || vl >= cap)
				return 0;
			memcpy(buf, p + n + 1, vl);
			buf[vl] = 0;
			return 1;
		}
		p = e;
	}
	return 0;
}

static bool same_origin(const char *origin, const char *sec_fetch_site, const char *host, bool tls)
{
	if (origin) {
		char want[300];
		if (!host)
			return false;
		snprintf(want, sizeof want, "%s://%s", tls ? "https" : "http", host);
		return strcmp(origin, want) == 0;
	}
	return sec_fetch_site && strcmp(sec_fetch_site, "same-origin") == 0;
}

/* One way to read headers of either a request or a WebSocket's upgrade request. */
struct subject {
	struct web_req *r;
	struct web_ws *ws;
	uint64_t id;
};

static const char *hdr(const struct subject *s, const char *name)
{
	return s->r ? web_req_header(s->r, name) : web_ws_header(s->ws, name);
}

struct pending {
	struct subject s;
	unsigned flags;
	kp_AuthKind kind;
	uint8_t key[SHA256_DIGEST_LENGTH];
	void (*done_req)(struct web_req *r, int status);
	void (*done_ws)(struct web_ws *ws, int status);
};

/* Answers a failed check; done(status) follows. */
static void refuse(struct pending *p, int status, const char *code, const char *msg, uint32_t retry_ms)
{
	if (p->s.r) {
		if (retry_ms) {
			char extra[48], body[200];
			snprintf(extra, sizeof extra, "Retry-After: %u\r\n", (retry_ms + 999) / 1000);
			int n = snprintf(body, sizeof body, "{\"error\":\"%s\",\"code\":\"slowed\"}", msg);
			web_reply(p->s.r, 429, "application/json", body, (size_t)n, extra);
			p->done_req(p->s.r, 429);
			return;
		}
		web_reply_error(p->s.r, status, code, "%s", msg);
		p->done_req(p->s.r, status);
	} else {
		kp_info("WebSocket %s from %s refused: %s", web_ws_path(p->s.ws), web_ws_client_addr(p->s.ws), msg);
		p->done_ws(p->s.ws, status);
	}
}

static void grant(struct pending *p, const struct web_principal *pr)
{
	if ((p->flags & WEB_ADMIN) && pr->role != kp_Role_ROLE_ADMIN) {
		refuse(p, 403, "forbidden", "this needs the admin role", 0);
		return;
	}
	if ((p->flags & WEB_PUBLISH) && pr->role != kp_Role_ROLE_ADMIN && pr->role != kp_Role_ROLE_PUBLISHER) {
		refuse(p, 403, "forbidden", "publishing events needs a publisher or admin token", 0);
		return;
	}
	if (!(p->flags & WEB_PUBLISH) && pr->role == kp_Role_ROLE_PUBLISHER) {
		refuse(p, 403, "forbidden", "a publisher token may only publish events", 0);
		return;
	}
	if (p->s.r) {
		web_req_set_principal(p->s.r, pr);
		p->done_req(p->s.r, 0);
	} else {
		web_ws_set_principal(p->s.ws, pr);
		p->done_ws(p->s.ws, 0);
	}
}

static void on_auth_reply(void *arg, struct kp_ipc_frame *f)
{
	struct pending *p = arg;
	/* The request or WebSocket may have gone while the supervisor answered. */
	p->s.r = p->s.r ? web_req_find(p->s.id) : NULL;
	p->s.ws = p->s.ws ? web_ws_find(p->s.id) : NULL;
	if (!p->s.r && !p->s.ws) {
		free(p);
		return;
	}
	if (!f || f->env->which_msg != kp_Envelope_auth_reply_tag) {
		refuse(p, 503, "auth_unavailable", "the credential check did not answer", 0);
		free(p);
		return;
	}
	const kp_AuthReply *a = &f->env->msg.auth_reply;
	if (!a->ok) {
		refuse(p, 401, "unauthenticated", a->error[0] ? a->error : "credentials not accepted",
		       a->retry_after_ms);
		free(p);
		return;
	}
	struct web_principal pr = {.role = a->role, .via_token = p->kind == kp_AuthKind_AUTH_TOKEN};
	snprintf(pr.name, sizeof pr.name, "%s", a->principal);
	cache_put(p->key, &pr, a->expires_ms);
	grant(p, &pr);
	free(p);
}

static void check(struct pending *p, bool tls, const char *addr)
{
	const char *authz = hdr(&p->s, "authorization");
	const char *cookies = hdr(&p->s, "cookie");
	char secret[257];
	if (authz && strncasecmp(authz, "Bearer ", 7) == 0) {
		const char *t = authz + 7;
		while (*t == ' ')
			t++;
		if (!*t || strlen(t) >= sizeof secret) {
			refuse(p, 401, "unauthenticated", "malformed bearer token", 0);
			free(p);
			return;
		}
		snprintf(secret, sizeof secret, "%s", t);
		p->kind = kp_AuthKind_AUTH_TOKEN;
	} else if (cookies && cookie(cookies, "kp_session", secret, sizeof secret)) {
		p->kind = kp_AuthKind_AUTH_SESSION;
		bool origin_ok =
		    same_origin(hdr(&p->s, "origin"), hdr(&p->s, "sec-fetch-site"), hdr(&p->s, "host"), tls);
		if (p->s.ws && !origin_ok) {
			refuse(p, 403, "csrf", "cross-site WebSocket refused", 0);
			free(p);
			return;
		}
		if (p->s.r && (p->flags & WEB_CHANGES)) {
			char want[80];
			const char *got = hdr(&p->s, "x-keeppeek-csrf");
			if (!origin_ok || !cookie(cookies, "kp_csrf", want, sizeof want) || !got ||
			    strcmp(got, want) != 0) {
				refuse(p, 403, "csrf", "cross-site or unconfirmed request refused", 0);
				free(p);
				return;
			}
		}
	} else {
		refuse(p, 401, "unauthenticated", "sign in or send an API token", 0);
		free(p);
		return;
	}
	key_of(p->kind, secret, p->key);
	const struct web_principal *hit = cache_get(p->key);
	if (hit) {
		struct web_principal pr = *hit;
		grant(p, &pr);
		free(p);
		return;
	}
	uint32_t id = webd_answer_expect(kp_Peer_PEER_SUPERVISOR, on_auth_reply, p);
	if (!id) {
		refuse(p, 503, "busy", "too many credential checks in flight", 0);
		free(p);
		return;
	}
	kp_Envelope env = kp_Envelope_init_zero;
	env.which_msg = kp_Envelope_auth_request_tag;
	kp_AuthRequest *q = &env.msg.auth_request;
	q->id = id;
	q->kind = p->kind;
	snprintf(q->secret, sizeof q->secret, "%s", secret);
	snprintf(q->client_addr, sizeof q->client_addr, "%s", addr);
	struct webd *d = p->s.r ? web_req_app(p->s.r) : web_ws_app(p->s.ws);
	int e = kp_worker_send_supervisor(d->worker, &env);
	if (e < 0) {
		webd_answer_cancel(id);
		kp_warn("sending a credential check to the supervisor failed: %s", strerror(-e));
		refuse(p, 503, "auth_unavailable", "the credential check is unavailable", 0);
		free(p);
	}
}

void webd_auth_check(struct web_req *r, unsigned route_flags, void (*done)(struct web_req *r, int status))
{
	struct pending *p = calloc(1, sizeof *p);
	if (!p) {
		web_reply_error(r, 503, "busy", "no memory");
		done(r, 503);
		return;
	}
	p->s.r = r;
	p->s.id = web_req_id(r);
	p->flags = route_flags;
	p->done_req = done;
	check(p, web_req_tls(r), web_req_client_addr(r));
}

void webd_auth_ws(struct web_ws *ws, unsigned route_flags, void (*done)(struct web_ws *ws, int status))
{
	struct pending *p = calloc(1, sizeof *p);
	if (!p) {
		done(ws, 503);
		return;
	}
	p->s.ws = ws;
	p->s.id = web_ws_id(ws);
	p->flags = route_flags;
	p->done_ws = done;
	check(p, false, web_ws_client_addr(ws));
}

/* ---- routes ---- */

static const char *role_name(kp_Role r)
{
	return r == kp_Role_ROLE_ADMIN       ? "admin"
	       : r == kp_Role_ROLE_VIEWER    ? "viewer"
	       : r == kp_Role_ROLE_PUBLISHER ? "publisher"
					     : "none";
}

struct login {
	uint64_t req;
	char user[33];
};

static void on_login_reply(void *arg, struct kp_ipc_frame *f)
{
	struct login *l = arg;
	struct web_req *r = web_req_find(l->req);
	if (!r) {
		free(l);
		return;
	}
	if (!f || f->env->which_msg != kp_Envelope_auth_reply_tag) {
		web_reply_error(r, 503, "auth_unavailable", "the credential check did not answer");
		free(l);
		return;
	}
	const kp_AuthReply *a = &f->env->msg.auth_reply;
	if (!a->ok) {
		char extra[48];
		snprintf(extra, sizeof extra, "Retry-After: %u\r\n", (a->retry_after_ms + 999) / 1000);
		if (a->busy) {
			web_reply_error_extra(r, 503, "busy", extra, "%s", a->error);
		} else if (a->retry_after_ms) {
			static const char body[] = "{\"error\":\"too many failed sign-ins: wait\",\"code\":\"slowed\"}";
			web_reply(r, 429, "application/json", body, sizeof body - 1, extra);
		} else {
			web_reply_error(r, 401, "login_failed", "%s",
					a->error[0] ? a->error : "wrong user or password");
		}
		free(l);
		return;
	}
	uint8_t rnd[16];
	char csrf[33];
	if (RAND_bytes(rnd, sizeof rnd) != 1) {
		web_reply_error(r, 500, "random", "no random bytes for the CSRF token");
		free(l);
		return;
	}
	for (int i = 0; i < 16; i++)
		snprintf(csrf + 2 * i, 3, "%02x", rnd[i]);
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	int64_t now_ms = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
	long long max_age = a->expires_ms > now_ms ? (a->expires_ms - now_ms) / 1000 : 0;
	const char *secure = web_req_tls(r) ? "; Secure" : "";
	char age[40] = "";
	if (max_age > 0)
		snprintf(age, sizeof age, "; Max-Age=%lld", max_age);
	char extra[512];
	snprintf(extra, sizeof extra,
		 "Set-Cookie: kp_session=%s; HttpOnly; SameSite=Strict; Path=/%s%s\r\n"
		 "Set-Cookie: kp_csrf=%s; SameSite=Strict; Path=/%s%s\r\n",
		 a->session, secure, age, csrf, secure, age);
	char body[512];
	struct json_w w;
	jw_init(&w, body, sizeof body);
	jw_obj(&w);
	jw_key(&w, "user");
	jw_str(&w, a->principal);
	jw_key(&w, "role");
	jw_str(&w, role_name(a->role));
	jw_key(&w, "expires_ms");
	jw_int(&w, a->expires_ms);
	jw_obj_end(&w);
	size_t len;
	if (jw_finish(&w, &len) < 0) {
		web_reply_error(r, 500, "internal", "answer too long");
	} else {
		kp_info("sign-in of %s from %s", a->principal, web_req_client_addr(r));
		web_reply(r, 200, "application/json", body, len, extra);
	}
	free(l);
}

static void route_login(struct web_req *r)
{
	const char *origin = web_req_header(r, "origin");
	const char *site = web_req_header(r, "sec-fetch-site");
	if ((origin && !same_origin(origin, NULL, web_req_header(r, "host"), web_req_tls(r))) ||
	    (site && strcmp(site, "cross-site") == 0)) {
		web_reply_error(r, 403, "csrf", "cross-site sign-in refused");
		return;
	}
	size_t blen;
	const uint8_t *body = web_req_body(r, &blen);
	struct json_tok toks[16];
	struct json_doc d;
	kp_Envelope env = kp_Envelope_init_zero;
	kp_AuthRequest *q = &env.msg.auth_request;
	if (!body || json_parse(&d, (const char *)body, blen, toks, 16) < 0 ||
	    json_get_str(&d, json_obj_get(&d, 0, "user"), q->user, sizeof q->user) <= 0 ||
	    json_get_str(&d, json_obj_get(&d, 0, "password"), q->secret, sizeof q->secret) < 0) {
		web_reply_error(r, 400, "bad_request", "expected {\"user\": \"...\", \"password\": \"...\"}");
		return;
	}
	struct login *l = calloc(1, sizeof *l);
	uint32_t id = l ? webd_answer_expect(kp_Peer_PEER_SUPERVISOR, on_login_reply, l) : 0;
	if (!id) {
		free(l);
		web_reply_error(r, 503, "busy", "too many sign-ins in flight");
		return;
	}
	l->req = web_req_id(r);
	env.which_msg = kp_Envelope_auth_request_tag;
	q->id = id;
	q->kind = kp_AuthKind_AUTH_LOGIN;
	snprintf(q->client_addr, sizeof q->client_addr, "%s", web_req_client_addr(r));
	struct webd *wd = web_req_app(r);
	int e = kp_worker_send_supervisor(wd->worker, &env);
	explicit_bzero(q->secret, sizeof q->secret);
	if (e < 0) {
		webd_answer_cancel(id);
		free(l);
		web_reply_error(r, 503, "auth_unavailable", "the credential check is unavailable");
	}
}

static void ignore_reply(void *arg, struct kp_ipc_frame *f)
{
	(void)arg;
	(void)f;
}

static void route_logout(struct web_req *r)
{
	const char *cookies = web_req_header(r, "cookie");
	char secret[257];
	if (cookies && cookie(cookies, "kp_session", secret, sizeof secret)) {
		uint8_t key[SHA256_DIGEST_LENGTH];
		key_of(kp_AuthKind_AUTH_SESSION, secret, key);
		cache_drop(key);
		kp_Envelope env = kp_Envelope_init_zero;
		env.which_msg = kp_Envelope_auth_request_tag;
		env.msg.auth_request.id = webd_answer_expect(kp_Peer_PEER_SUPERVISOR, ignore_reply, NULL);
		env.msg.auth_request.kind = kp_AuthKind_AUTH_LOGOUT;
		snprintf(env.msg.auth_request.secret, sizeof env.msg.auth_request.secret, "%s", secret);
		snprintf(env.msg.auth_request.client_addr, sizeof env.msg.auth_request.client_addr, "%s",
			 web_req_client_addr(r));
		struct webd *d = web_req_app(r);
		int e = kp_worker_send_supervisor(d->worker, &env);
		if (e < 0) {
			webd_answer_cancel(env.msg.auth_request.id);
			web_reply_error(r, 503, "auth_unavailable", "the session could not be ended");
			return;
		}
	}
	const char *secure = web_req_tls(r) ? "; Secure" : "";
	char extra[300];
	snprintf(extra, sizeof extra,
		 "Set-Cookie: kp_session=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0%s\r\n"
		 "Set-Cookie: kp_csrf=; SameSite=Strict; Path=/; Max-Age=0%s\r\n",
		 secure, secure);
	web_reply(r, 200, "application/json", "{}", 2, extra);
}

static void route_session(struct web_req *r)
{
	const struct web_principal *p = web_req_principal(r);
	char body[256];
	struct json_w w;
	jw_init(&w, body, sizeof body);
	jw_obj(&w);
	jw_key(&w, "user");
	jw_str(&w, p->name);
	jw_key(&w, "role");
	jw_str(&w, role_name(p->role));
	jw_key(&w, "via_token");
	jw_bool(&w, p->via_token);
	jw_obj_end(&w);
	size_t len;
	if (jw_finish(&w, &len) < 0) {
		web_reply_error(r, 500, "internal", "answer too long");
		return;
	}
	web_reply(r, 200, "application/json", body, len, NULL);
}

const struct web_route webd_auth_routes[] = {
    {WEB_POST, "/api/v1/login", WEB_PUBLIC, LOGIN_MAX_BODY, route_login},
    {WEB_POST, "/api/v1/logout", WEB_CHANGES, 0, route_logout},
    {WEB_GET, "/api/v1/session", 0, 0, route_session},
    {0, NULL, 0, 0, NULL},
};
