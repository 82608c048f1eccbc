/* The control socket (run_dir/control.sock, mode 0660, group keeppeek; 0600 root-only
 * when the workers fall back to nobody): accepts at most
 * KP_CONTROL_MAX_CLIENTS keeppeekctl connections, reads framed ControlRequests, runs
 * each with the function handed to control_open (control_cmds.c's control_run) and
 * answers with a ControlReply whose raw tail is the output: at once, or later
 * (control_answer) for questions relayed to a worker. */
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "kp_limits.h"
#include "log.h"
#include "supervisor.h"

#define CONTROL_OUT_MAX (256 * 1024)

struct control_client {
	struct control *ctl;
	struct kp_ipc *ipc;
	uint64_t serial; /* which connection holds this slot: tickets name it */
	struct ucred cred;
};

struct control {
	struct supervisor *s;
	control_run_fn run;
	int fd;
	uv_poll_t poll;
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	struct control_client clients[KP_CONTROL_MAX_CLIENTS];
	uint64_t next_serial;
	uint64_t refused_busy;   /* all KP_CONTROL_MAX_CLIENTS slots taken */
	uint64_t refused_worker; /* a worker's process or uid (or credentials unreadable) */
};

static int reply(struct kp_ipc *c, int code, const void *out, size_t len)
{
	kp_Envelope env = kp_Envelope_init_zero;
	env.which_msg = kp_Envelope_control_reply_tag;
	env.msg.control_reply.exit_code = code;
	return kp_ipc_send(c, &env, out, len, NULL, 0);
}

static const struct kp_ipc_limits client_limits = {
    .from = kp_Peer_PEER_CONTROL,
    .to = kp_Peer_PEER_SUPERVISOR,
    .max_tail = 0,
    .queue_items = 4,
    /* Relayed answers (check, events search) may be as large as the control tail. */
    .queue_bytes = KP_IPC_TAIL_MAX_CONTROL + 64 * 1024,
};

static void on_client_error(struct kp_ipc *c, int err, const char *reason, void *arg)
{
	struct control_client *cl = arg;
	if (err != -EPIPE)
		kp_warn("control client: closing: %s", reason);
	kp_ipc_destroy(c);
	cl->ipc = NULL;
}

static void on_client_frame(struct kp_ipc *c, struct kp_ipc_frame *f, void *arg)
{
	struct control_client *cl = arg;
	static char out[CONTROL_OUT_MAX];
	out[0] = '\0';
	uint64_t ticket = cl->serial * KP_CONTROL_MAX_CLIENTS + (uint64_t)(cl - cl->ctl->clients);
	struct control_extra x = {.fds = f->fds, .nfds = f->nfds, .uid = cl->cred.uid, .gid = cl->cred.gid};
	int code = cl->ctl->run(cl->ctl->s, &f->env->msg.control_request, &x, out, sizeof out, ticket);
	if (code == CONTROL_PENDING)
		return;
	int r = reply(c, code, out, strlen(out));
	if (r < 0)
		kp_warn("control client: reply failed: %s", strerror(-r));
}

/* Workers must not command the supervisor (create users or tokens, restart peers): the
 * socket is group-accessible and Landlock does not govern connect(2), so a client whose
 * credentials are a worker's process or (when workers run as another user) a worker's
 * uid is refused. */
static bool from_worker(const struct supervisor *s, int fd, struct ucred *ret_cred)
{
	struct ucred cred;
	socklen_t len = sizeof cred;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0) {
		kp_warn("control socket: cannot read the client's credentials: %s", strerror(errno));
		return true;
	}
	*ret_cred = cred;
	if (s->change_uid && cred.uid == s->uid) {
		kp_warn("control socket: refusing pid %d: it runs as the workers' uid %u", (int)cred.pid,
			(unsigned)cred.uid);
		return true;
	}
	for (unsigned i = 0; i < KP_NPROCS; i++)
		if (s->procs[i].pid > 0 && s->procs[i].pid == cred.pid) {
			kp_warn("control socket: refusing %s (pid %d): workers may not use it", s->procs[i].name,
				(int)cred.pid);
			return true;
		}
	return false;
}

