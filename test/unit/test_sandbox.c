/* The worker confinement's seccomp answers, each checked in a forked child that confines
 * itself like a worker: what a newer glibc or libuv tries first gets ENOSYS (and the
 * fallback works), what is not allowed kills with SIGSYS, also in a thread that started
 * before confinement (TSYNC), and in sanitizer builds a report made inside the sandbox
 * prints whole. */
#include <errno.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sandbox.h"
#include "test.h"

#ifndef __NR_io_uring_setup
#define __NR_io_uring_setup 425
#endif
#ifndef __NR_clone3
#define __NR_clone3 435
#endif
#ifndef __NR_openat2
#define __NR_openat2 437
#endif
#ifndef __NR_futex_waitv
#define __NR_futex_waitv 449
#endif
#ifndef __NR_futex_wake
#define __NR_futex_wake 454
#endif
#ifndef PR_SET_VMA
#define PR_SET_VMA 0x53564d41
#endif

static const struct kp_sandbox box = {
    .name = "test",
    .rlimit_as = 1024ull << 20,
    .rlimit_nofile = 256,
    .syscalls = KP_SYSCALLS_NET,
};

static int confine(void)
{
	struct kp_sandbox_report rep;
	const char *step = "?";
	int r = kp_sandbox_early();
	if (r == 0)
		r = kp_sandbox_apply(&box, &rep, &step);
	if (r < 0)
		fprintf(stderr, "confinement failed at %s: %d\n", step, r);
	return r;
}

/* Runs fn in a child with stderr to a pipe; returns its wait status and output. */
static int in_child(int (*fn)(void), char *out, size_t cap)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return -1;
	fflush(stderr);
	pid_t pid = fork();
	if (pid == 0) {
		dup2(p[1], 2);
		_exit(fn());
	}
	close(p[1]);
	size_t n = 0;
	ssize_t k;
	while (n + 1 < cap && (k = read(p[0], out + n, cap - 1 - n)) > 0)
		n += (size_t)k;
	out[n] = '\0';
	close(p[0]);
	int status = 0;
	waitpid(pid, &status, 0);
	return status;
}

static int errno_of(long r)
{
	return r < 0 ? errno : 0;
}

static void *thread_main(void *arg)
{
	*(int *)arg = 1;
	return NULL;
}

/* 0 on success, else the number of the first answer that was wrong. */
static int child_enosys(void)
{
	if (confine() < 0)
		return 100;
	char params[120] = {0};
	if (errno_of(syscall(__NR_io_uring_setup, 4, params)) != ENOSYS)
		return 1;
	char args[88] = {0};
	if (errno_of(syscall(__NR_clone3, args, sizeof args)) != ENOSYS)
		return 2;
	if (errno_of(syscall(__NR_openat2, AT_FDCWD, "/", args, 24)) != ENOSYS)
		return 3;
	if (errno_of(syscall(__NR_futex_waitv, NULL, 0, 0, NULL, 0)) != ENOSYS)
		return 4;
	if (errno_of(syscall(__NR_futex_wake, NULL, 0, 0, 0)) != ENOSYS)
		return 5;
	/* glibc falls back from clone3 to clone for a new thread. */
	pthread_t t;
	int ran = 0;
	if (pthread_create(&t, NULL, thread_main, &ran) != 0 || pthread_join(t, NULL) != 0 || !ran)
		return 6;
	/* Allowed on purpose. */
	int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (fd < 0 || syscall(SYS_close_range, (unsigned)fd, (unsigned)fd, 0) != 0)
		return 7;
	if (!KP_SANDBOX_SANITIZED && errno_of(prctl(PR_SET_VMA, 0, 0, 0, 0)) != EINVAL)
		return 8;
	return 0;
}

static void test_enosys_answers(void)
{
	char out[4096];
	int st = in_child(child_enosys, out, sizeof out);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		fprintf(stderr, "child: status %#x, output:\n%s\n", (unsigned)st, out);
	CHECK(WIFEXITED(st));
	CHECK_EQ(WEXITSTATUS(st), 0);
}

/* The early filter alone, before a loop exists: io_uring_setup is refused. */
static int child_early(void)
{
	if (kp_sandbox_early() < 0)
		return 100;
	char params[120] = {0};
	return errno_of(syscall(__NR_io_uring_setup, 4, params)) == ENOSYS ? 0 : 1;
}

static void test_early_filter(void)
{
	char out[4096];
	int st = in_child(child_early, out, sizeof out);
	CHECK(WIFEXITED(st));
	CHECK_EQ(WEXITSTATUS(st), 0);
}

static int child_killed(void)
{
	if (confine() < 0)
		return 100;
	syscall(SYS_setpgid, 0, 0);
	return 1;
}

