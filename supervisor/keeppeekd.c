/* keeppeekd: the supervisor. Parses the configuration (or the embedded demo one),
 * prepares data and run directories, opens the control socket, hands the privsep engine
 * (proc.c) the process table (workers.c) and its hooks, which start the four workers
 * and keep them running; SIGHUP reloads, SIGTERM/SIGINT stops everything. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <linux/close_range.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "auth.h"
#include "kp_build_config.h"
#include "log.h"
#include "self_path.h"
#include "supervisor.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: keeppeekd [-n] [-c FILE] [--demo] [--data-dir DIR] [--listen HOST:PORT]\n"
		   "                 [--libexec-dir DIR] [-V|--version]\n");
}

static int make_dir(const char *path, mode_t mode)
{
	if (mkdir(path, mode) < 0 && errno != EEXIST)
		return -errno;
	struct stat st;
	if (stat(path, &st) < 0)
		return -errno;
	return S_ISDIR(st.st_mode) ? 0 : -ENOTDIR;
}

static int absolute(char *path, size_t len)
{
	char real[PATH_MAX];
	if (!realpath(path, real))
		return -errno;
	if ((size_t)snprintf(path, len, "%s", real) >= len)
		return -ENAMETOOLONG;
	return 0;
}

/* Workers run as the configured user when keeppeekd starts as root; as nobody when that
 * user does not exist (a build-tree run), with a warning. */
static int resolve_user(struct supervisor *s)
{
	if (geteuid() != 0) {
		s->change_uid = false;
		kp_info("started as uid %u: workers keep this uid", (unsigned)geteuid());
		return 0;
	}
	struct passwd *pw = getpwnam(s->cfg.user.val);
	s->control_group = pw != NULL;
	if (!pw) {
		kp_warn("user '%s' does not exist; workers run as nobody and only root may use the control socket",
			s->cfg.user.val);
		pw = getpwnam("nobody");
	}
	if (!pw || pw->pw_uid == 0) {
		kp_err("no unprivileged user to run workers as");
		return -ESRCH;
	}
	s->change_uid = true;
	s->uid = pw->pw_uid;
	s->gid = pw->pw_gid;
	return 0;
}

static int prepare_dirs(struct supervisor *s)
{
	struct kp_config *c = &s->cfg;
	int r = make_dir(c->data_dir.val, 0750);
	if (r == 0)
		r = absolute(c->data_dir.val, sizeof c->data_dir.val);
	if (r < 0) {
		kp_err("data_dir %s: %s", c->data_dir.val, strerror(-r));
		return r;
	}
	r = make_dir(c->run_dir.val, 0755);
	if (r == 0)
		r = absolute(c->run_dir.val, sizeof c->run_dir.val);
	if (r < 0) {
		kp_err("run_dir %s: %s", c->run_dir.val, strerror(-r));
		return r;
	}
	if (s->change_uid && chown(c->data_dir.val, s->uid, s->gid) < 0) {
		kp_err("data_dir %s: cannot give it to uid %u: %s", c->data_dir.val, (unsigned)s->uid, strerror(errno));
		return -errno;
	}
	return 0;
}

static void write_pidfile(const char *run_dir)
{
	char path[PATH_MAX];
	snprintf(path, sizeof path, "%s/keeppeekd.pid", run_dir);
	FILE *f = fopen(path, "we");
	if (!f) {
		kp_warn("cannot write %s: %s", path, strerror(errno));
		return;
	}
	fprintf(f, "%d\n", (int)getpid());
	fclose(f);
}

/* The engine's hooks: what to tell a worker comes from the process table (workers.c);
 * the rest of the supervisor (service manager, demo cameras, control socket, signals)
 * is started and closed here. */
static bool others_running(struct supervisor *s, int sig)
{
	return s->demo && demo_stop(s, sig);
}

static void stopped(struct supervisor *s)
{
	uv_close((uv_handle_t *)&s->sig_term, NULL);
	uv_close((uv_handle_t *)&s->sig_int, NULL);
	uv_close((uv_handle_t *)&s->sig_hup, NULL);
	service_close(s);
	discover_close();
	camera_test_close();
	transcoder_close(s);
	links_close(s);
	control_close(s);
}

