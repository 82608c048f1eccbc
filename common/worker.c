/* The shared worker runtime: supervisor channel, confinement at the configuration
 * barrier, peer links (replaced whenever the supervisor hands a new generation), health
 * replies, reload and shutdown. Unlike the rest of common/, this is a program's main loop
 * and logs what it does. */
#include "worker.h"

#include <errno.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kp_build_config.h"
#include "kp_limits.h"
#include "log.h"
#include "sandbox.h"

struct peer_link {
	struct kp_worker *w;
	kp_Peer peer;
	uint32_t generation;
	struct kp_ipc *ipc;
	int hello_seen;
};

struct kp_worker {
	const struct kp_worker_def *def;
	uv_loop_t *loop;
	struct kp_ipc *sup;
	kp_WorkerConfig config;
	int config_fds[KP_IPC_MAX_FDS]; /* handed over with the WorkerConfig (webd's listeners) */
	unsigned nconfig_fds;
	int confined;
	pid_t parent;
	struct peer_link links[KP_WORKER_MAX_PEERS];
	uv_signal_t sigterm;
	int exit_code;
	int stopping;
};

static const struct kp_ipc_limits supervisor_limits = {
    .from = kp_Peer_PEER_SUPERVISOR,
    .max_tail = KP_IPC_TAIL_MAX_SUPERVISOR,
    .queue_items = KP_IPC_QUEUE_ITEMS_SUPERVISOR,
    .queue_bytes = KP_IPC_QUEUE_BYTES_SUPERVISOR,
};

static const struct kp_ipc_limits peer_limits = {
    .max_tail = KP_IPC_TAIL_MAX_PEER,
    .queue_items = KP_IPC_QUEUE_ITEMS_PEER,
    .queue_bytes = KP_IPC_QUEUE_BYTES_PEER,
};

#if KP_SANDBOX_SANITIZED
/* LeakSanitizer stops the world with a ptrace-ing helper task that the seccomp filter
 * kills, leaving the exiting worker spinning. Workers therefore skip the leak check in
 * sanitizer builds; ASan and UBSan stay on, and the unit tests and the (unsandboxed)
 * supervisor keep their leak checks. */
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
	return "detect_leaks=0";
}
#endif

static void stop(struct kp_worker *w, int code)
{
	if (w->stopping)
		return;
	w->stopping = 1;
	w->exit_code = code;
	if (w->def->on_stop)
		w->def->on_stop(w);
	for (unsigned i = 0; i < w->def->npeers; i++) {
		kp_ipc_destroy(w->links[i].ipc);
		w->links[i].ipc = NULL;
	}
	kp_ipc_destroy(w->sup);
	w->sup = NULL;
	uv_close((uv_handle_t *)&w->sigterm, NULL);
	uv_stop(w->loop);
}

static void send_to_supervisor(struct kp_worker *w, const kp_Envelope *env)
{
	if (!w->sup)
		return;
	int r = kp_ipc_send(w->sup, env, NULL, 0, NULL, 0);
	if (r < 0)
		kp_err("sending %u to the supervisor failed: %s", (unsigned)env->which_msg, strerror(-r));
}

static struct peer_link *link_for(struct kp_worker *w, kp_Peer peer)
{
	for (unsigned i = 0; i < w->def->npeers; i++)
		if (w->links[i].peer == peer)
			return &w->links[i];
	return NULL;
}

static void on_peer_error(struct kp_ipc *c, int err, const char *reason, void *arg)
{
	struct peer_link *l = arg;
	struct kp_worker *w = l->w;
	(void)err;
	kp_warn("link to %s (generation %u) closed: %s", kp_peer_name(l->peer), (unsigned)l->generation, reason);
	kp_ipc_destroy(c);
	l->ipc = NULL;
	kp_Envelope env = kp_Envelope_init_zero;
	env.which_msg = kp_Envelope_link_lost_tag;
	env.msg.link_lost.peer = l->peer;
	env.msg.link_lost.generation = l->generation;
	snprintf(env.msg.link_lost.reason, sizeof env.msg.link_lost.reason, "%s", reason);
	send_to_supervisor(w, &env);
	if (w->def->on_peer_lost)
		w->def->on_peer_lost(w, l->peer);
}

