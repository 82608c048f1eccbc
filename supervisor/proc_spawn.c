/* Starting a worker (proc_spawn.h): posix_spawn, which glibc does with clone(CLONE_VM |
 * CLONE_VFORK): keeppeekd's page tables are not copied and its pages are not made
 * copy-on-write for the moment between fork and exec, as libuv's uv_spawn (fork) does
 * (decision 0028). Exits are learnt from SIGCHLD and reaped by pid, so that children
 * started by uv_spawn (the demo's cameras) stay libuv's; like a uv_process_t, a running
 * child keeps the loop running. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include "proc_spawn.h"

extern char **environ;

static uv_signal_t sigchld;
static struct kp_child *children;

static void on_sigchld(uv_signal_t *h, int sig)
{
	(void)h;
	(void)sig;
	for (struct kp_child **pp = &children; *pp;) {
		struct kp_child *c = *pp;
		int st;
		pid_t r = waitpid(c->pid, &st, WNOHANG);
		if (r != c->pid) {
			pp = &c->next;
			continue;
		}
		*pp = c->next;
		c->pid = 0;
		c->next = NULL;
		if (!children)
			uv_unref((uv_handle_t *)&sigchld);
		c->on_exit(c, WIFEXITED(st) ? WEXITSTATUS(st) : 0, WIFSIGNALED(st) ? WTERMSIG(st) : 0);
	}
}

int kp_spawn_init(uv_loop_t *loop)
{
	int r = uv_signal_init(loop, &sigchld);
	if (r == 0)
		r = uv_signal_start(&sigchld, on_sigchld, SIGCHLD);
	if (r == 0)
		uv_unref((uv_handle_t *)&sigchld);
	return r;
}

int kp_spawn(struct kp_child *c, const char *path, int channel_fd)
{
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	sigset_t all, none;
	int fd = channel_fd, err;
	/* dup2 onto itself would keep FD_CLOEXEC on older C libraries: move it first. */
	if (fd == 3 && (fd = fcntl(channel_fd, F_DUPFD_CLOEXEC, 4)) < 0)
		return -errno;
	sigfillset(&all);
	sigemptyset(&none);
	if ((err = posix_spawn_file_actions_init(&fa)) != 0)
		goto out_fd;
	if ((err = posix_spawnattr_init(&attr)) != 0)
		goto out_fa;
	if (!(err = posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0)) &&
	    !(err = posix_spawn_file_actions_adddup2(&fa, fd, 3)) &&
	    !(err = posix_spawnattr_setsigdefault(&attr, &all)) && !(err = posix_spawnattr_setsigmask(&attr, &none)) &&
	    !(err = posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK))) {
		char *args[] = {(char *)path, NULL};
		pid_t pid;
		err = posix_spawn(&pid, path, &fa, &attr, args, environ);
		if (!err) {
			c->pid = pid;
			c->next = children;
			children = c;
			uv_ref((uv_handle_t *)&sigchld); /* the loop runs while a child does */
		}
	}
	posix_spawnattr_destroy(&attr);
out_fa:
	posix_spawn_file_actions_destroy(&fa);
out_fd:
	if (fd != channel_fd)
		close(fd);
	return -err;
}