static const struct proc_hooks hooks = {
    .spawned = workers_spawned,
    .exited = workers_exited,
    .ping = workers_ping,
    .ask_stop = workers_ask_stop,
    .stopping = service_stopping,
    .others_running = others_running,
    .stopped = stopped,
};

static void on_signal(uv_signal_t *h, int sig)
{
	struct supervisor *s = h->data;
	if (sig == SIGHUP) {
		char msg[4096];
		supervisor_reload(s, msg, sizeof msg);
		return;
	}
	kp_info("signal %d: stopping", sig);
	proc_stop_all(s);
}

static void www_dir(struct supervisor *s)
{
	struct stat st;
	const char *tree = KP_SOURCE_ROOT "/www";
	char self[PATH_MAX];
	bool in_tree = KP_BUILD_TREE_RUNS && kp_self_path(self, sizeof self) == 0 &&
		       !strncmp(self, KP_BUILD_ROOT "/", strlen(KP_BUILD_ROOT) + 1);
	snprintf(s->www_dir, sizeof s->www_dir, "%s", in_tree && stat(tree, &st) == 0 ? tree : KP_WWWDIR);
}

/* Descriptors the launching shell or service manager left open reach no worker: every
 * one from 3 up is made close-on-exec before anything else is opened. */
static void seal_inherited_fds(void)
{
	if (close_range(3, ~0u, CLOSE_RANGE_CLOEXEC) == 0)
		return;
	DIR *d = opendir("/proc/self/fd"); /* kernels before 5.11 */
	if (!d)
		return;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		int fd = atoi(e->d_name);
		if (fd >= 3 && fd != dirfd(d))
			(void)fcntl(fd, F_SETFD, FD_CLOEXEC);
	}
	closedir(d);
}

