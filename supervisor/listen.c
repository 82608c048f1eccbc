/* The web listening sockets, held by keeppeekd and handed to webd with its WorkerConfig
 * (as SCM_RIGHTS descriptors, one per [web] listen address, in order), so that a client
 * is queued in the backlog, never refused, while webd starts or restarts. Taken from the
 * service manager when keeppeekd is socket-activated (sd_listen_fds(3) without
 * libsystemd: LISTEN_PID is ours, LISTEN_FDS sockets from descriptor 3; dist/
 * keeppeek.socket), otherwise bound here before any worker starts. An address that
 * cannot be bound here is left to webd, which binds it itself and says why it cannot. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "log.h"
#include "supervisor.h"

#define LISTEN_FD_START 3 /* SD_LISTEN_FDS_START */
#define LISTEN_BACKLOG  511

static struct {
	int fds[KP_WEB_LISTEN_MAX];
	unsigned n;
	char spec[256];  /* the listen value they were bound for */
	bool activated;  /* handed in by the service manager */
	char names[256]; /* activated: HOST:PORT,... as getsockname says */
} L = {.fds = {-1, -1, -1, -1, -1, -1, -1, -1}};

static void close_all(void)
{
	for (unsigned i = 0; i < L.n; i++)
		if (L.fds[i] >= 0)
			close(L.fds[i]);
	L.n = 0;
}

static int sockname(int fd, char *buf, size_t len)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof ss;
	char host[INET6_ADDRSTRLEN];
	if (getsockname(fd, (struct sockaddr *)&ss, &sl) < 0)
		return -errno;
	if (ss.ss_family == AF_INET) {
		const struct sockaddr_in *a = (const struct sockaddr_in *)&ss;
		inet_ntop(AF_INET, &a->sin_addr, host, sizeof host);
		snprintf(buf, len, "%s:%u", host, (unsigned)ntohs(a->sin_port));
	} else if (ss.ss_family == AF_INET6) {
		const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)&ss;
		inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof host);
		snprintf(buf, len, "[%s]:%u", host, (unsigned)ntohs(a->sin6_port));
	} else {
		return -EAFNOSUPPORT;
	}
	return 0;
}

/* Socket activation: LISTEN_PID names this process and LISTEN_FDS counts TCP listening
 * sockets from descriptor 3. 1 when taken, 0 when not activated, <0 on a bad hand-over. */
static int take_activated(void)
{
	const char *pid = getenv("LISTEN_PID"), *fds = getenv("LISTEN_FDS");
	if (!pid || !fds)
		return 0;
	char *end;
	long p = strtol(pid, &end, 10);
	bool ours = !*end && p == (long)getpid();
	long n = strtol(fds, &end, 10);
	unsetenv("LISTEN_PID");
	unsetenv("LISTEN_FDS");
	unsetenv("LISTEN_FDNAMES");
	if (!ours)
		return 0;
	if (*end || n < 1 || n > KP_WEB_LISTEN_MAX) {
		kp_err("socket activation: LISTEN_FDS=%s: expected 1 to %d sockets", fds, KP_WEB_LISTEN_MAX);
		return -EINVAL;
	}
	size_t used = 0;
	for (int i = 0; i < (int)n; i++) {
		int fd = LISTEN_FD_START + i, type = 0, acc = 0;
		socklen_t tl = sizeof type, al = sizeof acc;
		char name[80];
		if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tl) < 0 || type != SOCK_STREAM ||
		    getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &acc, &al) < 0 || !acc ||
		    sockname(fd, name, sizeof name) < 0) {
			kp_err("socket activation: descriptor %d is not a listening TCP socket", fd);
			return -ENOTSOCK;
		}
		if (fcntl(fd, F_SETFD, FD_CLOEXEC) < 0)
			return -errno;
		L.fds[L.n++] = fd;
		int w = snprintf(L.names + used, sizeof L.names - used, "%s%s", used ? "," : "", name);
		if (w < 0 || (size_t)w >= sizeof L.names - used)
			return -ENAMETOOLONG;
		used += (size_t)w;
	}
	L.activated = true;
	kp_info("socket activation: %u listening socket%s from the service manager (%s); [web] listen is not used", L.n,
		L.n == 1 ? "" : "s", L.names);
	return 1;
}

/* "HOST:PORT" or "[V6]:PORT" (as webd reads them) into a bound, listening socket. */
static int bind_one(const char *spec)
{
	char host[64];
	const char *port;
	if (spec[0] == '[') {
		const char *e = strchr(spec, ']');
		if (!e || e[1] != ':' || (size_t)(e - spec - 1) >= sizeof host)
			return -EINVAL;
		memcpy(host, spec + 1, (size_t)(e - spec - 1));
		host[e - spec - 1] = '\0';
		port = e + 2;
	} else {
		const char *e = strrchr(spec, ':');
		if (!e || (size_t)(e - spec) >= sizeof host)
			return -EINVAL;
		memcpy(host, spec, (size_t)(e - spec));
		host[e - spec] = '\0';
		port = e + 1;
	}
	char *end;
	long p = strtol(port, &end, 10);
	if (*end || p < 0 || p > 65535)
		return -EINVAL;
	struct sockaddr_storage ss;
	memset(&ss, 0, sizeof ss);
	socklen_t sl;
	struct sockaddr_in *a4 = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)&ss;
	if (inet_pton(AF_INET, host, &a4->sin_addr) == 1) {
		a4->sin_family = AF_INET;
		a4->sin_port = htons((uint16_t)p);
		sl = sizeof *a4;
	} else if (inet_pton(AF_INET6, host, &a6->sin6_addr) == 1) {
		a6->sin6_family = AF_INET6;
		a6->sin6_port = htons((uint16_t)p);
		sl = sizeof *a6;
	} else {
		return -EINVAL;
	}
	int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	int one = 1;
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0 ||
	    (ss.ss_family == AF_INET6 && setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one) < 0) ||
	    bind(fd, (struct sockaddr *)&ss, sl) < 0 || listen(fd, LISTEN_BACKLOG) < 0) {
		int e = -errno;
		close(fd);
		return e;
	}
	return fd;
}

/* Binds every address of listen, or none (webd then binds them itself). */
static void bind_all(const char *listen)
{
	close_all();
	snprintf(L.spec, sizeof L.spec, "%s", listen);
	char list[256];
	snprintf(list, sizeof list, "%s", listen);
	char *save = NULL;
	for (char *tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		while (*tok == ' ')
			tok++;
		int fd = L.n < KP_WEB_LISTEN_MAX ? bind_one(tok) : -E2BIG;
		if (fd < 0) {
			kp_warn("listening on %s in keeppeekd failed: %s; webd binds [web] listen itself", tok,
				strerror(-fd));
			close_all();
			return;
		}
		L.fds[L.n++] = fd;
	}
}

int listen_init(struct supervisor *s)
{
	int r = take_activated();
	if (r < 0)
		return r;
	if (r == 0)
		bind_all(s->cfg.listen.val);
	return 0;
}

unsigned listen_for_webd(struct supervisor *s, int *fds, char *spec, size_t spec_len)
{
	if (L.activated) {
		snprintf(spec, spec_len, "%s", L.names);
	} else {
		if (strcmp(L.spec, s->cfg.listen.val) != 0) /* changed by a reload: takes effect now */
			bind_all(s->cfg.listen.val);
		snprintf(spec, spec_len, "%s", s->cfg.listen.val);
	}
	for (unsigned i = 0; i < L.n; i++)
		fds[i] = L.fds[i];
	return L.n;
}
