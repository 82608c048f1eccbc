/* webd/mqtt_client.c's bounds, one past each (keeppeek-webd(8) LIMITS, mqtt): event
 * messages wait up to MQC_QUEUE_ITEMS messages and MQC_QUEUE_BYTES, the one past pushes
 * out the oldest, counted as dropped, and a message larger than the whole queue is
 * dropped alone; retained values take up to MQC_RETAIN_BYTES together, the value that
 * would pass it is refused (-ENOSPC), counted, and the value before it kept. Filled while
 * nothing is connected, then Debian's mosquitto (started here on a loopback port) and a
 * subscriber of this file receive exactly what was kept: every retained value's last
 * accepted version and the queued events in order, nothing refused or pushed out. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <mosquitto.h>
#include <netinet/in.h>
#include <pwd.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <uv.h>

#include "kp_limits.h"
#include "kp_time.h"
#include "log.h"
#include "mqtt.h"
#include "test.h"

#define MAX_GOT 1024

extern char **environ;

static uv_loop_t loop;
static int port;
static pid_t broker;

/* What the subscriber received: topic and payload length, in order. */
static struct {
	char topic[64];
	size_t len;
} got[MAX_GOT];
static unsigned ngot;
static bool subscribed;

static int free_port(void)
{
	int s = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t al = sizeof a;
	CHECK(s >= 0 && bind(s, (struct sockaddr *)&a, sizeof a) == 0 &&
	      getsockname(s, (struct sockaddr *)&a, &al) == 0);
	close(s);
	return ntohs(a.sin_port);
}