static void on_accept(uv_poll_t *h, int status, int events)
{
	struct control *ctl = h->data;
	(void)events;
	if (status < 0)
		return;
	for (;;) {
		int fd = accept4(ctl->fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (fd < 0) {
			if (errno != EAGAIN && errno != EINTR)
				kp_warn("control socket: accept failed: %s", strerror(errno));
			return;
		}
		struct ucred cred;
		if (from_worker(ctl->s, fd, &cred)) {
			ctl->refused_worker++;
			close(fd);
			continue;
		}
		struct control_client *slot = NULL;
		for (unsigned i = 0; i < KP_CONTROL_MAX_CLIENTS && !slot; i++)
			if (!ctl->clients[i].ipc)
				slot = &ctl->clients[i];
		if (!slot) {
			ctl->refused_busy++;
			kp_warn("control socket: refusing a client: %d already connected", KP_CONTROL_MAX_CLIENTS);
			close(fd);
			continue;
		}
		slot->ctl = ctl;
		slot->serial = ++ctl->next_serial;
		slot->cred = cred;
		int r =
		    kp_ipc_open(ctl->s->loop, fd, &client_limits, on_client_frame, on_client_error, slot, &slot->ipc);
		if (r < 0) {
			kp_warn("control socket: cannot serve a client: %s", strerror(-r));
			close(fd);
		}
	}
}

void control_refused(const struct supervisor *s, uint64_t *ret_busy, uint64_t *ret_worker)
{
	*ret_busy = s->control ? s->control->refused_busy : 0;
	*ret_worker = s->control ? s->control->refused_worker : 0;
}

int control_answer(struct supervisor *s, uint64_t ticket, int code, const void *out, size_t len)
{
	struct control *ctl = s->control;
	if (!ctl)
		return -ESHUTDOWN;
	struct control_client *cl = &ctl->clients[ticket % KP_CONTROL_MAX_CLIENTS];
	if (!cl->ipc || cl->serial != ticket / KP_CONTROL_MAX_CLIENTS)
		return -ENOENT; /* that client has gone */
	return reply(cl->ipc, code, out, len);
}

/* A socket file left by a dead keeppeekd is removed; a live one means we must not start. */
static int claim_path(const char *path, char *err, size_t errlen)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	int r = connect(fd, (struct sockaddr *)&sa, sizeof sa);
	int e = errno;
	close(fd);
	if (r == 0) {
		snprintf(err, errlen, "another keeppeekd is listening on %s", path);
		return -EADDRINUSE;
	}
	if (e == ECONNREFUSED)
		unlink(path);
	return 0;
}

int control_open(struct supervisor *s, const char *path, control_run_fn run, char *err, size_t errlen)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	if (strlen(path) >= sizeof sa.sun_path) {
		snprintf(err, errlen, "control socket path too long: %s", path);
		return -ENAMETOOLONG;
	}
	int r = claim_path(path, err, errlen);
	if (r < 0)
		return r;
	struct control *ctl = calloc(1, sizeof *ctl);
	if (!ctl)
		return -ENOMEM;
	ctl->s = s;
	ctl->run = run;
	snprintf(ctl->path, sizeof ctl->path, "%s", path);
	snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path);
	ctl->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (ctl->fd < 0) {
		r = -errno;
		goto out_free;
	}
	mode_t old = umask(0117);
	r = bind(ctl->fd, (struct sockaddr *)&sa, sizeof sa);
	umask(old);
	if (r < 0) {
		r = -errno;
		snprintf(err, errlen, "cannot bind %s: %s", path, strerror(-r));
		goto out_close;
	}
	/* Group access only for a dedicated group (the package's keeppeek): nogroup, which
	 * the nobody fallback would give, is shared by unrelated daemons. */
	bool group = !s->change_uid || s->control_group;
	if (chmod(path, group ? 0660 : 0600) < 0 || (s->change_uid && s->control_group && chown(path, 0, s->gid) < 0)) {
		r = -errno;
		snprintf(err, errlen, "cannot set the mode of %s: %s", path, strerror(-r));
		goto out_unlink;
	}
	if (listen(ctl->fd, KP_CONTROL_MAX_CLIENTS) < 0) {
		r = -errno;
		snprintf(err, errlen, "cannot listen on %s: %s", path, strerror(-r));
		goto out_unlink;
	}
	uv_poll_init(s->loop, &ctl->poll, ctl->fd);
	ctl->poll.data = ctl;
	uv_poll_start(&ctl->poll, UV_READABLE, on_accept);
	s->control = ctl;
	return 0;

out_unlink:
	unlink(path);
out_close:
	close(ctl->fd);
out_free:
	free(ctl);
	return r;
}

static void on_poll_closed(uv_handle_t *h)
{
	struct control *ctl = h->data;
	close(ctl->fd);
	free(ctl);
}

void control_close(struct supervisor *s)
{
	struct control *ctl = s->control;
	if (!ctl)
		return;
	for (unsigned i = 0; i < KP_CONTROL_MAX_CLIENTS; i++)
		kp_ipc_destroy(ctl->clients[i].ipc);
	unlink(ctl->path);
	uv_close((uv_handle_t *)&ctl->poll, on_poll_closed);
	s->control = NULL;
}
