/* The privsep engine: each process of the table handed in (workers.c) is spawned
 * (posix_spawn, proc_spawn.c, with its channel on fd 3) under its own uid, has every frame it sends
 * handed to its row's dispatch, is killed when it stops answering, restarted alone with
 * exponential backoff when it exits (SPEC section 1), and stopped in order with the
 * rest. A row marked on_demand (the transcoder; tierd unless its row wants it) is not started with the rest but by
 * proc_start, and proc_stop ends it for good. It knows no message kind and no other module of the supervisor: what to
 * send a worker, and what else to start or close, are the hooks handed in. */
#include <errno.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "kp_build_config.h"
#include "kp_limits.h"
#include "kp_time.h"
#include "log.h"
#include "self_path.h"
#include "proc_spawn.h"
#include "supervisor.h"

static const struct kp_ipc_limits worker_limits = {
    .to = kp_Peer_PEER_SUPERVISOR,
    .max_tail = KP_IPC_TAIL_MAX_SUPERVISOR,
    .queue_items = KP_IPC_QUEUE_ITEMS_SUPERVISOR,
    .queue_bytes = KP_IPC_QUEUE_BYTES_SUPERVISOR,
};

const char *proc_state_name(enum proc_state st)
{
	switch (st) {
	case PROC_STOPPED:
		return "stopped";
	case PROC_STARTING:
		return "starting";
	case PROC_RUNNING:
		return "running";
	case PROC_BACKOFF:
		return "backoff";
	case PROC_STOPPING:
		return "stopping";
	}
	return "?";
}

static int built_tree(char *dir, size_t len)
{
	char self[4096];
	if (kp_self_dir(self, sizeof self) < 0)
		return 0;
	snprintf(dir, len, "%s", self);
	return KP_BUILD_TREE_RUNS && strcmp(self, KP_BUILD_ROOT "/supervisor") == 0;
}

/* Each worker its own uid where the package made one (keeppeek-ingestd, -webd, -rtcd), so
 * that one taken over cannot read another's memory or files; a row without own_user
 * (recorderd) runs as the configured user, which owns data_dir. Without those users (a
 * build-tree run, the nobody fallback) every worker runs as the configured user. */
static void assign_user(struct proc *p)
{
	struct supervisor *s = p->s;
	p->uid = s->uid;
	p->gid = s->gid;
	if (!s->change_uid || !s->control_group || !p->def->own_user)
		return;
	char name[64];
	snprintf(name, sizeof name, "%s-%s", s->cfg.user.val, p->name);
	struct passwd *pw = getpwnam(name);
	if (!pw) {
		kp_notice("%s runs as %s: no user %s (the package creates it)", p->name, s->cfg.user.val, name);
		return;
	}
	if (pw->pw_uid == 0 || pw->pw_gid == 0) {
		kp_warn("%s runs as %s: user %s is privileged", p->name, s->cfg.user.val, name);
		return;
	}
	p->uid = pw->pw_uid;
	p->gid = pw->pw_gid;
}

void proc_table_init(struct supervisor *s, const char *libexec_dir, const struct proc_def defs[KP_NPROCS],
		     const struct proc_hooks *hooks)
{
	char dir[4096];
	int in_tree = built_tree(dir, sizeof dir);
	s->hooks = hooks;
	for (unsigned i = 0; i < KP_NPROCS; i++) {
		struct proc *p = &s->procs[i];
		memset(p, 0, sizeof *p);
		p->s = s;
		p->def = &defs[i];
		p->name = defs[i].name;
		p->peer = defs[i].peer;
		if (libexec_dir)
			snprintf(p->path, sizeof p->path, "%s/keeppeek-%s", libexec_dir, p->name);
		else if (in_tree)
			snprintf(p->path, sizeof p->path, "%s/%s/keeppeek-%s", KP_BUILD_ROOT, p->name, p->name);
		else
			snprintf(p->path, sizeof p->path, "%s/keeppeek-%s", KP_LIBEXECDIR, p->name);
		uv_timer_init(s->loop, &p->timer);
		p->timer.data = p;
		assign_user(p);
	}
}

struct proc *proc_by_name(struct supervisor *s, const char *name)
{
	for (unsigned i = 0; i < KP_NPROCS; i++)
		if (!strcmp(s->procs[i].name, name))
			return &s->procs[i];
	return NULL;
}

struct proc *proc_by_peer(struct supervisor *s, kp_Peer peer)
{
	for (unsigned i = 0; i < KP_NPROCS; i++)
		if (s->procs[i].peer == peer)
			return &s->procs[i];
	return NULL;
}

