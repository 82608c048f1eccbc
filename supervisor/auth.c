/* Authentication answers for webd: AUTH_LOGIN (scrypt check on a libuv pool thread, then
 * a new session), AUTH_SESSION, AUTH_TOKEN and AUTH_LOGOUT, each answered by an
 * AuthReply with the request's id. Sessions live in this process's memory only (they
 * survive webd restarts, not keeppeekd restarts); failed logins are slowed per client
 * address. docs/auth.md. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include "auth.h"
#include "auth_store.h"
#include "kp_time.h"
#include "log.h"

#define SESSIONS_MAX        4096
#define SESSION_IDLE_MS     (12ull * 3600 * 1000) /* sliding: every use extends it */
#define SESSION_ABSOLUTE_MS (7ull * 24 * 3600 * 1000)
#define SLOW_ADDRS_MAX      1024
#define SLOW_FAILURES       5                  /* failures before slowing starts */
#define SLOW_FORGET_MS      (5ull * 60 * 1000) /* an address is forgiven after 5 min without failure */
#define SLOW_DELAY_MIN_MS   1000
#define SLOW_DELAY_MAX_MS   60000
#define HASH_RUNNING_MAX    2  /* scrypt takes 32 MiB each: at most two at once */
#define HASH_QUEUE_MAX      32 /* waiting beyond those: the rest are told to retry */

static struct auth_store store;
static char dummy_hash[AUTH_HASH_STR_MAX]; /* checked for unknown users: same cost */

struct session {
	uint8_t digest[AUTH_DIGEST_LEN]; /* SHA-256 of the cookie value */
	char user[AUTH_NAME_MAX + 1];
	uint64_t created_ms, used_ms; /* monotonic */
};
static struct session sessions[SESSIONS_MAX];

struct slow {
	char addr[64];
	unsigned failures;
	unsigned level; /* doublings of the delay so far */
	uint64_t last_failure_ms;
	uint64_t blocked_until_ms;
};
static struct slow slows[SLOW_ADDRS_MAX];

struct job {
	uv_work_t work;
	struct supervisor *s;
	bool verify; /* else: hash a new password */
	char password[AUTH_PASSWORD_MAX + 1];
	size_t len;
	char hash[AUTH_HASH_STR_MAX]; /* verify: the stored hash; else the result */
	int result;
	void (*finish)(struct job *j); /* on the loop, when the work is done */
	auth_hash_cb cb;               /* auth_hash_async's caller */
	void *arg;
	/* login */
	uint32_t id;
	pid_t webd_pid;
	char user[AUTH_NAME_MAX + 1];
	char addr[64];
	bool known_user;
	struct job *next;
};
static struct job *queue_head, *queue_tail;
static unsigned queued, running;

struct auth_store *auth_store_get(void)
{
	return &store;
}

/* Names and addresses from the network, made safe for a log line. */
static const char *printable(const char *in, char *buf, size_t len)
{
	size_t i = 0;
	for (; in[i] && i + 1 < len; i++)
		buf[i] = in[i] > 0x20 && in[i] < 0x7f ? in[i] : '?';
	buf[i] = '\0';
	return buf;
}

/* ---- the pool of hashing work ---- */

static void job_free(struct job *j)
{
	OPENSSL_cleanse(j, sizeof *j);
	free(j);
}

static void job_work(uv_work_t *w)
{
	struct job *j = w->data;
	if (j->verify)
		j->result = auth_verify_password(j->password, j->len, j->hash);
	else
		j->result = auth_hash_password(j->password, j->len, j->hash, sizeof j->hash);
}

static void job_start_next(uv_loop_t *loop);

static void job_after(uv_work_t *w, int status)
{
	struct job *j = w->data;
	uv_loop_t *loop = w->loop; /* w is part of j, freed below */
	running--;
	OPENSSL_cleanse(j->password, sizeof j->password);
	if (status < 0)
		j->result = status;
	j->finish(j);
	job_free(j);
	job_start_next(loop);
}

static void job_start_next(uv_loop_t *loop)
{
	while (running < HASH_RUNNING_MAX && queue_head) {
		struct job *j = queue_head;
		queue_head = j->next;
		if (!queue_head)
			queue_tail = NULL;
		queued--;
		j->work.data = j;
		int r = uv_queue_work(loop, &j->work, job_work, job_after);
		if (r < 0) {
			kp_err("auth: cannot start password hashing: %s", uv_strerror(r));
			j->result = r;
			j->finish(j);
			job_free(j);
			continue;
		}
		running++;
	}
}

/* Takes j; -EBUSY (j freed) when the queue is full. */
static int job_submit(struct supervisor *s, struct job *j)
{
	if (queued >= HASH_QUEUE_MAX) {
		job_free(j);
		return -EBUSY;
	}
	j->s = s;
	if (queue_tail)
		queue_tail->next = j;
	else
		queue_head = j;
	queue_tail = j;
	queued++;
	job_start_next(s->loop);
	return 0;
}