static void test_kill_default(void)
{
	char out[4096];
	int st = in_child(child_killed, out, sizeof out);
	CHECK(WIFSIGNALED(st));
	CHECK_EQ(WIFSIGNALED(st) ? WTERMSIG(st) : 0, SIGSYS);
	CHECK_STR_CONTAINS(out, "seccomp: blocked system call");
}

static volatile sig_atomic_t got_usr1;

static void on_usr1(int sig)
{
	(void)sig;
	got_usr1 = 1;
}

/* Signals to itself pass (raise is tgkill on its own pid), then one to its parent. */
static int child_signals(void)
{
	signal(SIGUSR1, on_usr1);
	if (confine() < 0)
		return 100;
	if (raise(SIGUSR1) != 0 || kill(getpid(), SIGUSR1) != 0 || !got_usr1)
		return 101;
	fprintf(stderr, "own signals delivered\n");
	kill(getppid(), 0);
	return 1;
}

static void test_signals_to_itself_only(void)
{
	char out[4096];
	int st = in_child(child_signals, out, sizeof out);
	CHECK_STR_CONTAINS(out, "own signals delivered");
#if KP_SANDBOX_SANITIZED
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 1); /* sanitizer runtimes signal their symbolizer */
#else
	CHECK(WIFSIGNALED(st));
	CHECK_EQ(WIFSIGNALED(st) ? WTERMSIG(st) : 0, SIGSYS);
	CHECK_STR_CONTAINS(out, "seccomp: blocked system call 62");
#endif
}

static int go;

static void *early_thread(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&go, __ATOMIC_ACQUIRE))
		usleep(1000);
	syscall(SYS_setpgid, 0, 0);
	return NULL;
}

/* A thread started before confinement (rtcd's ICE thread) is confined too. */
static int child_thread(void)
{
	if (kp_sandbox_early() < 0)
		return 100;
	pthread_t t;
	if (pthread_create(&t, NULL, early_thread, NULL) != 0)
		return 101;
	struct kp_sandbox_report rep;
	const char *step;
	if (kp_sandbox_apply(&box, &rep, &step) < 0)
		return 102;
	__atomic_store_n(&go, 1, __ATOMIC_RELEASE);
	pthread_join(t, NULL);
	return 1;
}

static void test_thread_before_confinement(void)
{
	char out[4096];
	int st = in_child(child_thread, out, sizeof out);
	CHECK(WIFSIGNALED(st));
	CHECK_EQ(WIFSIGNALED(st) ? WTERMSIG(st) : 0, SIGSYS);
}

#if KP_SANDBOX_SANITIZED
static volatile int sink;

static int child_report(void)
{
	if (confine() < 0)
		return 100;
	volatile char *p = malloc(8);
	int i = 8;
	sink = p[i]; /* heap-buffer-overflow, or UBSan's report on the way */
	free((void *)p);
	return 1;
}

/* A report from inside the sandbox prints whole: the error, a symbolized stack trace, the
 * summary; the process is not killed by the filter on the way. */
static void test_sanitizer_report(void)
{
	static char out[65536];
	int st = in_child(child_report, out, sizeof out);
	CHECK(!(WIFSIGNALED(st) && WTERMSIG(st) == SIGSYS));
	CHECK(strstr(out, "seccomp: blocked system call") == NULL);
#if defined(__SANITIZE_ADDRESS__) || (defined(__has_feature) && __has_feature(address_sanitizer))
	CHECK_STR_CONTAINS(out, "ERROR: AddressSanitizer: heap-buffer-overflow");
	CHECK_STR_CONTAINS(out, "#0 0x");
	/* Function and line when llvm-symbolizer is installed (install-deps brings it), else
	 * module+offset for offline symbolization: either way, whole. */
	if (strstr(out, "symbolizer!") == NULL) {
		CHECK_STR_CONTAINS(out, "in child_report");
		CHECK_STR_CONTAINS(out, "test_sandbox.c:");
	} else {
		CHECK_STR_CONTAINS(out, "test_sandbox+0x");
	}
	CHECK_STR_CONTAINS(out, "SUMMARY: AddressSanitizer");
#endif
	if (test_failures)
		fprintf(stderr, "child: status %#x, output:\n%s\n", (unsigned)st, out);
}
#endif

int main(void)
{
	RUN(test_early_filter);
	RUN(test_enosys_answers);
	RUN(test_kill_default);
	RUN(test_signals_to_itself_only);
	RUN(test_thread_before_confinement);
#if KP_SANDBOX_SANITIZED
	RUN(test_sanitizer_report);
#endif
	return TEST_EXIT();
}