static void on_peer_frame(struct kp_ipc *c, struct kp_ipc_frame *f, void *arg)
{
	struct peer_link *l = arg;
	(void)c;
	if (f->env->which_msg == kp_Envelope_peer_hello_tag) {
		const kp_PeerHello *h = &f->env->msg.peer_hello;
		if (h->from != l->peer || h->generation != l->generation) {
			on_peer_error(l->ipc, -EPROTO, "hello from an unexpected peer or generation", l);
			return;
		}
		l->hello_seen = 1;
		kp_debug("link to %s (generation %u) up, peer pid %u", kp_peer_name(l->peer), (unsigned)l->generation,
			 (unsigned)h->pid);
		return;
	}
	if (!l->hello_seen) {
		on_peer_error(l->ipc, -EPROTO, "frame before hello", l);
		return;
	}
	if (l->w->def->on_peer_frame)
		l->w->def->on_peer_frame(l->w, l->peer, f);
}

uv_loop_t *kp_worker_loop(struct kp_worker *w)
{
	return w->loop;
}

unsigned kp_worker_config_fds(const struct kp_worker *w, const int **ret)
{
	*ret = w->config_fds;
	return w->nconfig_fds;
}

const kp_WorkerConfig *kp_worker_config(const struct kp_worker *w)
{
	return &w->config;
}

int kp_worker_send_peer(struct kp_worker *w, kp_Peer to, const kp_Envelope *env, const void *tail, size_t len)
{
	struct peer_link *l = link_for(w, to);
	if (!l || !l->ipc)
		return -ENOTCONN;
	return kp_ipc_send(l->ipc, env, tail, len, NULL, 0);
}

int kp_worker_send_peer_msg(struct kp_worker *w, kp_Peer to, const struct kp_frame_msg *m, const void *tail, size_t len)
{
	struct peer_link *l = link_for(w, to);
	if (!l || !l->ipc)
		return -ENOTCONN;
	return kp_ipc_send_msg(l->ipc, m, tail, len, NULL, 0);
}

void kp_worker_cork_peer(struct kp_worker *w, kp_Peer to, int corked)
{
	struct peer_link *l = link_for(w, to);
	if (!l || !l->ipc)
		return;
	if (corked)
		kp_ipc_cork(l->ipc);
	else
		kp_ipc_uncork(l->ipc);
}

int kp_worker_send_peer_fds(struct kp_worker *w, kp_Peer to, const kp_Envelope *env, const void *tail, size_t len,
			    const int *fds, unsigned nfds)
{
	struct peer_link *l = link_for(w, to);
	if (!l || !l->ipc)
		return -ENOTCONN;
	return kp_ipc_send(l->ipc, env, tail, len, fds, nfds);
}

int kp_worker_send_supervisor(struct kp_worker *w, const kp_Envelope *env)
{
	return kp_worker_send_supervisor_tail(w, env, NULL, 0);
}

int kp_worker_send_supervisor_tail(struct kp_worker *w, const kp_Envelope *env, const void *tail, size_t len)
{
	if (!w->sup)
		return -ENOTCONN;
	if (len > KP_IPC_TAIL_MAX_SUPERVISOR)
		return -EMSGSIZE;
	return kp_ipc_send(w->sup, env, tail, len, NULL, 0);
}

static void install_link(struct kp_worker *w, const kp_LinkNew *ln, struct kp_ipc_frame *f)
{
	struct peer_link *l = link_for(w, ln->peer);
	if (!l) {
		kp_err("supervisor offered a link to %s, which is not a peer of %s", kp_peer_name(ln->peer),
		       w->def->name);
		return;
	}
	kp_ipc_destroy(l->ipc);
	l->ipc = NULL;
	l->generation = ln->generation;
	l->hello_seen = 0;
	struct kp_ipc_limits lim = peer_limits;
	lim.from = l->peer;
	lim.to = w->def->self;
	int r = kp_ipc_open(w->loop, f->fds[0], &lim, on_peer_frame, on_peer_error, l, &l->ipc);
	if (r < 0) {
		kp_err("opening link to %s (generation %u) failed: %s", kp_peer_name(l->peer), (unsigned)l->generation,
		       strerror(-r));
		return;
	}
	f->fds[0] = -1;
	kp_Envelope hello = kp_Envelope_init_zero;
	hello.which_msg = kp_Envelope_peer_hello_tag;
	hello.msg.peer_hello.from = w->def->self;
	hello.msg.peer_hello.pid = (uint32_t)getpid();
	hello.msg.peer_hello.generation = l->generation;
	r = kp_ipc_send(l->ipc, &hello, NULL, 0, NULL, 0);
	if (r < 0)
		kp_err("hello to %s failed: %s", kp_peer_name(l->peer), strerror(-r));
	kp_info("link to %s installed (generation %u, fd %d)", kp_peer_name(l->peer), (unsigned)l->generation,
		l->ipc ? kp_ipc_fd(l->ipc) : -1);
	if (l->ipc && w->def->on_peer_linked)
		w->def->on_peer_linked(w, l->peer);
}