/* kill(2) to a worker. A failure is logged with what it means: keeppeekd runs as root
 * and the workers under their own uid, so signalling them needs CAP_KILL; without it a
 * worker that must be restarted or stopped would be left as it is without a word.
 * EPERM is said once per worker until a signal goes through again. */
static int proc_signal(struct proc *p, int sig, const char *why)
{
	if (p->pid <= 0)
		return -ESRCH;
	if (kill(p->pid, sig) == 0) {
		p->kill_denied = false;
		return 0;
	}
	int e = errno;
	if (e == EPERM && !p->kill_denied)
		kp_err("%s (pid %d): cannot send it %s to %s: %s; keeppeekd lacks CAP_KILL over the workers' uid %u "
		       "(the service's CapabilityBoundingSet must keep CAP_KILL), so it cannot stop or restart "
		       "workers",
		       p->name, (int)p->pid, sigabbrev_np(sig), why, strerror(e), (unsigned)p->uid);
	else if (e != EPERM && e != ESRCH)
		kp_err("%s (pid %d): cannot send it %s to %s: %s", p->name, (int)p->pid, sigabbrev_np(sig), why,
		       strerror(e));
	p->kill_denied = e == EPERM;
	return -e;
}

void proc_heard(struct proc *p)
{
	p->last_reply_ms = kp_mono_ms();
}

bool proc_ready(struct proc *p)
{
	if (p->state != PROC_STARTING)
		return false;
	p->state = PROC_RUNNING;
	p->ready_ms = kp_mono_ms();
	kp_info("%s running (pid %d)", p->name, (int)p->pid);
	return true;
}

static void on_worker_frame(struct kp_ipc *c, struct kp_ipc_frame *f, void *arg)
{
	struct proc *p = arg;
	(void)c;
	p->def->dispatch(p, f);
}

static void on_worker_error(struct kp_ipc *c, int err, const char *reason, void *arg)
{
	struct proc *p = arg;
	(void)err;
	if (p->state != PROC_STOPPING && !p->s->stopping)
		kp_warn("%s (pid %d): channel closed: %s", p->name, (int)p->pid, reason);
	kp_ipc_destroy(c);
	p->ipc = NULL;
	/* A worker whose channel broke cannot be supervised: end it; on_exit restarts it.
	 * A worker that is stopping closes its channel on its way out. Either way it is
	 * going, and no new link is made to it. */
	if (p->pid > 0 && p->state != PROC_STOPPING && !p->s->stopping && !p->restart_now)
		proc_signal(p, SIGKILL, "replace it (its channel broke)");
	if (p->pid > 0)
		p->state = PROC_STOPPING;
}

static void schedule_restart(struct proc *p);
static int proc_spawn(struct proc *p);

static void describe_exit(char *buf, size_t len, int64_t status, int sig)
{
	if (sig)
		snprintf(buf, len, "killed by signal %d (%s)", sig, strsignal(sig));
	else
		snprintf(buf, len, "exited with status %lld", (long long)status);
}

static void on_exit_cb(struct kp_child *c, int64_t status, int term_signal)
{
	struct proc *p = c->data;
	struct supervisor *s = p->s;
	uint64_t now = kp_mono_ms();
	describe_exit(p->last_exit, sizeof p->last_exit, status, term_signal);
	bool was_running = p->ready_ms != 0;
	kp_ipc_destroy(p->ipc);
	p->ipc = NULL;
	p->pid = 0;
	s->hooks->exited(p);
	if (s->stopping) {
		p->state = PROC_STOPPED;
		kp_info("%s stopped: %s", p->name, p->last_exit);
		proc_stop_all(s);
		return;
	}
	if (p->stop_wanted) {
		p->stop_wanted = false;
		p->state = PROC_STOPPED;
		kp_info("%s stopped as nobody needs it: %s", p->name, p->last_exit);
		if (p->start_again) {
			p->start_again = false;
			if (proc_spawn(p) < 0)
				schedule_restart(p);
		}
		return;
	}
	if (was_running && now - p->ready_ms >= KP_BACKOFF_RESET_MS)
		p->quick_failures = 0;
	p->restarts++;
	if (p->restart_now) {
		p->restart_now = false;
		p->quick_failures = 0;
		kp_info("%s %s; restarting as asked", p->name, p->last_exit);
		if (proc_spawn(p) < 0)
			schedule_restart(p);
		return;
	}
	kp_warn("%s (restart %u) %s", p->name, p->restarts, p->last_exit);
	schedule_restart(p);
}