static void hash_finish(struct job *j)
{
	j->cb(j->s, j->arg, j->result, j->result == 0 ? j->hash : "");
}

int auth_hash_async(struct supervisor *s, const char *password, size_t len, auth_hash_cb done, void *arg)
{
	if (len > AUTH_PASSWORD_MAX)
		return -EINVAL;
	struct job *j = calloc(1, sizeof *j);
	if (!j)
		return -ENOMEM;
	memcpy(j->password, password, len);
	j->len = len;
	j->finish = hash_finish;
	j->cb = done;
	j->arg = arg;
	return job_submit(s, j);
}

/* ---- sessions ---- */

static struct session *session_find(const char *value, uint64_t now)
{
	uint8_t d[AUTH_DIGEST_LEN];
	if (!value[0] || auth_digest(value, d) < 0)
		return NULL;
	struct session *found = NULL;
	for (unsigned i = 0; i < SESSIONS_MAX; i++)
		if (sessions[i].user[0] && !CRYPTO_memcmp(sessions[i].digest, d, sizeof d))
			found = &sessions[i];
	if (found && (now - found->used_ms > SESSION_IDLE_MS || now - found->created_ms > SESSION_ABSOLUTE_MS ||
		      !auth_store_user(&store, found->user))) {
		memset(found, 0, sizeof *found);
		found = NULL;
	}
	return found;
}

static int64_t session_expires(const struct session *se, uint64_t now)
{
	uint64_t idle = se->used_ms + SESSION_IDLE_MS, absolute = se->created_ms + SESSION_ABSOLUTE_MS;
	uint64_t end = idle < absolute ? idle : absolute;
	return kp_wall_ms() + (int64_t)(end - now);
}

/* A new session for user: a free or expired slot, else the least recently used one. */
static int session_new(const char *user, uint64_t now, char *ret, size_t retlen, struct session **ret_se)
{
	struct session *slot = NULL;
	for (unsigned i = 0; i < SESSIONS_MAX; i++) {
		struct session *se = &sessions[i];
		if (!se->user[0] || now - se->used_ms > SESSION_IDLE_MS || now - se->created_ms > SESSION_ABSOLUTE_MS) {
			slot = se;
			break;
		}
		if (!slot || se->used_ms < slot->used_ms)
			slot = se;
	}
	if (slot->user[0] && now - slot->used_ms <= SESSION_IDLE_MS)
		kp_notice("auth: %d sessions in use; ending the least recently used one (user %s)", SESSIONS_MAX,
			  slot->user);
	int r = auth_random_string("", ret, retlen);
	if (r == 0)
		r = auth_digest(ret, slot->digest);
	if (r < 0) {
		memset(slot, 0, sizeof *slot);
		return r;
	}
	snprintf(slot->user, sizeof slot->user, "%s", user);
	slot->created_ms = slot->used_ms = now;
	*ret_se = slot;
	return 0;
}

unsigned auth_end_sessions(const char *user)
{
	unsigned n = 0;
	for (unsigned i = 0; i < SESSIONS_MAX; i++)
		if (sessions[i].user[0] && !strcmp(sessions[i].user, user)) {
			memset(&sessions[i], 0, sizeof sessions[i]);
			n++;
		}
	return n;
}

/* ---- slowing repeated failures per client address ---- */

static struct slow *slow_find(const char *addr, uint64_t now)
{
	for (unsigned i = 0; i < SLOW_ADDRS_MAX; i++) {
		struct slow *e = &slows[i];
		if (!e->failures || strcmp(e->addr, addr))
			continue;
		if (now - e->last_failure_ms > SLOW_FORGET_MS && now >= e->blocked_until_ms) {
			memset(e, 0, sizeof *e);
			return NULL;
		}
		return e;
	}
	return NULL;
}

/* Counts one failure (a login is counted when it starts, so that parallel attempts are
 * slowed too; success forgives the address). Returns the delay now imposed, 0 if none. */
static uint32_t slow_failure(const char *addr, uint64_t now)
{
	struct slow *e = slow_find(addr, now);
	if (!e) {
		for (unsigned i = 0; i < SLOW_ADDRS_MAX; i++) {
			struct slow *c = &slows[i];
			if (!c->failures || now - c->last_failure_ms > SLOW_FORGET_MS) {
				e = c;
				break;
			}
			if (!e || c->last_failure_ms < e->last_failure_ms)
				e = c;
		}
		memset(e, 0, sizeof *e);
		snprintf(e->addr, sizeof e->addr, "%s", addr);
	}
	e->failures++;
	e->last_failure_ms = now;
	if (e->failures < SLOW_FAILURES)
		return 0;
	uint64_t delay = (uint64_t)SLOW_DELAY_MIN_MS << (e->level < 6 ? e->level : 6);
	if (delay > SLOW_DELAY_MAX_MS)
		delay = SLOW_DELAY_MAX_MS;
	e->level++;
	e->blocked_until_ms = now + delay;
	return (uint32_t)delay;
}

