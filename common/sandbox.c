/* Worker confinement: Landlock rules for the paths a worker may use, the uid drop,
 * PR_SET_NO_NEW_PRIVS, setrlimit ceilings and a libseccomp allow-list whose violations
 * raise SIGSYS (the worker logs the syscall number and dies; the supervisor restarts it).
 * System calls that a newer libc or library tries first and falls back from are answered
 * with an errno on purpose, not left to the kill default (docs/privsep.md, "Seccomp";
 * docs/decisions/0001-io-uring.md). The filter covers every thread (TSYNC). */
#include "sandbox.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/landlock.h>
#include <sched.h>
#include <seccomp.h>
#include <signal.h>
#include <stddef.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "kp_build_config.h"
#include "kp_limits.h"
#include "log.h"

#ifndef LANDLOCK_ACCESS_FS_REFER
#define LANDLOCK_ACCESS_FS_REFER (1ULL << 13)
#endif
#ifndef PR_SET_VMA
#define PR_SET_VMA 0x53564d41
#endif
#ifndef LANDLOCK_ACCESS_FS_TRUNCATE
#define LANDLOCK_ACCESS_FS_TRUNCATE (1ULL << 14)
#endif

#define FS_READ (LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR)
#define FS_WRITE                                                                                                       \
	(LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_REMOVE_DIR | LANDLOCK_ACCESS_FS_REMOVE_FILE |              \
	 LANDLOCK_ACCESS_FS_MAKE_DIR | LANDLOCK_ACCESS_FS_MAKE_REG | LANDLOCK_ACCESS_FS_MAKE_SOCK |                    \
	 LANDLOCK_ACCESS_FS_MAKE_FIFO | LANDLOCK_ACCESS_FS_MAKE_SYM | LANDLOCK_ACCESS_FS_MAKE_CHAR |                   \
	 LANDLOCK_ACCESS_FS_MAKE_BLOCK)

/* What every worker may read after confinement: shared libraries loaded late and the
 * files glibc needs for name resolution and time zones. */
static const char *const common_read[] = {
    "/usr/lib",           "/lib",          "/lib64",         "/etc/hosts",          "/etc/resolv.conf",
    "/etc/nsswitch.conf", "/etc/gai.conf", "/etc/localtime", "/usr/share/zoneinfo", "/etc/ssl",
    "/dev/urandom",       "/dev/null",
};

