/* Telling the service manager how keeppeekd is doing: the notification protocol
 * (sd_notify(3)) without libsystemd, one datagram of "KEY=VALUE" lines to the AF_UNIX
 * socket named by $NOTIFY_SOCKET (a path, or an abstract name written with a leading
 * '@'), and when to say READY=1 (the first durable commit's path is up: webd and recorderd
 * running and linked to each other, asked of both when the second is Ready, checked on each of their health replies
 * and every 5 ms from the start), which is also when the rest of the workers start; RELOADING=1 and READY=1 around a
 * reload, STOPPING=1. The address is read once and the variable removed, so that the workers, which must never speak
 * for the service, do not inherit it. Without $NOTIFY_SOCKET nothing is sent. */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "kp_limits.h"
#include "kp_time.h"
#include "log.h"
#include "supervisor.h"

static struct {
	struct sockaddr_un sa;
	socklen_t len; /* 0: no service manager listens */
} N;

int notify_init(void)
{
	const char *e = getenv("NOTIFY_SOCKET");
	if (!e || !e[0])
		return 0;
	size_t n = strlen(e);
	int r = 0;
	if ((e[0] != '/' && e[0] != '@') || n >= sizeof N.sa.sun_path) {
		r = -EINVAL; /* not a socket we can address (vsock is not supported) */
	} else {
		N.sa.sun_family = AF_UNIX;
		memcpy(N.sa.sun_path, e, n);
		if (e[0] == '@')
			N.sa.sun_path[0] = '\0'; /* abstract: the name is the bytes after the NUL */
		N.len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n + (e[0] == '/'));
	}
	unsetenv("NOTIFY_SOCKET");
	return r;
}

bool notify_enabled(void)
{
	return N.len != 0;
}

int notify_send(const char *fmt, ...)
{
	if (!N.len)
		return 0;
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof msg)
		return -EMSGSIZE;
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	int r = 0;
	if (sendto(fd, msg, (size_t)n, MSG_NOSIGNAL, (struct sockaddr *)&N.sa, N.len) < 0)
		r = -errno;
	close(fd);
	return r;
}