static void on_restart_timer(uv_timer_t *t)
{
	struct proc *p = t->data;
	if (p->s->stopping || p->state != PROC_BACKOFF)
		return;
	if (proc_spawn(p) < 0)
		schedule_restart(p);
}

static void schedule_restart(struct proc *p)
{
	unsigned shift = p->quick_failures < 9 ? p->quick_failures : 9;
	uint64_t delay = (uint64_t)KP_BACKOFF_INITIAL_MS << shift;
	if (delay > KP_BACKOFF_MAX_MS)
		delay = KP_BACKOFF_MAX_MS;
	p->quick_failures++;
	p->state = PROC_BACKOFF;
	proc_start_rest(p->s); /* a first row that failed holds nobody back */
	p->backoff_until_ms = kp_mono_ms() + delay;
	if (delay > KP_BACKOFF_INITIAL_MS)
		kp_warn("%s: restarting in %llu ms (%u failures in a row)", p->name, (unsigned long long)delay,
			p->quick_failures);
	uv_timer_start(&p->timer, on_restart_timer, delay, 0);
}

static int proc_spawn(struct proc *p)
{
	struct supervisor *s = p->s;
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
		snprintf(p->last_exit, sizeof p->last_exit, "socketpair: %s", strerror(errno));
		kp_err("%s: socketpair failed: %s", p->name, strerror(errno));
		return -errno;
	}
	p->child = (struct kp_child){.on_exit = on_exit_cb, .data = p};
	int r = kp_spawn(&p->child, p->path, sv[1]);
	close(sv[1]);
	if (r < 0) {
		close(sv[0]);
		snprintf(p->last_exit, sizeof p->last_exit, "cannot start: %s", strerror(-r));
		kp_err("%s: starting %s failed: %s", p->name, p->path, strerror(-r));
		return r;
	}
	p->pid = p->child.pid;
	p->state = PROC_STARTING;
	p->spawned_ms = p->last_reply_ms = kp_mono_ms();
	p->ready_ms = 0;
	memset(&p->health, 0, sizeof p->health);
	struct kp_ipc_limits lim = worker_limits;
	lim.from = p->peer;
	r = kp_ipc_open(s->loop, sv[0], &lim, on_worker_frame, on_worker_error, p, &p->ipc);
	if (r < 0) {
		close(sv[0]);
		kp_err("%s: opening its channel failed: %s", p->name, strerror(-r));
		proc_signal(p, SIGKILL, "replace it (no channel)");
		return 0;
	}
	kp_info("%s started (pid %d)", p->name, (int)p->pid);
	s->hooks->spawned(p);
	return 0;
}

static void on_health_timer(uv_timer_t *t)
{
	struct supervisor *s = t->data;
	uint64_t now = kp_mono_ms();
	for (unsigned i = 0; i < KP_NPROCS; i++) {
		struct proc *p = &s->procs[i];
		if ((p->state != PROC_RUNNING && p->state != PROC_STARTING) || p->pid <= 0)
			continue;
		if (now - p->last_reply_ms > KP_HEALTH_DEADLINE_MS) {
			if (!p->kill_denied)
				kp_err("%s (pid %d): no reply for %llu ms; killing it", p->name, (int)p->pid,
				       (unsigned long long)(now - p->last_reply_ms));
			proc_signal(p, SIGKILL, "restart it (no health reply)");
			continue;
		}
		if (p->state == PROC_RUNNING && p->ipc)
			s->hooks->ping(p);
	}
}

void proc_start_all(struct supervisor *s)
{
	uv_timer_init(s->loop, &s->health_timer);
	s->health_timer.data = s;
	uv_timer_start(&s->health_timer, on_health_timer, KP_HEALTH_INTERVAL_MS, KP_HEALTH_INTERVAL_MS);
	s->rest_waiting = true;
	for (unsigned i = 0; i < KP_NPROCS; i++)
		if (s->procs[i].def->first && proc_spawn(&s->procs[i]) < 0)
			schedule_restart(&s->procs[i]);
	proc_start_rest(s);
}

/* Two cores are not shared with their start (loading libraries) while webd and recorderd
 * start; the transcoder (on demand) is not among them. */