static int add_path(int ruleset, const char *path, uint64_t access)
{
	int fd = open(path, O_PATH | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	struct stat st;
	if (fstat(fd, &st) == 0 && !S_ISDIR(st.st_mode))
		access &= LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_WRITE_FILE |
			  LANDLOCK_ACCESS_FS_TRUNCATE;
	struct landlock_path_beneath_attr attr = {.allowed_access = access, .parent_fd = fd};
	long r = syscall(SYS_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH, &attr, 0);
	int err = errno;
	close(fd);
	return r < 0 ? -err : 0;
}

static int apply_landlock(const struct kp_sandbox *sb, int *ret_abi)
{
	long abi = syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
	if (abi < 0) {
		*ret_abi = 0;
		return 0;
	}
	*ret_abi = (int)abi;
	uint64_t handled = FS_READ | FS_WRITE;
	if (abi >= 2)
		handled |= LANDLOCK_ACCESS_FS_REFER;
	if (abi >= 3)
		handled |= LANDLOCK_ACCESS_FS_TRUNCATE;
	struct landlock_ruleset_attr attr = {.handled_access_fs = handled};
	int rs = (int)syscall(SYS_landlock_create_ruleset, &attr, sizeof attr, 0);
	if (rs < 0)
		return -errno;
	int r = 0;
	for (size_t i = 0; i < sizeof common_read / sizeof common_read[0] && r == 0; i++)
		r = add_path(rs, common_read[i], FS_READ);
	for (size_t i = 0; i < KP_SANDBOX_MAX_PATHS && sb->read_paths[i] && r == 0; i++)
		r = add_path(rs, sb->read_paths[i], FS_READ);
	for (size_t i = 0; i < KP_SANDBOX_MAX_PATHS && sb->write_paths[i] && r == 0; i++)
		r = add_path(rs, sb->write_paths[i], handled);
	if (r == 0 && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		r = -errno;
	if (r == 0 && syscall(SYS_landlock_restrict_self, rs, 0) < 0)
		r = -errno;
	close(rs);
	return r;
}

/* Sets soft and hard limit to value. A process that may not raise its hard limit gets
 * that hard limit instead, when it is lower (a developer run under a small ulimit). */
static int set_limit(int resource, uint64_t value)
{
	struct rlimit rl = {.rlim_cur = value, .rlim_max = value};
	if (setrlimit(resource, &rl) == 0)
		return 0;
	int err = errno;
	struct rlimit cur;
	if (err != EPERM || getrlimit(resource, &cur) < 0 || cur.rlim_max >= value)
		return -err;
	rl.rlim_cur = rl.rlim_max = cur.rlim_max;
	if (setrlimit(resource, &rl) < 0)
		return -errno;
	kp_warn("resource limit %d lowered to the hard limit %llu (wanted %llu)", resource,
		(unsigned long long)cur.rlim_max, (unsigned long long)value);
	return 0;
}

static void on_sigsys(int sig, siginfo_t *info, void *uctx)
{
	(void)uctx;
	char msg[96] = "seccomp: blocked system call ";
	size_t n = strlen(msg);
	int nr = info->si_syscall;
	char digits[12];
	int d = 0;
	do {
		digits[d++] = (char)('0' + nr % 10);
		nr /= 10;
	} while (nr && d < 11);
	while (d)
		msg[n++] = digits[--d];
	msg[n] = '\0';
	kp_log_signal_safe(msg);
	signal(sig, SIG_DFL);
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, sig);
	sigprocmask(SIG_UNBLOCK, &set, NULL);
	raise(sig);
}

static const int base_syscalls[] = {
    SCMP_SYS(read),
    SCMP_SYS(write),
    SCMP_SYS(readv),
    SCMP_SYS(writev),
    SCMP_SYS(pread64),
    SCMP_SYS(pwrite64),
    SCMP_SYS(close),
    SCMP_SYS(fstat),
    SCMP_SYS(newfstatat),
    SCMP_SYS(statx),
    SCMP_SYS(lseek),
    SCMP_SYS(mmap),
    SCMP_SYS(munmap),
    SCMP_SYS(mprotect),
    SCMP_SYS(mremap),
    SCMP_SYS(madvise),
    SCMP_SYS(brk),
    SCMP_SYS(rt_sigaction),
    SCMP_SYS(rt_sigprocmask),
    SCMP_SYS(rt_sigreturn),
    SCMP_SYS(sigaltstack),
    SCMP_SYS(epoll_create1),
    SCMP_SYS(epoll_ctl),
    SCMP_SYS(epoll_wait),
    SCMP_SYS(epoll_pwait),
    SCMP_SYS(epoll_pwait2),
    SCMP_SYS(poll),
    SCMP_SYS(ppoll),
    SCMP_SYS(eventfd2),
    SCMP_SYS(pipe2),
    SCMP_SYS(timerfd_create),
    SCMP_SYS(timerfd_settime),
    SCMP_SYS(timerfd_gettime),
    SCMP_SYS(clock_gettime),
    SCMP_SYS(clock_getres),
    SCMP_SYS(clock_nanosleep),
    SCMP_SYS(nanosleep),
    SCMP_SYS(gettimeofday),
    SCMP_SYS(getpid),
    SCMP_SYS(gettid),
    SCMP_SYS(getppid),
    SCMP_SYS(getuid),
    SCMP_SYS(geteuid),
    SCMP_SYS(getgid),
    SCMP_SYS(getegid),
    SCMP_SYS(futex),
    SCMP_SYS(set_robust_list),
    SCMP_SYS(rseq),
    SCMP_SYS(exit),
    SCMP_SYS(exit_group),
    SCMP_SYS(restart_syscall),
    SCMP_SYS(getrandom),
    SCMP_SYS(prlimit64),
    SCMP_SYS(uname),
    SCMP_SYS(sched_getaffinity),
    SCMP_SYS(sched_yield),
    SCMP_SYS(dup),
    SCMP_SYS(dup3),
    SCMP_SYS(fcntl),
    SCMP_SYS(sendmsg),
    SCMP_SYS(recvmsg),
    SCMP_SYS(sendto),
    SCMP_SYS(recvfrom),
    SCMP_SYS(sendmmsg),
    SCMP_SYS(recvmmsg),
    SCMP_SYS(shutdown),
    SCMP_SYS(getsockname),
    SCMP_SYS(getpeername),
    SCMP_SYS(getsockopt),
    SCMP_SYS(setsockopt),
    SCMP_SYS(socketpair),
    SCMP_SYS(openat),
    SCMP_SYS(getdents64),
    SCMP_SYS(readlink),
    SCMP_SYS(readlinkat),
    SCMP_SYS(faccessat),
    SCMP_SYS(faccessat2),
    SCMP_SYS(access),
    SCMP_SYS(getcwd),
    SCMP_SYS(sysinfo),
    SCMP_SYS(umask),
    SCMP_SYS(sendfile),
    SCMP_SYS(membarrier),
    SCMP_SYS(getrusage),
    SCMP_SYS(times),
    SCMP_SYS(set_tid_address),
    SCMP_SYS(sched_getparam),
    SCMP_SYS(sched_getscheduler),
    SCMP_SYS(getpriority),
    SCMP_SYS(fadvise64),
    SCMP_SYS(preadv),
    SCMP_SYS(pwritev),
    SCMP_SYS(getcpu),
    /* Closing one's own descriptors. glibc's closefrom(3) falls back from it to reading
     * /proc/self/fd, which Landlock hides, and then aborts: allowed on purpose. */
    SCMP_SYS(close_range),
};

/* Tried first by a newer glibc, libuv or GLib, each with a fallback that works here:
 * answered with ENOSYS ("this kernel does not have it") instead of the kill default. Not
 * listed here but allowed above, on purpose: rseq (glibc >= 2.35 registers it in every
 * thread), statx, faccessat2, epoll_pwait2, getrandom, close_range. Names this libseccomp
 * does not know yet are added by number: from Linux 5.1 on (number 424) a new system call
 * has the same number on every architecture Debian builds for. */
static const struct {
	const char *name;
	int nr; /* -1: older than 424, known to every libseccomp we build with */
} enosys_syscalls[] = {
    /* libuv >= 1.45 sets up a ring to batch epoll_ctl(2) and falls back to epoll_ctl;
     * operations submitted through a ring never pass this filter
     * (docs/decisions/0001-io-uring.md). */
    {"io_uring_setup", 425},
    {"io_uring_enter", 426},
    {"io_uring_register", 427},
    /* glibc >= 2.34 creates threads with clone3 and falls back to clone(2), whose flags,
     * unlike clone3's (behind a pointer), a filter can read. */
    {"clone3", 435},
    {"openat2", 437},        /* falls back to openat(2) */
    {"preadv2", -1},         /* glibc falls back to preadv(2) */
    {"pwritev2", -1},        /* and pwritev(2) */
    {"copy_file_range", -1}, /* libuv's uv_fs_sendfile falls back to sendfile(2) */
    {"pidfd_open", 434},     /* process helpers (glibc, GLib): kill(2), wait */
    {"pidfd_send_signal", 424},
    {"pidfd_getfd", 438},
    {"futex_waitv", 449}, /* futex2: futex(2) is the fallback */
    {"futex_wake", 454},
    {"futex_wait", 455},
    {"futex_requeue", 456},
    {"map_shadow_stack", 453}, /* CET shadow stacks for makecontext(3) */
    {"mseal", 462},            /* sealing mappings is an optional hardening */
};

static const int fs_write_syscalls[] = {
    SCMP_SYS(fsync),    SCMP_SYS(fdatasync), SCMP_SYS(sync_file_range), SCMP_SYS(ftruncate), SCMP_SYS(fallocate),
    SCMP_SYS(renameat), SCMP_SYS(renameat2), SCMP_SYS(rename),          SCMP_SYS(unlinkat),  SCMP_SYS(unlink),
    SCMP_SYS(mkdirat),  SCMP_SYS(mkdir),     SCMP_SYS(linkat),          SCMP_SYS(fchmod),    SCMP_SYS(flock),
    SCMP_SYS(statfs),   SCMP_SYS(fstatfs),   SCMP_SYS(msync),
};

static const int net_syscalls[] = {
    SCMP_SYS(bind), SCMP_SYS(listen), SCMP_SYS(accept4), SCMP_SYS(accept), SCMP_SYS(connect),
};

/* What the constructors of FFmpeg's dependency tree call when it is loaded late (first
 * seen with ingestd's module, docs/decisions/0017-ingestd-libav-module.md, gone since
 * 0034; rtcd still asks for these), seen with strace -k: libselinux
 * looks for selinuxfs (statfs), libnuma reads and resets the memory policy, libgcrypt
 * locks its secure memory pool. Each copes with the error: no SELinux, no NUMA, "insecure"
 * memory (nothing secret is kept there by the RTSP driver or the audio converter). */
static const struct {
	int nr;
	int err;
} late_lib_syscalls[] = {
    {SCMP_SYS(statfs), ENOSYS},
    {SCMP_SYS(get_mempolicy), ENOSYS},
    {SCMP_SYS(set_mempolicy), ENOSYS},
    {SCMP_SYS(mlock), EPERM},
};

/* What the sanitizers' runtimes need on their report and leak-check paths. A report is
 * symbolized by the llvm-symbolizer that kp_sandbox_early() started before confinement:
 * after it, the report writes to stderr and talks to the symbolizer over its pipes, and
 * reads /proc/self/maps with open(2) when a frame is in a module loaded after
 * confinement (rtcd's session module; docs/privsep.md, "Sanitizer builds"). */
static const int sanitizer_syscalls[] = {
    SCMP_SYS(ptrace), SCMP_SYS(prctl), SCMP_SYS(clone), SCMP_SYS(wait4), SCMP_SYS(sched_setaffinity), SCMP_SYS(open)};

#if KP_SANDBOX_SANITIZED
#include <sanitizer/common_interface_defs.h>

/* Symbolizing one address of this program starts the runtime's external symbolizer
 * (llvm-symbolizer, found in PATH; about 20 ms) as a child of this process, unconfined,
 * and keeps it for every later report. Without a symbolizer, reports name module+offset,
 * which llvm-symbolizer --obj resolves offline. */
static void warm_symbolizer(void)
{
	char buf[256];
	__sanitizer_symbolize_pc((void *)(uintptr_t)&kp_sandbox_early, "%p %F %L", buf, sizeof buf);
}
#else
static void warm_symbolizer(void) {}
#endif

static int allow_all(scmp_filter_ctx ctx, const int *list, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		int r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, list[i], 0);
		if (r < 0 && r != -EEXIST)
			return r;
	}
	return 0;
}

