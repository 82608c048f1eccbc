/* Demo mode (SPEC section 3): the embedded configuration with two simulated cameras and
 * the keeppeek-test-camera processes behind them (Baichuan TCP with AES and H.264, RTSP
 * with H.265, main and sub each), started, restarted with backoff and stopped by
 * keeppeekd alongside its workers. */
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kp_build_config.h"
#include "log.h"
#include "self_path.h"
#include "supervisor.h"

#define DEMO_CAMERAS 2

struct demo_camera {
	struct supervisor *s;
	const char *name;
	char args[18][4096];
	uv_process_t handle;
	uv_timer_t timer;
	bool running;
	unsigned failures;
};

static struct demo_camera demo[DEMO_CAMERAS];
static char password[17];
static uint16_t ports[DEMO_CAMERAS];

static int free_port(int type, uint16_t *ret)
{
	int fd = socket(AF_INET, type | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof sa;
	int r = bind(fd, (struct sockaddr *)&sa, sizeof sa) == 0 && getsockname(fd, (struct sockaddr *)&sa, &len) == 0
		    ? 0
		    : -errno;
	close(fd);
	if (r == 0)
		*ret = ntohs(sa.sin_port);
	return r;
}

static bool in_build_tree(void)
{
	char self[4096];
	if (kp_self_path(self, sizeof self) < 0)
		return false;
	return KP_BUILD_TREE_RUNS && !strncmp(self, KP_BUILD_ROOT "/", strlen(KP_BUILD_ROOT) + 1);
}

int demo_config(char *buf, size_t len)
{
	uint8_t rnd[8];
	if (getrandom(rnd, sizeof rnd, 0) != sizeof rnd)
		return -EIO;
	for (int i = 0; i < 8; i++)
		snprintf(password + 2 * i, 3, "%02x", rnd[i]);
	for (int i = 0; i < DEMO_CAMERAS; i++) {
		int r = free_port(SOCK_STREAM, &ports[i]);
		if (r < 0)
			return r;
	}
	int n = snprintf(buf, len,
			 "[keeppeek]\ndata_dir = ./keeppeek-demo\n[web]\nlisten = 127.0.0.1:8080\n"
			 "[camera \"demo-baichuan\"]\nurl = baichuan://admin:%s@127.0.0.1:%u/?channel=0\n"
			 "[camera \"demo-rtsp\"]\nurl = rtsp://admin:%s@127.0.0.1:%u/main\n"
			 "sub_url = rtsp://admin:%s@127.0.0.1:%u/sub\n",
			 password, ports[0], password, ports[1], password, ports[1]);
	return n > 0 && (size_t)n < len ? 0 : -ENOSPC;
}

static void spawn(struct demo_camera *d);

static void on_timer(uv_timer_t *t)
{
	struct demo_camera *d = t->data;
	if (!d->s->stopping)
		spawn(d);
}

static void on_closed(uv_handle_t *h)
{
	struct demo_camera *d = h->data;
	d->running = false;
	if (d->s->stopping)
		proc_stop_all(d->s);
}

static void on_exit_cb(uv_process_t *h, int64_t status, int sig)
{
	struct demo_camera *d = h->data;
	if (!d->s->stopping) {
		unsigned shift = d->failures < 5 ? d->failures : 5;
		d->failures++;
		kp_warn("demo camera %s exited (status %lld, signal %d); restarting in %u ms", d->name,
			(long long)status, sig, 1000u << shift);
		uv_timer_start(&d->timer, on_timer, 1000u << shift, 0);
	}
	uv_close((uv_handle_t *)h, on_closed);
}

static void spawn(struct demo_camera *d)
{
	char *argv[19];
	int n = 0;
	for (; n < 18 && d->args[n][0]; n++)
		argv[n] = d->args[n];
	argv[n] = NULL;
	uv_stdio_container_t stdio[3] = {
	    {.flags = UV_IGNORE},
	    {.flags = UV_IGNORE},
	    {.flags = UV_INHERIT_FD, .data.fd = STDERR_FILENO},
	};
	uv_process_options_t opt = {
	    .exit_cb = on_exit_cb,
	    .file = argv[0],
	    .args = argv,
	    .stdio_count = 3,
	    .stdio = stdio,
	};
	if (d->s->change_uid) {
		opt.flags = UV_PROCESS_SETUID | UV_PROCESS_SETGID;
		opt.uid = d->s->uid;
		opt.gid = d->s->gid;
	}
	d->handle.data = d;
	int r = uv_spawn(d->s->loop, &d->handle, &opt);
	if (r < 0) {
		kp_err("demo camera %s: cannot start %s: %s", d->name, argv[0], uv_strerror(r));
		uv_close((uv_handle_t *)&d->handle, NULL);
		uv_timer_start(&d->timer, on_timer, 5000, 0);
		return;
	}
	d->running = true;
	kp_info("demo camera %s started (pid %d)", d->name, d->handle.pid);
}

void demo_start(struct supervisor *s)
{
	bool tree = in_build_tree();
	char camera[4096], fixtures[4096];
	snprintf(camera, sizeof camera, "%s",
		 tree ? KP_BUILD_ROOT "/test/camera/keeppeek-test-camera" : KP_BINDIR "/keeppeek-test-camera");
	snprintf(fixtures, sizeof fixtures, "%s", tree ? KP_BUILD_ROOT "/test/fixtures" : KP_FIXTURESDIR);
	static const char *const codecs[DEMO_CAMERAS] = {"h264", "h265"};
	static const char *const names[DEMO_CAMERAS] = {"demo-baichuan", "demo-rtsp"};
	static const char *const port_opts[DEMO_CAMERAS] = {"--baichuan-port", "--rtsp-port"};
	/* Sound as each kind of camera sends it: Reolink's DVI-4 ADPCM, AAC over RTSP. */
	static const char *const audio[DEMO_CAMERAS] = {"audio_adpcm.wav", "audio.aac"};
	for (int i = 0; i < DEMO_CAMERAS; i++) {
		struct demo_camera *d = &demo[i];
		d->s = s;
		d->name = names[i];
		int a = 0;
		snprintf(d->args[a++], sizeof d->args[0], "%s", camera);
		snprintf(d->args[a++], sizeof d->args[0], "--main");
		snprintf(d->args[a++], sizeof d->args[0], "%s/main.%s", fixtures, codecs[i]);
		snprintf(d->args[a++], sizeof d->args[0], "--sub");
		snprintf(d->args[a++], sizeof d->args[0], "%s/sub.%s", fixtures, codecs[i]);
		snprintf(d->args[a++], sizeof d->args[0], "%s", port_opts[i]);
		snprintf(d->args[a++], sizeof d->args[0], "%u", ports[i]);
		snprintf(d->args[a++], sizeof d->args[0], "--password");
		snprintf(d->args[a++], sizeof d->args[0], "%s", password);
		snprintf(d->args[a++], sizeof d->args[0], "--encryption");
		snprintf(d->args[a++], sizeof d->args[0], "aes");
		snprintf(d->args[a++], sizeof d->args[0], "--audio");
		snprintf(d->args[a++], sizeof d->args[0], "%s/%s", fixtures, audio[i]);
		snprintf(d->args[a++], sizeof d->args[0], "--motion-interval");
		snprintf(d->args[a++], sizeof d->args[0], "30");
		snprintf(d->args[a++], sizeof d->args[0], "--parent");
		snprintf(d->args[a++], sizeof d->args[0], "%d", (int)getpid());
		uv_timer_init(s->loop, &d->timer);
		d->timer.data = d;
		spawn(d);
	}
}

/* Sends sig to the demo cameras; true while one still runs (proc_stop_all waits). */
bool demo_stop(struct supervisor *s, int sig)
{
	bool any = false;
	for (int i = 0; i < DEMO_CAMERAS; i++) {
		struct demo_camera *d = &demo[i];
		if (!d->s)
			continue;
		if (!uv_is_closing((uv_handle_t *)&d->timer)) {
			uv_timer_stop(&d->timer);
			uv_close((uv_handle_t *)&d->timer, NULL);
		}
		if (d->running) {
			uv_process_kill(&d->handle, sig);
			any = true;
		}
	}
	(void)s;
	return any;
}