/* Threads of this process (/proc/self/status), or 0 when it cannot be read. */
static unsigned thread_count(void)
{
	FILE *f = fopen("/proc/self/status", "re");
	if (!f)
		return 0;
	char line[256];
	unsigned n = 0;
	while (fgets(line, sizeof line, f))
		if (sscanf(line, "Threads: %u", &n) == 1)
			break;
	fclose(f);
	return n;
}

static int confine(struct kp_worker *w)
{
	const struct kp_worker_def *d = w->def;
	unsigned threads = thread_count();
	if (threads > 1) {
		kp_err("confinement refused: %u threads already run, and Landlock would bind only this one; "
		       "start threads in on_confined",
		       threads);
		return -EBUSY;
	}
	struct kp_sandbox sb = {
	    .name = d->name,
	    .change_uid = w->config.change_uid,
	    .uid = w->config.uid,
	    .gid = w->config.gid,
	    .rlimit_as = d->rlimit_as,
	    .rlimit_nofile = d->rlimit_nofile,
	    .syscalls = d->syscalls,
	};
	if (d->fs == KP_WORKER_FS_DATA_RW)
		sb.write_paths[0] = w->config.data_dir;
	unsigned nread = 0;
	if (d->fs == KP_WORKER_FS_WWW_RO && w->config.www_dir[0])
		sb.read_paths[nread++] = w->config.www_dir;
	if (d->read_path && d->read_path[0])
		sb.read_paths[nread++] = d->read_path;
	struct kp_sandbox_report rep;
	const char *step = "?";
	int r = kp_sandbox_apply(&sb, &rep, &step);
	if (r < 0) {
		kp_err("confinement failed at %s: %s", step, strerror(-r));
		return r;
	}
	if (getppid() != w->parent) {
		kp_err("supervisor is gone; exiting");
		return -ESRCH;
	}
	if (!rep.landlock_abi)
		kp_warn("kernel has no Landlock: file-system view not restricted");
	if (rep.uid_changed)
		kp_info("confined: uid %u gid %u, landlock abi %d, seccomp on", (unsigned)w->config.uid,
			(unsigned)w->config.gid, rep.landlock_abi);
	else
		kp_info("confined: started as non-root, uid unchanged (%u); landlock abi %d, seccomp on",
			(unsigned)getuid(), rep.landlock_abi);
	return 0;
}

static void health_reply(struct kp_worker *w, uint64_t seq)
{
	kp_Envelope env = kp_Envelope_init_zero;
	env.which_msg = kp_Envelope_health_reply_tag;
	kp_HealthReply *h = &env.msg.health_reply;
	h->seq = seq;
	for (unsigned i = 0; i < w->def->npeers && h->links_count < 8; i++) {
		const struct peer_link *l = &w->links[i];
		kp_LinkState *s = &h->links[h->links_count++];
		s->peer = l->peer;
		s->generation = l->generation;
		s->up = l->ipc != NULL && l->hello_seen;
		if (l->ipc) {
			struct kp_ipc_stats st;
			kp_ipc_get_stats(l->ipc, &st);
			s->frames_in = st.frames_in;
			s->frames_out = st.frames_out;
			s->send_rejected = st.send_rejected;
			s->queue_items = (uint32_t)st.queue_items;
			s->queue_bytes = st.queue_bytes;
		}
	}
	send_to_supervisor(w, &env);
}

