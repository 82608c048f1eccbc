/* Authentication in the supervisor (the process with no network listener): answers
 * webd's AuthRequests (login, session, token, logout) with AuthReplies, keeps the browser
 * sessions in memory, slows repeated failed logins per client address, and runs the
 * keeppeekctl user and token commands. docs/auth.md. */
#ifndef KP_AUTH_H
#define KP_AUTH_H

#include <stdint.h>

#include "supervisor.h"

/* Opens the credential store under data_dir/auth; in demo mode creates the user admin
 * with a random password printed once on stdout when there is no user yet. */
int auth_init(struct supervisor *s);
/* An AuthRequest from webd (proc.c accepts it from webd only). */
void auth_on_request(struct supervisor *s, struct proc *p, const kp_AuthRequest *req);
/* Who asked for a user-* or token-* command, for an answer that comes later (a password
 * being hashed): keeppeekctl's request (ticket), or webd's question id on its link. */
struct auth_asker {
	uint64_t ticket;
	struct proc *webd; /* NULL: keeppeekctl */
	uint32_t id;
};

/* The user-* and token-* commands of keeppeekctl and of webd's admins: an exit code
 * (0 ok, 1 failure, 2 usage) with the text in o, or CONTROL_PENDING while a password is
 * hashed (answered later to asker: control_answer, or auth_web_answer). */
int auth_control(struct supervisor *s, const kp_ControlRequest *req, struct kp_out *o, const struct auth_asker *asker);
/* An answer to webd's question: exit code 0 as 200 (text that is JSON as it is, other
 * text as {"message"}), 2 as 400, 1 as 409 with the text as the message. */
void auth_web_answer(struct proc *webd, uint32_t id, int code, const char *text, size_t len);

/* ---- between auth.c and auth_ctl.c ---- */
#define AUTH_PASSWORD_MIN 8
#define AUTH_PASSWORD_MAX 1023

struct auth_store;
struct auth_store *auth_store_get(void);
/* Ends every session of user; returns how many. */
unsigned auth_end_sessions(const char *user);
/* Tells webd that principal's credentials are gone: it drops its cached answers and
 * closes that principal's WebSockets (and with them its WebRTC sessions) at once. */
void auth_revoked(struct supervisor *s, const char *principal);
/* Hashes password on a libuv pool thread (at most a few at once, a bounded queue
 * beyond); done runs on the loop with 0 and the encoded hash, or a negative errno
 * (-EBUSY when the queue is full). */
typedef void (*auth_hash_cb)(struct supervisor *s, void *arg, int result, const char *hash);
int auth_hash_async(struct supervisor *s, const char *password, size_t len, auth_hash_cb done, void *arg);

#endif
