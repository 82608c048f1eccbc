/* Starting keeppeekd's workers with posix_spawn and learning of their exit (proc_spawn.c). */
#ifndef KP_PROC_SPAWN_H
#define KP_PROC_SPAWN_H

#include <stdint.h>
#include <sys/types.h>
#include <uv.h>

struct kp_child;
/* The child exited (status) or was killed (sig); it is reaped and forgotten. */
typedef void (*kp_child_exit_cb)(struct kp_child *c, int64_t status, int sig);

struct kp_child {
	pid_t pid; /* > 0 while it runs */
	kp_child_exit_cb on_exit;
	void *data;
	struct kp_child *next; /* proc_spawn.c's list of running children */
};

/* Watches SIGCHLD on loop; once, before the first kp_spawn. */
int kp_spawn_init(uv_loop_t *loop);
/* Runs path (no arguments, keeppeekd's environment) with /dev/null on fd 0, keeppeekd's
 * fds 1 and 2, channel_fd on fd 3 and the default signal dispositions and an empty
 * mask; returns once it has exec'd: 0, or -errno (nothing started). */
int kp_spawn(struct kp_child *c, const char *path, int channel_fd);

#endif