static int resolve(const char *name, int nr)
{
	int n = seccomp_syscall_resolve_name(name);
	return n == __NR_SCMP_ERROR ? nr : n;
}

static int add_enosys(scmp_filter_ctx ctx, size_t first, size_t count)
{
	for (size_t i = first; i < first + count; i++) {
		int nr = resolve(enosys_syscalls[i].name, enosys_syscalls[i].nr);
		if (nr < 0)
			continue;
		int r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), nr, 0);
		if (r < 0 && r != -EEXIST)
			return r;
	}
	return 0;
}

int kp_sandbox_early(void)
{
	/* Without CAP_SYS_ADMIN, a filter needs no_new_privs; a worker sets it anyway. */
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return -errno;
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	if (!ctx)
		return -ENOMEM;
	int r = add_enosys(ctx, 0, 3); /* the io_uring calls, first in the table */
	if (r == 0)
		r = seccomp_load(ctx);
	seccomp_release(ctx);
	if (r == 0 && KP_SANDBOX_SANITIZED)
		warm_symbolizer();
	return r;
}

static int apply_seccomp(const struct kp_sandbox *sb)
{
	struct sigaction sa = {.sa_sigaction = on_sigsys, .sa_flags = SA_SIGINFO};
	if (sigaction(SIGSYS, &sa, NULL) < 0)
		return -errno;
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_TRAP);
	if (!ctx)
		return -ENOMEM;
	/* Every thread (workers start theirs after confinement; TSYNC makes sure). */
	int r = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_TSYNC, 1);
	if (r == 0)
		r = allow_all(ctx, base_syscalls, sizeof base_syscalls / sizeof base_syscalls[0]);
	if (r == 0)
		r = add_enosys(ctx, 0, sizeof enosys_syscalls / sizeof enosys_syscalls[0]);
	/* clone(2) makes threads only: no fork, no new namespaces (sanitizer builds, whose
	 * runtimes fork, allow all of it). */
	if (r == 0 && !KP_SANDBOX_SANITIZED) {
		const scmp_datum_t thread = CLONE_VM | CLONE_SIGHAND | CLONE_THREAD;
		r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(clone), 1,
				     SCMP_A0(SCMP_CMP_MASKED_EQ, thread, thread));
	}
	/* Signals to itself only (raise, abort, thread signals): all workers share a uid, and
	 * one taken over must not stop or kill another. Sanitizer runtimes signal their
	 * symbolizer child, so their builds allow any target. */
	if (r == 0 && KP_SANDBOX_SANITIZED)
		r = allow_all(ctx, (const int[]){SCMP_SYS(kill), SCMP_SYS(tgkill)}, 2);
	if (r == 0 && !KP_SANDBOX_SANITIZED)
		r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(kill), 1,
				     SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)getpid()));
	if (r == 0 && !KP_SANDBOX_SANITIZED)
		r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(tgkill), 1,
				     SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)getpid()));
	if (r == 0 && (sb->syscalls & KP_SYSCALLS_FS_WRITE))
		r = allow_all(ctx, fs_write_syscalls, sizeof fs_write_syscalls / sizeof fs_write_syscalls[0]);
	if (r == 0 && (sb->syscalls & KP_SYSCALLS_NET))
		r = allow_all(ctx, net_syscalls, sizeof net_syscalls / sizeof net_syscalls[0]);
	for (size_t i = 0; r == 0 && (sb->syscalls & KP_SYSCALLS_LATE_LIBS) &&
			   i < sizeof late_lib_syscalls / sizeof late_lib_syscalls[0];
	     i++) {
		if (late_lib_syscalls[i].nr == SCMP_SYS(statfs) && (sb->syscalls & KP_SYSCALLS_FS_WRITE))
			continue; /* allowed above */
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO((uint32_t)late_lib_syscalls[i].err), late_lib_syscalls[i].nr,
				     0);
	}
	if (r == 0 && KP_SANDBOX_SANITIZED)
		r = allow_all(ctx, sanitizer_syscalls, sizeof sanitizer_syscalls / sizeof sanitizer_syscalls[0]);
	/* socket(2): local sockets always; IP and netlink (interface lookup) for network workers. */
	if (r == 0)
		r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(socket), 1, SCMP_A0(SCMP_CMP_EQ, AF_UNIX));
	if (r == 0 && (sb->syscalls & KP_SYSCALLS_NET)) {
		r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(socket), 1, SCMP_A0(SCMP_CMP_EQ, AF_INET));
		if (r == 0)
			r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(socket), 1, SCMP_A0(SCMP_CMP_EQ, AF_INET6));
		if (r == 0)
			r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(socket), 1,
					     SCMP_A0(SCMP_CMP_EQ, AF_NETLINK));
	}
	/* ioctl(2): non-blocking mode, close-on-exec, readable bytes, isatty(3), interface index/name (libnice). */
	static const unsigned long ioctls[] = {FIONBIO, FIONREAD, FIOCLEX, FIONCLEX, TCGETS, SIOCGIFINDEX, SIOCGIFNAME};
	for (size_t i = 0; r == 0 && i < sizeof ioctls / sizeof ioctls[0]; i++)
		r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(ioctl), 1, SCMP_A1(SCMP_CMP_EQ, ioctls[i]));
	/* prctl(2): thread names only (outside sanitizer builds, which allow all of prctl).
	 * glibc >= 2.38 names its anonymous mappings (tunable glibc.mem.decorate_maps) and
	 * ignores a failure: EINVAL, as from a kernel without CONFIG_ANON_VMA_NAME. */
	if (r == 0 && !KP_SANDBOX_SANITIZED)
		r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(prctl), 1, SCMP_A0(SCMP_CMP_EQ, PR_SET_NAME));
	if (r == 0 && !KP_SANDBOX_SANITIZED)
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EINVAL), SCMP_SYS(prctl), 1, SCMP_A0(SCMP_CMP_EQ, PR_SET_VMA));
	if (r == 0)
		r = seccomp_load(ctx);
	seccomp_release(ctx);
	return r;
}