static void slow_forgive(const char *addr, uint64_t now)
{
	struct slow *e = slow_find(addr, now);
	if (e)
		memset(e, 0, sizeof *e);
}

static uint32_t slow_remaining(const char *addr, uint64_t now)
{
	struct slow *e = slow_find(addr, now);
	return e && e->blocked_until_ms > now ? (uint32_t)(e->blocked_until_ms - now) : 0;
}

/* ---- answers to webd ---- */

static void reply(struct supervisor *s, pid_t webd_pid, const kp_AuthReply *rep)
{
	struct proc *p = proc_by_peer(s, kp_Peer_PEER_WEBD);
	if (!p || !p->ipc || p->pid != webd_pid)
		return; /* the webd that asked is gone; its successor never saw this question */
	kp_Envelope env = kp_Envelope_init_zero;
	env.which_msg = kp_Envelope_auth_reply_tag;
	env.msg.auth_reply = *rep;
	int r = kp_ipc_send(p->ipc, &env, NULL, 0, NULL, 0);
	if (r < 0)
		kp_warn("auth: reply %u to webd not sent: %s", (unsigned)rep->id, strerror(-r));
}

void auth_revoked(struct supervisor *s, const char *principal)
{
	struct proc *p = proc_by_peer(s, kp_Peer_PEER_WEBD);
	if (!p || !p->ipc)
		return; /* a webd that starts later has nothing cached */
	kp_Envelope env = kp_Envelope_init_zero;
	env.which_msg = kp_Envelope_auth_revoked_tag;
	snprintf(env.msg.auth_revoked.principal, sizeof env.msg.auth_revoked.principal, "%s", principal);
	int r = kp_ipc_send(p->ipc, &env, NULL, 0, NULL, 0);
	if (r < 0)
		kp_warn("auth: revocation of %s not sent to webd: %s; its cached answers expire within 10 s", principal,
			strerror(-r));
}

static void refuse(kp_AuthReply *rep, const char *error, uint32_t retry_after_ms)
{
	rep->ok = false;
	snprintf(rep->error, sizeof rep->error, "%s", error);
	rep->retry_after_ms = retry_after_ms;
}

static void login_finish(struct job *j)
{
	struct supervisor *s = j->s;
	uint64_t now = kp_mono_ms();
	kp_AuthReply rep = kp_AuthReply_init_zero;
	rep.id = j->id;
	char u[AUTH_NAME_MAX + 1], a[64];
	printable(j->user, u, sizeof u);
	printable(j->addr, a, sizeof a);
	/* The user may have been deleted or given a new password while we hashed. */
	const struct auth_user *user = auth_store_user(&store, j->user);
	bool ok = j->result == 0 && j->known_user && user && !strcmp(user->hash, j->hash);
	struct session *se = NULL;
	if (ok) {
		int r = session_new(user->name, now, rep.session, sizeof rep.session, &se);
		if (r < 0) {
			kp_err("auth: login of %s from %s: cannot make a session: %s", u, a, strerror(-r));
			refuse(&rep, "the server could not start a session; try again", 1000);
			reply(s, j->webd_pid, &rep);
			return;
		}
		slow_forgive(j->addr, now);
		rep.ok = true;
		snprintf(rep.principal, sizeof rep.principal, "%s", user->name);
		rep.role = user->role;
		rep.expires_ms = session_expires(se, now);
		kp_info("auth: %s logged in from %s", u, a);
	} else {
		if (j->result != 0 && j->result != -EACCES)
			kp_err("auth: login of %s from %s: checking the password failed: %s", u, a,
			       strerror(-j->result));
		refuse(&rep, "wrong user name or password", slow_remaining(j->addr, now));
		kp_notice("auth: failed login for %s from %s", u, a);
	}
	reply(s, j->webd_pid, &rep);
}