int main(int argc, char **argv)
{
	static struct supervisor s;
	seal_inherited_fds();
	static struct kp_config_errors errs;
	const char *config_path = KP_SYSCONFDIR "/keeppeek.conf";
	const char *data_dir = NULL, *listen = NULL, *libexec_dir = NULL;
	bool check_only = false;
	enum { OPT_DEMO = 256, OPT_DATA_DIR, OPT_LISTEN, OPT_LIBEXEC };
	static const struct option longopts[] = {
	    {"demo", no_argument, NULL, OPT_DEMO},
	    {"data-dir", required_argument, NULL, OPT_DATA_DIR},
	    {"listen", required_argument, NULL, OPT_LISTEN},
	    {"libexec-dir", required_argument, NULL, OPT_LIBEXEC},
	    {"version", no_argument, NULL, 'V'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	int c;
	kp_log_init("keeppeekd");
	while ((c = getopt_long(argc, argv, "c:nVh", longopts, NULL)) != -1) {
		switch (c) {
		case 'c':
			config_path = optarg;
			break;
		case 'n':
			check_only = true;
			break;
		case 'V':
			printf("keeppeekd %s\n", KP_VERSION);
			return 0;
		case 'h':
			usage(stdout);
			return 0;
		case OPT_DEMO:
			s.demo = true;
			break;
		case OPT_DATA_DIR:
			data_dir = optarg;
			break;
		case OPT_LISTEN:
			listen = optarg;
			break;
		case OPT_LIBEXEC:
			libexec_dir = optarg;
			break;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc) {
		usage(stderr);
		return 2;
	}
	static char demo_text[4096];
	int r = 0;
	if (s.demo && (r = demo_config(demo_text, sizeof demo_text)) < 0) {
		fprintf(stderr, "keeppeekd: cannot prepare the demo configuration: %s\n", strerror(-r));
		return 1;
	}
	r = s.demo ? kp_config_load_string("demo configuration", demo_text, &s.cfg, &errs)
		   : kp_config_load_file(config_path, &s.cfg, &errs);
	if (r < 0) {
		fputs(errs.text, stderr);
		return 1;
	}
	if (!s.demo)
		snprintf(s.config_path, sizeof s.config_path, "%s", config_path);
	if (data_dir) {
		snprintf(s.cfg.data_dir.val, sizeof s.cfg.data_dir.val, "%s", data_dir);
		snprintf(s.cfg.data_dir.raw, sizeof s.cfg.data_dir.raw, "%s", data_dir);
	}
	if (listen) {
		char bad[KP_CONF_STR + 64];
		if (kp_config_check_listen(listen, bad, sizeof bad) < 0) {
			fprintf(stderr, "keeppeekd: --listen: %s\n", bad);
			return 2;
		}
		snprintf(s.cfg.listen.val, sizeof s.cfg.listen.val, "%s", listen);
		snprintf(s.cfg.listen.raw, sizeof s.cfg.listen.raw, "%s", listen);
	}
	/* The demo's UI on a loopback address means the browser runs on this machine: offer
	 * WebRTC host candidates on loopback only (keeppeekd(8)). */
	if (s.demo && !strncmp(s.cfg.listen.val, "127.", 4) && !strchr(s.cfg.listen.val, ','))
		snprintf(s.cfg.rtc_addresses.val, sizeof s.cfg.rtc_addresses.val, "127.0.0.1");
	if (s.demo && (size_t)snprintf(s.cfg.run_dir.val, sizeof s.cfg.run_dir.val, "%s/run", s.cfg.data_dir.val) >=
			  sizeof s.cfg.run_dir.val) {
		fprintf(stderr, "keeppeekd: data directory path too long\n");
		return 1;
	}
	if (check_only) {
		printf("%s: ok\n", s.demo ? "demo configuration" : config_path);
		return 0;
	}

	signal(SIGPIPE, SIG_IGN);
	if (notify_init() < 0)
		kp_warn("NOTIFY_SOCKET is not an AF_UNIX path or @name; the service manager is not told when "
			"keeppeekd is ready");
	/* First: from here on a client is queued, not refused (listen.c). */
	if (listen_init(&s) < 0)
		return 1;
	s.loop = uv_default_loop();
	if (resolve_user(&s) < 0)
		return 1;
	if (prepare_dirs(&s) < 0)
		return 1;
	if (s.demo && (size_t)snprintf(s.cfg.run_dir.val, sizeof s.cfg.run_dir.val, "%s/run", s.cfg.data_dir.val) >=
			  sizeof s.cfg.run_dir.val) {
		kp_err("data directory path too long: %s", s.cfg.data_dir.val);
		return 1;
	}
	www_dir(&s);
	if (auth_init(&s) < 0)
		return 1;
	char path[PATH_MAX + 32], err[512] = "";
	snprintf(path, sizeof path, "%s/control.sock", s.cfg.run_dir.val);
	r = control_open(&s, path, control_run, err, sizeof err);
	if (r < 0) {
		kp_err("control socket: %s", err[0] ? err : strerror(-r));
		return 1;
	}
	write_pidfile(s.cfg.run_dir.val);
	kp_info("keeppeekd %s starting: data_dir %s, control socket %s%s", KP_VERSION, s.cfg.data_dir.val, path,
		s.demo ? " (demo)" : "");
	if (s.demo)
		kp_notice("demo: two simulated cameras (keeppeek-test-camera); web UI on http://%s/", s.cfg.listen.val);

	uv_signal_t *sigs[] = {&s.sig_term, &s.sig_int, &s.sig_hup};
	int signums[] = {SIGTERM, SIGINT, SIGHUP};
	for (unsigned i = 0; i < 3; i++) {
		uv_signal_init(s.loop, sigs[i]);
		sigs[i]->data = &s;
		uv_signal_start(sigs[i], on_signal, signums[i]);
	}
	s.generation = 1;
	links_init(&s);
	if ((r = kp_spawn_init(s.loop)) < 0) {
		kp_err("cannot watch SIGCHLD for the workers' exits: %s", uv_strerror(r));
		return 1;
	}
	proc_table_init(&s, libexec_dir, workers_table, &hooks);
	proc_start_all(&s);
	service_start(&s);
	if (s.demo)
		demo_start(&s);
	uv_run(s.loop, UV_RUN_DEFAULT);
	char pidfile[PATH_MAX + 32];
	snprintf(pidfile, sizeof pidfile, "%s/keeppeekd.pid", s.cfg.run_dir.val);
	unlink(pidfile);
	uv_loop_close(s.loop);
	kp_info("stopped");
	return s.exit_code;
}