int kp_sandbox_apply(const struct kp_sandbox *sb, struct kp_sandbox_report *ret_report, const char **ret_step)
{
	struct kp_sandbox_report rep = {0};
	int r = apply_landlock(sb, &rep.landlock_abi);
	if (r < 0) {
		*ret_step = "landlock";
		return r;
	}
	if (sb->change_uid) {
		if (setgroups(0, NULL) < 0 || setresgid(sb->gid, sb->gid, sb->gid) < 0 ||
		    setresuid(sb->uid, sb->uid, sb->uid) < 0) {
			*ret_step = "uid/gid change";
			return -errno;
		}
		if (setuid(0) == 0) {
			*ret_step = "uid change (root regained)";
			return -EPERM;
		}
		rep.uid_changed = true;
		/* A credential change clears the parent-death signal: set it again. */
		if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0) {
			*ret_step = "parent-death signal";
			return -errno;
		}
	}
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) {
		*ret_step = "no_new_privs";
		return -errno;
	}
	r = set_limit(RLIMIT_NOFILE, sb->rlimit_nofile);
	if (r == 0)
		r = set_limit(RLIMIT_CORE, 0);
	if (r == 0 && !KP_SANDBOX_SANITIZED && sb->rlimit_as)
		r = set_limit(RLIMIT_AS, sb->rlimit_as);
	if (r == 0 && sb->change_uid)
		r = set_limit(RLIMIT_NPROC, KP_WORKER_NPROC);
	if (r < 0) {
		*ret_step = "setrlimit";
		return r;
	}
	r = apply_seccomp(sb);
	if (r < 0) {
		*ret_step = "seccomp";
		return r;
	}
	*ret_report = rep;
	return 0;
}