void proc_start_rest(struct supervisor *s)
{
	if (!s->rest_waiting || s->stopping)
		return;
	for (unsigned i = 0; i < KP_NPROCS; i++)
		if (s->procs[i].def->first && s->procs[i].state == PROC_STARTING)
			return;
	s->rest_waiting = false;
	for (unsigned i = 0; i < KP_NPROCS; i++)
		if (!s->procs[i].def->first &&
		    (!s->procs[i].def->on_demand || (s->procs[i].def->wanted && s->procs[i].def->wanted(s))) &&
		    proc_spawn(&s->procs[i]) < 0)
			schedule_restart(&s->procs[i]);
}

int proc_start(struct proc *p)
{
	if (p->s->stopping)
		return -ESHUTDOWN;
	if (p->stop_wanted) {
		p->start_again = true; /* wanted again while it stops: started once it has exited */
		return 0;
	}
	if (p->state != PROC_STOPPED)
		return 0; /* starting, running, in backoff (restarted soon) or stopping (restarted on exit) */
	int r = proc_spawn(p);
	if (r < 0)
		schedule_restart(p);
	return r;
}

void proc_stop(struct proc *p, const char *why)
{
	if (p->s->stopping)
		return;
	if (p->state == PROC_BACKOFF) {
		uv_timer_stop(&p->timer);
		p->state = PROC_STOPPED;
		return;
	}
	if (p->pid <= 0 || p->state == PROC_STOPPED)
		return;
	kp_info("%s (pid %d): stopping it: %s", p->name, (int)p->pid, why);
	p->stop_wanted = true;
	p->start_again = false;
	p->restart_now = false;
	p->state = PROC_STOPPING;
	if (!p->ipc || p->s->hooks->ask_stop(p) < 0)
		proc_signal(p, SIGTERM, "stop it");
}

bool proc_expected(const struct proc *p)
{
	return !p->def->on_demand || (p->state != PROC_STOPPED && !p->stop_wanted);
}

int proc_restart(struct proc *p)
{
	if (p->s->stopping)
		return -ESHUTDOWN;
	if (p->state == PROC_BACKOFF) {
		uv_timer_stop(&p->timer);
		p->quick_failures = 0;
		return proc_spawn(p);
	}
	if (p->pid <= 0)
		return -ESRCH;
	kp_info("%s (pid %d): restart requested", p->name, (int)p->pid);
	int r = proc_signal(p, SIGTERM, "restart it as asked");
	if (r < 0)
		return r;
	p->restart_now = true;
	p->state = PROC_STOPPING;
	return 0;
}

static void on_stop_timer(uv_timer_t *t)
{
	struct supervisor *s = t->data;
	for (unsigned i = 0; i < KP_NPROCS; i++) {
		struct proc *p = &s->procs[i];
		if (p->pid > 0) {
			kp_warn("%s (pid %d) did not stop in %d ms; killing it", p->name, (int)p->pid,
				KP_STOP_GRACE_MS);
			proc_signal(p, SIGKILL, "stop it");
		}
	}
	s->hooks->others_running(s, SIGKILL);
}

static void close_all_handles(struct supervisor *s)
{
	uv_close((uv_handle_t *)&s->health_timer, NULL);
	uv_close((uv_handle_t *)&s->stop_timer, NULL);
	for (unsigned i = 0; i < KP_NPROCS; i++)
		uv_close((uv_handle_t *)&s->procs[i].timer, NULL);
	s->hooks->stopped(s);
}

/* Called on SIGTERM and again as each worker exits; finishes when none is left. */
void proc_stop_all(struct supervisor *s)
{
	if (!s->stopping) {
		s->stopping = true;
		kp_info("stopping all workers");
		s->hooks->stopping(s);
		uv_timer_init(s->loop, &s->stop_timer);
		s->stop_timer.data = s;
		uv_timer_start(&s->stop_timer, on_stop_timer, KP_STOP_GRACE_MS, 0);
		for (unsigned i = 0; i < KP_NPROCS; i++) {
			struct proc *p = &s->procs[i];
			uv_timer_stop(&p->timer);
			if (p->pid <= 0) {
				p->state = PROC_STOPPED;
				continue;
			}
			p->state = PROC_STOPPING;
			if (!p->ipc || s->hooks->ask_stop(p) < 0)
				proc_signal(p, SIGTERM, "stop it");
		}
	}
	if (s->hooks->others_running(s, SIGTERM))
		return;
	for (unsigned i = 0; i < KP_NPROCS; i++)
		if (s->procs[i].pid > 0)
			return;
	kp_info("all workers stopped");
	close_all_handles(s);
}
