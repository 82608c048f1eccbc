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
/* keeppeekctl's user-* and token-* commands: an exit code, or CONTROL_PENDING while a
 * password is hashed (answered later through control_answer with ticket). */
int auth_control(struct supervisor *s, const kp_ControlRequest *req, struct kp_out *o, uint64_t ticket);

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