static void login(struct supervisor *s, struct proc *p, const kp_AuthRequest *req, kp_AuthReply *rep)
{
	uint64_t now = kp_mono_ms();
	uint32_t wait = slow_remaining(req->client_addr, now);
	if (wait) {
		char msg[sizeof rep->error];
		snprintf(msg, sizeof msg, "too many failed logins from this address; try again in %u s",
			 (wait + 999) / 1000);
		refuse(rep, msg, wait);
		reply(s, p->pid, rep);
		return;
	}
	slow_failure(req->client_addr, now);
	const struct auth_user *user = auth_store_user(&store, req->user);
	if (!req->user[0] || !req->secret[0]) {
		refuse(rep, "wrong user name or password", slow_remaining(req->client_addr, now));
		reply(s, p->pid, rep);
		return;
	}
	struct job *j = calloc(1, sizeof *j);
	if (!j) {
		refuse(rep, "the server is out of memory; try again", 1000);
		rep->busy = true;
		reply(s, p->pid, rep);
		return;
	}
	j->verify = true;
	j->len = strlen(req->secret);
	memcpy(j->password, req->secret, j->len);
	snprintf(j->hash, sizeof j->hash, "%s", user ? user->hash : dummy_hash);
	j->finish = login_finish;
	j->id = req->id;
	j->webd_pid = p->pid;
	snprintf(j->user, sizeof j->user, "%s", req->user);
	snprintf(j->addr, sizeof j->addr, "%s", req->client_addr);
	j->known_user = user != NULL;
	if (job_submit(s, j) < 0) {
		kp_warn("auth: %d logins are waiting for password checks; refusing one", HASH_QUEUE_MAX);
		refuse(rep, "the server is busy checking other logins; try again", 1000);
		rep->busy = true;
		reply(s, p->pid, rep);
	}
}

void auth_on_request(struct supervisor *s, struct proc *p, const kp_AuthRequest *req)
{
	kp_AuthReply rep = kp_AuthReply_init_zero;
	rep.id = req->id;
	uint64_t now = kp_mono_ms();
	switch (req->kind) {
	case kp_AuthKind_AUTH_LOGIN:
		login(s, p, req, &rep);
		return;
	case kp_AuthKind_AUTH_SESSION: {
		struct session *se = session_find(req->secret, now);
		const struct auth_user *user = se ? auth_store_user(&store, se->user) : NULL;
		if (!user) {
			refuse(&rep, "not logged in, or the session has expired", 0);
			break;
		}
		se->used_ms = now;
		rep.ok = true;
		snprintf(rep.principal, sizeof rep.principal, "%s", user->name);
		rep.role = user->role;
		rep.expires_ms = session_expires(se, now);
		break;
	}
	case kp_AuthKind_AUTH_TOKEN: {
		const struct auth_token *t = auth_store_token_match(&store, req->secret);
		if (!t) {
			refuse(&rep, "unknown or revoked API token", 0);
			break;
		}
		rep.ok = true;
		snprintf(rep.principal, sizeof rep.principal, "token:%s", t->name);
		rep.role = t->role;
		break;
	}
	case kp_AuthKind_AUTH_LOGOUT: {
		struct session *se = session_find(req->secret, now);
		if (se) {
			kp_info("auth: %s logged out", se->user);
			memset(se, 0, sizeof *se);
		}
		rep.ok = true;
		break;
	}
	default:
		refuse(&rep, "unknown kind of authentication request", 0);
		break;
	}
	reply(s, p->pid, &rep);
}

/* ---- start ---- */

static int demo_admin(const struct supervisor *s)
{
	char password[AUTH_SECRET_STRMAX], hash[AUTH_HASH_STR_MAX];
	int r = auth_random_string("", password, sizeof password);
	if (r == 0)
		password[22] = '\0'; /* 132 random bits are plenty and easier to type */
	if (r == 0)
		r = auth_hash_password(password, strlen(password), hash, sizeof hash);
	if (r == 0)
		r = auth_store_user_add(&store, "admin", kp_Role_ROLE_ADMIN, hash);
	if (r < 0) {
		kp_err("demo: cannot create the user admin in %s: %s", store.dir, strerror(-r));
		return r;
	}
	printf("\nKeepPeek demo: log in as user \"admin\" with password %s\n"
	       "(printed once; keeppeekctl -s %s/control.sock user passwd admin sets another)\n\n",
	       password, s->cfg.run_dir.val);
	fflush(stdout);
	OPENSSL_cleanse(password, sizeof password);
	kp_notice("demo: created the user admin; its password was printed on standard output");
	return 0;
}

int auth_init(struct supervisor *s)
{
	char err[4400] = "";
	int r = auth_store_open(&store, s->cfg.data_dir.val, err, sizeof err);
	if (r < 0) {
		kp_err("auth: %s", err[0] ? err : strerror(-r));
		return r;
	}
	/* Not a hash of a password: scrypt here took 150-230 ms of every start (issue 16). */
	r = auth_hash_unmatchable(dummy_hash, sizeof dummy_hash);
	if (r < 0) {
		kp_err("auth: cannot make the hash checked for unknown users (OpenSSL RAND_bytes): %s", strerror(-r));
		return r;
	}
	kp_info("auth: %u users and %u API tokens in %s", store.nusers, store.ntokens, store.dir);
	if (s->demo && store.nusers == 0)
		return demo_admin(s);
	return 0;
}