uint64_t notify_monotonic_usec(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static void send_logged(const char *what, int r)
{
	if (r < 0)
		kp_warn("telling the service manager %s failed: %s", what, strerror(-r));
}

/* Every worker on the first commit's path (the process table's first rows) runs, and
 * both ends of every link between two of them have said hello (their last health
 * replies show the link up at its current generation). */
static bool first_linked(const struct supervisor *s)
{
	for (unsigned i = 0; i < KP_NPROCS; i++)
		if (s->procs[i].def->first && s->procs[i].state != PROC_RUNNING)
			return false;
	for (unsigned i = 0; i < KP_NLINKS; i++) {
		const struct link *l = &s->links[i];
		if (!proc_by_peer((struct supervisor *)s, l->a)->def->first ||
		    !proc_by_peer((struct supervisor *)s, l->b)->def->first)
			continue;
		kp_Peer ends[2] = {l->a, l->b};
		for (int e = 0; e < 2; e++) {
			const struct proc *p = proc_by_peer((struct supervisor *)s, ends[e]);
			kp_Peer other = ends[!e];
			bool up = false;
			for (pb_size_t k = 0; k < p->health.links_count; k++)
				if (p->health.links[k].peer == other)
					up = p->health.links[k].up && p->health.links[k].generation == l->generation;
			if (!up)
				return false;
		}
	}
	return true;
}

/* The workers that always run (not the transcoder, started on demand). */
static unsigned always_on(const struct supervisor *s)
{
	unsigned n = 0;
	for (unsigned i = 0; i < KP_NPROCS; i++)
		n += !s->procs[i].def->on_demand;
	return n;
}

static void not_running(const struct supervisor *s, char *buf, size_t len)
{
	size_t used = 0;
	buf[0] = '\0';
	for (unsigned i = 0; i < KP_NPROCS && used < len; i++) {
		const struct proc *p = &s->procs[i];
		if (p->state == PROC_RUNNING || !proc_expected(p))
			continue;
		int n =
		    snprintf(buf + used, len - used, "%s%s %s", used ? ", " : "", p->name, proc_state_name(p->state));
		if (n > 0)
			used += (size_t)n;
	}
}

/* READY=1 once the first rows are linked, degraded at the deadline; either way the rest
 * of the workers are started then (proc_start_rest). True once decided. */
static bool decide(struct supervisor *s)
{
	if (s->ready_sent || s->stopping)
		return true;
	bool linked = first_linked(s);
	if (!linked && kp_mono_ms() - s->started_ms < KP_READY_DEADLINE_MS)
		return false;
	uv_timer_stop(&s->ready_timer);
	s->ready_sent = true;
	if (linked)
		kp_info("ready: webd and recorderd running and linked after %llu ms; starting the rest",
			(unsigned long long)(kp_mono_ms() - s->started_ms));
	proc_start_rest(s);
	char rest[256];
	not_running(s, rest, sizeof rest);
	if (linked) {
		send_logged("READY=1", notify_send("READY=1\nSTATUS=ready to record and serve%s%s",
						   rest[0] ? "; starting: " : "", rest));
		return true;
	}
	/* Recording must not wait for, say, a web port in use: the service is started anyway,
	 * degraded, and says why. */
	kp_warn("not every worker is running and linked after %d ms (%s); telling the service manager "
		"that keeppeekd is ready anyway",
		KP_READY_DEADLINE_MS, rest[0] ? rest : "links not up");
	send_logged("READY=1", notify_send("READY=1\nSTATUS=degraded: %s", rest[0] ? rest : "links not up"));
	return true;
}

/* The first rows run but their link is not known to be up yet: fresh link states, sooner
 * than the 2 s health round. */
static void ask_links(struct supervisor *s)
{
	for (unsigned i = 0; i < KP_NPROCS; i++)
		if (s->procs[i].def->first && s->procs[i].state != PROC_RUNNING)
			return;
	for (unsigned i = 0; i < KP_NPROCS; i++)
		if (s->procs[i].def->first && s->procs[i].ipc)
			s->hooks->ping(&s->procs[i]);
}

static void on_ready_timer(uv_timer_t *t)
{
	struct supervisor *s = t->data;
	if (s->stopping) {
		uv_timer_stop(t);
		return;
	}
	if (!decide(s))
		ask_links(s);
}

void service_worker_ready(struct supervisor *s)
{
	if (!decide(s))
		ask_links(s);
}

void service_heard(struct supervisor *s)
{
	decide(s);
}

void service_start(struct supervisor *s)
{
	s->started_ms = kp_mono_ms();
	uv_timer_init(s->loop, &s->ready_timer);
	s->ready_timer.data = s;
	uv_timer_start(&s->ready_timer, on_ready_timer, KP_READY_POLL_MS, KP_READY_POLL_MS);
}

void service_close(struct supervisor *s)
{
	uv_close((uv_handle_t *)&s->ready_timer, NULL);
}

void service_stopping(struct supervisor *s)
{
	uv_timer_stop(&s->ready_timer);
	send_logged("STOPPING=1", notify_send("STOPPING=1\nSTATUS=stopping"));
}

void service_reloading(struct supervisor *s)
{
	if (s->ready_sent)
		send_logged("RELOADING=1",
			    notify_send("RELOADING=1\nMONOTONIC_USEC=%llu\nSTATUS=reloading (generation %u)",
					(unsigned long long)notify_monotonic_usec(), (unsigned)s->generation));
}

void service_reloaded(struct supervisor *s)
{
	if (s->ready_sent)
		send_logged("READY=1", notify_send("READY=1\nSTATUS=%u workers running, configuration generation %u",
						   always_on(s), (unsigned)s->generation));
}
