/* spawn-bench: what starting a worker costs keeppeekd, libuv's uv_spawn (fork + exec, the
 * parent waiting on a pipe until the exec) against keeppeekd's kp_spawn (posix_spawn:
 * clone(CLONE_VM | CLONE_VFORK) + exec, supervisor/proc_spawn.c), from a process shaped
 * like keeppeekd (libcrypto initialised, --dirty-kib of written heap: a running
 * keeppeekd has 1.8-3.3 MiB of private dirty memory). Interleaved, --runs of each, the
 * program started being the real worker with --version (it exits at once):
 *   blocked: wall time inside the spawn call;
 *   after:   the parent's next write to every page of its heap, wall time and the minor
 *            faults it takes (a fork leaves every page copy-on-write);
 *   cpu:     the parent's CPU time (getrusage) over the call and the writes.
 * Prints one JSON object; p50/p95 nearest rank.
 *   spawn-bench --program BUILD/recorderd/keeppeek-recorderd [--runs 200] [--dirty-kib 2048] */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <uv.h>

#include "proc_spawn.h"

static uint64_t now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static uint64_t cpu_ns(long *minflt)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	*minflt = ru.ru_minflt;
	return (uint64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000ull +
	       (uint64_t)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000ull;
}

static int exited;

static void on_uv_exit(uv_process_t *h, int64_t status, int sig)
{
	(void)status;
	(void)sig;
	exited = 1;
	uv_close((uv_handle_t *)h, NULL);
}

static void on_kp_exit(struct kp_child *c, int64_t status, int sig)
{
	(void)c;
	(void)status;
	(void)sig;
	exited = 1;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double rank(double *v, int n, double q)
{
	qsort(v, (size_t)n, sizeof *v, cmp);
	int i = (int)(q * n + 0.999999) - 1;
	return v[i < 0 ? 0 : i];
}

int main(int argc, char **argv)
{
	const char *program = NULL;
	int runs = 200, c;
	size_t dirty = 2048 * 1024;
	static const struct option opts[] = {{"program", required_argument, NULL, 'p'},
					     {"runs", required_argument, NULL, 'r'},
					     {"dirty-kib", required_argument, NULL, 'd'},
					     {NULL, 0, NULL, 0}};
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (c == 'p')
			program = optarg;
		else if (c == 'r')
			runs = atoi(optarg);
		else if (c == 'd')
			dirty = (size_t)atol(optarg) * 1024;
		else
			return 2;
	}
	if (!program || runs < 1) {
		fprintf(stderr, "usage: spawn-bench --program PATH [--runs N] [--dirty-kib K]\n");
		return 2;
	}
	/* The workers print their version on fd 1: the report goes to a copy of it. */
	int out_fd = dup(STDOUT_FILENO), null_fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
	FILE *out = out_fd >= 0 ? fdopen(out_fd, "w") : NULL;
	if (!out || null_fd < 0 || dup2(null_fd, STDOUT_FILENO) < 0)
		return 1;
	OPENSSL_init_crypto(0, NULL);
	EVP_MD *md = EVP_MD_fetch(NULL, "SHA256", NULL);
	uint8_t *heap = malloc(dirty);
	if (!heap || !md)
		return 1;
	memset(heap, 1, dirty);
	uv_loop_t *loop = uv_default_loop();
	if (kp_spawn_init(loop) < 0)
		return 1;
	double *m[2][5];
	for (int k = 0; k < 2; k++)
		for (int j = 0; j < 5; j++)
			m[k][j] = calloc((size_t)runs, sizeof(double));
	for (int i = 0; i < runs; i++) {
		for (int k = 0; k < 2; k++) {
			int sv[2];
			if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
				return 1;
			char *args[] = {(char *)program, "--version", NULL};
			uv_stdio_container_t stdio[4] = {{.flags = UV_IGNORE},
							 {.flags = UV_INHERIT_FD, .data.fd = STDOUT_FILENO},
							 {.flags = UV_INHERIT_FD, .data.fd = STDERR_FILENO},
							 {.flags = UV_INHERIT_FD, .data.fd = sv[1]}};
			uv_process_options_t opt = {
			    .exit_cb = on_uv_exit, .file = program, .args = args, .stdio_count = 4, .stdio = stdio};
			uv_process_t *h = malloc(sizeof *h); /* freed never: a few hundred bytes a run */
			struct kp_child child = {.on_exit = on_kp_exit};
			long f0, f1, f2;
			uint64_t c0 = cpu_ns(&f0), t0 = now_ns();
			int r = k == 0 ? uv_spawn(loop, h, &opt) : kp_spawn(&child, program, sv[1]);
			uint64_t t1 = now_ns();
			cpu_ns(&f1);
			for (size_t o = 0; o < dirty; o += 4096)
				heap[o]++;
			uint64_t t2 = now_ns(), c2 = cpu_ns(&f2);
			close(sv[0]);
			close(sv[1]);
			if (r < 0) {
				fprintf(stderr, "spawn-bench: spawning %s: %s\n", program, strerror(-r));
				return 1;
			}
			exited = 0;
			while (!exited)
				uv_run(loop, UV_RUN_ONCE);
			m[k][0][i] = (double)(t1 - t0) / 1e6;
			m[k][1][i] = (double)(t2 - t1) / 1e6;
			m[k][2][i] = (double)(f2 - f1);
			m[k][3][i] = (double)(c2 - c0) / 1e6;
			m[k][4][i] = (double)(f1 - f0);
		}
	}
	const char *names[2] = {"uv_spawn", "posix_spawn"};
	const char *keys[5] = {"blocked_ms", "after_writes_ms", "after_minor_faults", "cpu_ms", "call_minor_faults"};
	fprintf(out, "{\"program\":\"%s\",\"runs\":%d,\"dirty_kib\":%zu", program, runs, dirty / 1024);
	for (int k = 0; k < 2; k++) {
		fprintf(out, ",\"%s\":{", names[k]);
		for (int j = 0; j < 5; j++)
			fprintf(out, "%s\"%s\":{\"p50\":%.4f,\"p95\":%.4f}", j ? "," : "", keys[j],
				rank(m[k][j], runs, 0.5), rank(m[k][j], runs, 0.95));
		fprintf(out, "}");
	}
	fprintf(out, "}\n");
	return fclose(out) == 0 ? 0 : 1;
}