static bool listening(void)
{
	int s = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {
	    .sin_family = AF_INET, .sin_port = htons((uint16_t)port), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	bool ok = s >= 0 && connect(s, (struct sockaddr *)&a, sizeof a) == 0;
	if (s >= 0)
		close(s);
	return ok;
}

static void start_broker(const char *dir)
{
	char conf[256], log[256];
	snprintf(conf, sizeof conf, "%s/mosquitto.conf", dir);
	snprintf(log, sizeof log, "%s/mosquitto.log", dir);
	FILE *f = fopen(conf, "w");
	CHECK(f != NULL);
	if (!f)
		exit(1);
	/* Started as root, mosquitto would become user mosquitto. */
	struct passwd *pw = getpwuid(getuid());
	fprintf(f, "user %s\npersistence false\nallow_anonymous true\nlistener %d 127.0.0.1\n",
		pw ? pw->pw_name : "root", port);
	CHECK_EQ(fclose(f), 0);
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 1, log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	posix_spawn_file_actions_adddup2(&fa, 1, 2);
	char *argv[] = {"mosquitto", "-c", conf, NULL};
	int r = posix_spawnp(&broker, "mosquitto", &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (r != 0) {
		fprintf(stderr, "cannot start mosquitto (Debian package mosquitto): %s\n", strerror(r));
		exit(1);
	}
	uint64_t until = kp_mono_ms() + 10000;
	while (!listening() && kp_mono_ms() < until)
		usleep(20000);
	CHECK(listening());
}

static void on_message(struct mosquitto *m, void *arg, const struct mosquitto_message *msg)
{
	(void)m;
	(void)arg;
	CHECK(ngot < MAX_GOT);
	if (ngot >= MAX_GOT)
		return;
	snprintf(got[ngot].topic, sizeof got[ngot].topic, "%s", msg->topic);
	got[ngot++].len = (size_t)msg->payloadlen;
}

static void on_subscribe(struct mosquitto *m, void *arg, int mid, int n, const int *qos)
{
	(void)m;
	(void)arg;
	(void)mid;
	(void)n;
	(void)qos;
	subscribed = true;
}

static uint8_t *big;

static void queue(const char *name, size_t len)
{
	char topic[64];
	snprintf(topic, sizeof topic, "kp/ev/%s", name);
	mqc_queue(topic, big, len);
}

static void check_metrics(unsigned queued, size_t bytes, uint64_t dropped, uint64_t retain_refused)
{
	struct mqc_metrics m;
	mqc_metrics(&m);
	CHECK_EQ(m.queued, queued);
	CHECK_EQ(m.queue_bytes, bytes);
	CHECK_EQ(m.dropped, dropped);
	CHECK_EQ(m.retain_refused, retain_refused);
}

int main(void)
{
	kp_log_init("test_webd_mqtt_client");
	CHECK_EQ(uv_loop_init(&loop), 0);
	big = calloc(1, MQC_RETAIN_BYTES / 2 + 1);
	CHECK(big != NULL);
	if (!big)
		return 1;
	port = free_port();
	mqc_init(&loop);
	struct mqc_conf conf = {.port = (unsigned)port, .qos = 1};
	snprintf(conf.host, sizeof conf.host, "127.0.0.1");
	snprintf(conf.client_id, sizeof conf.client_id, "test-mqc");
	snprintf(conf.will_topic, sizeof conf.will_topic, "kp/available");
	CHECK_EQ(mqc_configure(&conf), 0);
	/* Nothing connects while the loop does not run: everything below waits. */

	/* Bytes: eight messages of 1 MiB fill the queue exactly; one byte more pushes out
	 * the oldest; a message larger than the queue is dropped alone. */
	char name[16];
	for (unsigned i = 0; i < 8; i++) {
		snprintf(name, sizeof name, "b%u", i);
		queue(name, MQC_QUEUE_BYTES / 8);
	}
	check_metrics(8, MQC_QUEUE_BYTES, 0, 0);
	queue("b8", 1);
	check_metrics(8, MQC_QUEUE_BYTES - MQC_QUEUE_BYTES / 8 + 1, 1, 0);
	queue("huge", MQC_QUEUE_BYTES + 1);
	check_metrics(8, MQC_QUEUE_BYTES - MQC_QUEUE_BYTES / 8 + 1, 2, 0);
	/* Items: up to MQC_QUEUE_ITEMS, then one past pushes out the oldest (b1). */
	for (unsigned i = 0; i < MQC_QUEUE_ITEMS - 8; i++) {
		snprintf(name, sizeof name, "a%u", i);
		queue(name, 2);
	}
	size_t bytes = MQC_QUEUE_BYTES - MQC_QUEUE_BYTES / 8 + 1 + 2 * (MQC_QUEUE_ITEMS - 8);
	check_metrics(MQC_QUEUE_ITEMS, bytes, 2, 0);
	snprintf(name, sizeof name, "a%u", MQC_QUEUE_ITEMS - 8);
	queue(name, 2);
	check_metrics(MQC_QUEUE_ITEMS, bytes - MQC_QUEUE_BYTES / 8 + 2, 3, 0);

	/* Retained: two halves fill the bound exactly; a byte more is refused, and so is a
	 * replacement that would pass it (the old value stays); a smaller one makes room. */
	CHECK_EQ(mqc_set("kp/snap/0", big, MQC_RETAIN_BYTES / 2), 0);
	CHECK_EQ(mqc_set("kp/snap/1", big, MQC_RETAIN_BYTES / 2), 0);
	CHECK_EQ(mqc_set("kp/snap/2", big, 1), -ENOSPC);
	CHECK_EQ(mqc_set("kp/snap/1", big, MQC_RETAIN_BYTES / 2 + 1), -ENOSPC);
	struct mqc_metrics m;
	mqc_metrics(&m);
	CHECK_EQ(m.retain_refused, 2);
	CHECK_EQ(mqc_set("kp/snap/1", big, MQC_RETAIN_BYTES / 4), 0);
	CHECK_EQ(mqc_set("kp/snap/2", big, 1), 0);
	mqc_metrics(&m);
	CHECK_EQ(m.retain_refused, 2);
	CHECK_EQ(m.queued, MQC_QUEUE_ITEMS + 3);

	/* The broker, a subscriber, then the loop: what was kept arrives. */
	char dir[] = "/tmp/test_webd_mqtt_client.XXXXXX";
	CHECK(mkdtemp(dir) != NULL);
	start_broker(dir);
	struct mosquitto *sub = mosquitto_new("test-sub", true, NULL);
	CHECK(sub != NULL);
	if (!sub)
		return 1;
	mosquitto_message_callback_set(sub, on_message);
	mosquitto_subscribe_callback_set(sub, on_subscribe);
	CHECK_EQ(mosquitto_connect(sub, "127.0.0.1", port, 30), MOSQ_ERR_SUCCESS);
	CHECK_EQ(mosquitto_subscribe(sub, NULL, "kp/#", 1), MOSQ_ERR_SUCCESS);
	uint64_t until = kp_mono_ms() + 10000;
	while (!subscribed && kp_mono_ms() < until)
		mosquitto_loop(sub, 50, 1);
	CHECK(subscribed);
	const unsigned want = MQC_QUEUE_ITEMS + 3; /* the events and three snapshots */
	until = kp_mono_ms() + 30000;
	while (kp_mono_ms() < until) {
		uv_run(&loop, UV_RUN_NOWAIT);
		mosquitto_loop(sub, 10, 1);
		mqc_metrics(&m);
		if (ngot >= want && m.queued == 0 && m.inflight == 0)
			break;
	}
	/* A few more turns: nothing else comes. */
	for (unsigned i = 0; i < 20; i++) {
		uv_run(&loop, UV_RUN_NOWAIT);
		mosquitto_loop(sub, 10, 1);
	}
	unsigned ev = 0, bad = 0;
	bool snap[3] = {false, false, false};
	for (unsigned i = 0; i < ngot; i++) {
		if (!strncmp(got[i].topic, "kp/snap/", 8)) {
			unsigned k = (unsigned)(got[i].topic[8] - '0');
			size_t len = k == 0 ? MQC_RETAIN_BYTES / 2 : k == 1 ? MQC_RETAIN_BYTES / 4 : 1;
			CHECK(k < 3 && !snap[k] && got[i].len == len);
			if (k < 3)
				snap[k] = true;
			continue;
		}
		/* The events in order: b2..b8, then a0..a248. */
		if (ev < 7)
			snprintf(name, sizeof name, "kp/ev/b%u", ev + 2);
		else
			snprintf(name, sizeof name, "kp/ev/a%u", ev - 7);
		size_t len = ev < 6 ? MQC_QUEUE_BYTES / 8 : ev == 6 ? 1 : 2;
		if (strcmp(got[i].topic, name) != 0 || got[i].len != len) {
			if (bad++ < 3)
				fprintf(stderr, "event %u: got %s (%zu bytes), want %s (%zu bytes)\n", ev, got[i].topic,
					got[i].len, name, len);
		}
		ev++;
	}
	CHECK_EQ(bad, 0);
	CHECK_EQ(ev, MQC_QUEUE_ITEMS);
	CHECK(snap[0] && snap[1] && snap[2]);
	mqc_metrics(&m);
	CHECK_EQ(m.dropped, 3);
	CHECK_EQ(m.queued, 0);

	mosquitto_destroy(sub);
	mqc_close();
	uv_run(&loop, UV_RUN_DEFAULT);
	kill(broker, SIGTERM);
	waitpid(broker, NULL, 0);
	char cmd[300];
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	CHECK_EQ(system(cmd), 0);
	free(big);
	return TEST_EXIT();
}