static void on_sup_frame(struct kp_ipc *c, struct kp_ipc_frame *f, void *arg)
{
	struct kp_worker *w = arg;
	const kp_Envelope *env = f->env;
	(void)c;
	switch (env->which_msg) {
	case kp_Envelope_worker_config_tag:
		w->config = env->msg.worker_config;
		if (!f->nfds)
			break; /* a WorkerConfig sent again on a reload keeps the descriptors */
		for (unsigned i = 0; i < w->nconfig_fds; i++)
			close(w->config_fds[i]); /* a WorkerConfig sent again with others replaces them */
		w->nconfig_fds = f->nfds;
		for (unsigned i = 0; i < f->nfds; i++) {
			w->config_fds[i] = f->fds[i];
			f->fds[i] = -1; /* kept */
		}
		break;
	case kp_Envelope_camera_config_tag:
		if (w->def->on_config_item)
			w->def->on_config_item(w, env);
		break;
	case kp_Envelope_config_done_tag: {
		if (!w->confined) {
			if (w->def->on_before_confine && w->def->on_before_confine(w) < 0) {
				stop(w, 1);
				return;
			}
			if (confine(w) < 0) {
				stop(w, 1);
				return;
			}
			w->confined = 1;
			if (w->def->on_confined && w->def->on_confined(w) < 0) {
				stop(w, 1);
				return;
			}
		}
		if (w->def->on_configured)
			w->def->on_configured(w, env->msg.config_done.generation);
		kp_Envelope ready = kp_Envelope_init_zero;
		ready.which_msg = kp_Envelope_ready_tag;
		ready.msg.ready.pid = (uint32_t)getpid();
		ready.msg.ready.generation = env->msg.config_done.generation;
		send_to_supervisor(w, &ready);
		break;
	}
	case kp_Envelope_link_new_tag:
		install_link(w, &env->msg.link_new, f);
		break;
	case kp_Envelope_health_request_tag:
		if (w->def->on_health)
			w->def->on_health(w);
		health_reply(w, env->msg.health_request.seq);
		break;
	case kp_Envelope_reload_tag:
		kp_info("reload (generation %u)", (unsigned)env->msg.reload.generation);
		break;
	case kp_Envelope_shutdown_tag:
		kp_info("stopping: %s", env->msg.shutdown.reason);
		stop(w, 0);
		break;
	default:
		if (w->def->on_supervisor_frame)
			w->def->on_supervisor_frame(w, f);
		else if (w->def->on_supervisor_request)
			w->def->on_supervisor_request(w, env);
		break;
	}
}

static void on_sup_error(struct kp_ipc *c, int err, const char *reason, void *arg)
{
	struct kp_worker *w = arg;
	(void)c;
	(void)err;
	kp_err("supervisor link closed: %s; exiting", reason);
	stop(w, 1);
}

static void on_sigterm(uv_signal_t *h, int sig)
{
	struct kp_worker *w = h->data;
	kp_info("stopping on signal %d", sig);
	stop(w, 0);
}

int kp_worker_main(const struct kp_worker_def *def, int argc, char **argv)
{
	char name[48];
	snprintf(name, sizeof name, "keeppeek-%s", def->name);
	kp_log_init(name);
	if (argc > 1 && (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V"))) {
		printf("%s %s\n", name, KP_VERSION);
		return 0;
	}
	struct stat st;
	if (fstat(KP_WORKER_CHANNEL_FD, &st) < 0 || !S_ISSOCK(st.st_mode)) {
		fprintf(stderr, "%s: this program is started by keeppeekd(8), with its channel on fd %d\n", name,
			KP_WORKER_CHANNEL_FD);
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	signal(SIGINT, SIG_IGN);
	/* Address space is a ceiling (RLIMIT_AS): threads share a few arenas rather than
	 * reserving 64 MiB each (kp_limits.h). Sanitizers have their own allocator. */
	if (!KP_SANDBOX_SANITIZED && !mallopt(M_ARENA_MAX, KP_WORKER_ARENAS_MAX))
		kp_warn("mallopt(M_ARENA_MAX, %d) failed: threads may each reserve an arena", KP_WORKER_ARENAS_MAX);
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() == 1) {
		kp_err("supervisor is gone; exiting");
		return 1;
	}
	int r = kp_sandbox_early();
	if (r < 0) {
		kp_err("confinement failed at the early seccomp filter: %s", strerror(-r));
		return 1;
	}
	static struct kp_worker w;
	w.def = def;
	w.parent = getppid();
	w.loop = uv_default_loop();
	for (unsigned i = 0; i < def->npeers; i++) {
		w.links[i].w = &w;
		w.links[i].peer = def->peers[i];
	}
	struct kp_ipc_limits sup_lim = supervisor_limits;
	sup_lim.to = def->self;
	r = kp_ipc_open(w.loop, KP_WORKER_CHANNEL_FD, &sup_lim, on_sup_frame, on_sup_error, &w, &w.sup);
	if (r < 0) {
		kp_err("opening the supervisor channel failed: %s", strerror(-r));
		return 1;
	}
	uv_signal_init(w.loop, &w.sigterm);
	w.sigterm.data = &w;
	uv_signal_start(&w.sigterm, on_sigterm, SIGTERM);
	uv_run(w.loop, UV_RUN_DEFAULT);
	/* Let close callbacks run, then release the loop. */
	uv_run(w.loop, UV_RUN_NOWAIT);
	uv_loop_close(w.loop);
	return w.exit_code;
}
