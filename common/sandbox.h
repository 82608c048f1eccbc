/* A worker's confinement, applied once before it touches untrusted input, in order:
 * file-system view (Landlock), uid/gid change, no_new_privs, rlimits, seccomp. */
#ifndef KP_SANDBOX_H
#define KP_SANDBOX_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "kp_build_config.h"

/* A sanitizer build: meson's b_sanitize, or the compiler's own flags (CFLAGS=-fsanitize=...). */
#if KP_SANITIZED || defined(__SANITIZE_ADDRESS__)
#define KP_SANDBOX_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(undefined_behavior_sanitizer)
#define KP_SANDBOX_SANITIZED 1
#endif
#endif
#ifndef KP_SANDBOX_SANITIZED
#define KP_SANDBOX_SANITIZED 0
#endif

#define KP_SANDBOX_MAX_PATHS 8

enum kp_syscall_set {
	KP_SYSCALLS_FS_WRITE = 1, /* create, rename, unlink, fsync, truncate files */
	KP_SYSCALLS_NET = 2,      /* IP sockets: connect, bind, listen, accept */
	/* Shared libraries loaded after confinement (dlopen) run constructors that probe the
	 * system: answered with an error, never allowed (late_lib_syscalls in sandbox.c). */
	KP_SYSCALLS_LATE_LIBS = 4,
};

struct kp_sandbox {
	const char *name;
	const char *read_paths[KP_SANDBOX_MAX_PATHS];
	const char *write_paths[KP_SANDBOX_MAX_PATHS];
	bool change_uid;
	uid_t uid;
	gid_t gid;
	uint64_t rlimit_as;
	uint64_t rlimit_nofile;
	unsigned syscalls; /* enum kp_syscall_set bits */
};

struct kp_sandbox_report {
	int landlock_abi; /* 0: kernel has no Landlock */
	bool uid_changed;
};

/* The part of the confinement that must come before the event loop or any thread exists:
 * sets no_new_privs and installs a filter that answers io_uring_setup(2) (and its two
 * companions) with ENOSYS, so libuv's loop, created next, batches epoll_ctl(2) without a
 * ring, whose operations the seccomp allow-list could not see. In sanitizer builds it also
 * starts the symbolizer. Returns 0 or a negative errno. */
int kp_sandbox_early(void);

/* Returns 0 or a negative errno with *ret_step naming the step that failed. */
int kp_sandbox_apply(const struct kp_sandbox *sb, struct kp_sandbox_report *ret_report, const char **ret_step);

#endif
