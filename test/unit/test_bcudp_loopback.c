/* End-to-end test of the BCUDP transport on real sockets: ingestd's client transport
 * (bcudp_connect) talks to the test camera's BCUDP server through a loopback relay that
 * drops 5% of datagrams each way, with the server's own 5% first-transmission loss and
 * reordering on top. An echo stands in for the Baichuan session on the server side;
 * 5 MB go each way and are checked byte for byte. Also: the handshake timeout, silence,
 * and a hole held open long enough to fill the client's receive window, which must
 * keep its ACK vector short of the length at which the camera hangs up. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "bc_transport.h"
#include "bcudp_packet.h"
#include "bcudp_server.h"
#include "bcudp_window.h"
#include "test.h"

#define TOTAL (5u * 1000u * 1000u)

static uint8_t pattern(uint64_t offset)
{
	return (uint8_t)((offset * 131) ^ (offset >> 8) ^ (offset >> 17));
}

/* The lossy relay: one socket facing the client, one facing the server. */
struct relay {
	uv_udp_t front, back;
	struct sockaddr_storage client, server;
	bool have_client, blackhole;
	unsigned loss_percent;
	uint32_t rng;
	uint64_t dropped, forwarded;
	/* The hole: every transmission of the camera's data packet hole_id is dropped for
	 * hole_ms after its first one; the longest SACK vector the client sent is kept. */
	bool hole;
	uint32_t hole_id;
	unsigned hole_ms;
	uint64_t hole_until_ns, hole_drops;
	size_t max_sack;
};

static struct bcudp_packet relay_pkt;

static uint8_t relay_buf[65536];

static void relay_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	(void)h;
	(void)suggested;
	*buf = uv_buf_init((char *)relay_buf, sizeof relay_buf);
}

static bool relay_drop(struct relay *r)
{
	r->rng ^= r->rng << 13;
	r->rng ^= r->rng >> 17;
	r->rng ^= r->rng << 5;
	return r->rng % 100 < r->loss_percent;
}

static void relay_forward(struct relay *r, uv_udp_t *via, const struct sockaddr_storage *to, const uv_buf_t *buf,
			  ssize_t n)
{
	if (r->blackhole || relay_drop(r)) {
		r->dropped++;
		return;
	}
	uv_buf_t b = uv_buf_init(buf->base, (unsigned)n);
	if (uv_udp_try_send(via, &b, 1, (const struct sockaddr *)to) >= 0)
		r->forwarded++;
}

static void relay_front_recv(uv_udp_t *h, ssize_t n, const uv_buf_t *buf, const struct sockaddr *addr, unsigned f)
{
	struct relay *r = h->data;
	(void)f;
	if (n <= 0 || !addr)
		return;
	memcpy(&r->client, addr, sizeof(struct sockaddr_in));
	r->have_client = true;
	const char *reason;
	if (r->hole && bcudp_parse((const uint8_t *)buf->base, (size_t)n, &relay_pkt, &reason) == 0 &&
	    relay_pkt.kind == BCUDP_ACK && relay_pkt.ack.sack_len > r->max_sack)
		r->max_sack = relay_pkt.ack.sack_len;
	relay_forward(r, &r->back, &r->server, buf, n);
}

static void relay_back_recv(uv_udp_t *h, ssize_t n, const uv_buf_t *buf, const struct sockaddr *addr, unsigned f)
{
	struct relay *r = h->data;
	(void)f;
	(void)addr;
	if (n <= 0 || !r->have_client)
		return;
	const char *reason;
	if (r->hole && bcudp_parse((const uint8_t *)buf->base, (size_t)n, &relay_pkt, &reason) == 0 &&
	    relay_pkt.kind == BCUDP_DATA && relay_pkt.data.packet_id == r->hole_id) {
		uint64_t now = uv_hrtime();
		if (!r->hole_until_ns)
			r->hole_until_ns = now + (uint64_t)r->hole_ms * 1000000u;
		if (now < r->hole_until_ns) {
			r->hole_drops++;
			return;
		}
	}
	relay_forward(r, &r->front, &r->client, buf, n);
}

static uint16_t local_port(uv_udp_t *u)
{
	struct sockaddr_in a;
	int len = sizeof a;
	uv_udp_getsockname(u, (struct sockaddr *)&a, &len);
	return ntohs(a.sin_port);
}

/* A camera on loopback at port, by UID (NULL: looked up with C2D_S first). */
static struct bcudp_target at(uint16_t port, const char *uid)
{
	return (struct bcudp_target){.host = "127.0.0.1", .port = port, .port_given = true, .uid = uid};
}

static void relay_start(uv_loop_t *loop, struct relay *r, uint16_t server_port)
{
	struct sockaddr_in any;
	uv_ip4_addr("127.0.0.1", 0, &any);
	uv_ip4_addr("127.0.0.1", server_port, (struct sockaddr_in *)&r->server);
	r->rng = 99991;
	r->loss_percent = 5;
	uv_udp_init(loop, &r->front);
	uv_udp_init(loop, &r->back);
	r->front.data = r->back.data = r;
	CHECK_EQ(uv_udp_bind(&r->front, (const struct sockaddr *)&any, 0), 0);
	CHECK_EQ(uv_udp_bind(&r->back, (const struct sockaddr *)&any, 0), 0);
	int size = 1024 * 1024;
	uv_recv_buffer_size((uv_handle_t *)&r->front, &size);
	size = 1024 * 1024;
	uv_recv_buffer_size((uv_handle_t *)&r->back, &size);
	uv_udp_recv_start(&r->front, relay_alloc, relay_front_recv);
	uv_udp_recv_start(&r->back, relay_alloc, relay_back_recv);
}

/* The server side: an echo that also checks what the client sent. */
struct echo {
	struct cam_bcudp_link *link;
	uint64_t received, mismatches;
	int write_errors;
};
static struct echo echo_state;
static int echo_sessions, echo_frees;

static void *echo_open(void *arg, struct cam_bcudp_link *link)
{
	(void)arg;
	echo_sessions++;
	echo_state.link = link;
	return &echo_state;
}

static void echo_input(void *session, const uint8_t *data, size_t len)
{
	struct echo *e = session;
	for (size_t i = 0; i < len; i++)
		e->mismatches += data[i] != pattern(e->received + i);
	e->received += len;
	if (cam_bcudp_link_write(e->link, data, len) < 0)
		e->write_errors++;
}

static void echo_free(void *session)
{
	(void)session;
	echo_frees++;
}

/* The test camera's BCUDP server on a loopback port of its own, serving the echo. */
static struct cam_bcudp_server *echo_server(uv_loop_t *loop, const struct cam_faults *faults)
{
	struct cam_bcudp_app app = {.open = echo_open, .input = echo_input, .free = echo_free};
	struct cam_bcudp_server *srv = NULL;
	CHECK_EQ(cam_bcudp_server_start(loop, "127.0.0.1", 0, CAM_DEFAULT_UID, faults, &app, &srv), 0);
	return srv;
}

/* The client side. */
struct client {
	uv_loop_t *loop;
	struct bc_transport *t;
	uv_timer_t writer, deadline;
	struct cam_bcudp_server *srv;
	struct relay *relay;
	bool connected, done, failed;
	int err;
	const char *reason;
	uint64_t written, received, mismatches;
	struct cam_bcudp_server_stats srv_stats; /* copied before the server stops */
};

static void finish(struct client *c)
{
	if (c->done)
		return;
	c->done = true;
	c->t->ops->close(c->t);
	uv_close((uv_handle_t *)&c->writer, NULL);
	uv_close((uv_handle_t *)&c->deadline, NULL);
	if (c->srv) {
		c->srv_stats = *cam_bcudp_server_stats(c->srv);
		cam_bcudp_server_stop(c->srv);
	}
	if (c->relay) {
		uv_close((uv_handle_t *)&c->relay->front, NULL);
		uv_close((uv_handle_t *)&c->relay->back, NULL);
	}
}

static void write_more(struct client *c)
{
	static uint8_t chunk[4000];
	while (c->connected && c->written < TOTAL) {
		size_t n = TOTAL - c->written < sizeof chunk ? TOTAL - c->written : sizeof chunk;
		for (size_t i = 0; i < n; i++)
			chunk[i] = pattern(c->written + i);
		int r = c->t->ops->write(c->t, chunk, n);
		if (r == -ENOBUFS)
			return; /* the writer timer tries again */
		CHECK_EQ(r, 0);
		if (r < 0)
			return;
		c->written += n;
	}
}

static void on_writer(uv_timer_t *t)
{
	write_more(t->data);
}

static void on_connected(void *arg)
{
	struct client *c = arg;
	c->connected = true;
	write_more(c);
}

static void on_data(void *arg, const uint8_t *data, size_t len)
{
	struct client *c = arg;
	for (size_t i = 0; i < len; i++)
		c->mismatches += data[i] != pattern(c->received + i);
	c->received += len;
	if (c->received >= TOTAL)
		finish(c);
}

static void on_error(void *arg, int err, const char *reason)
{
	struct client *c = arg;
	c->failed = true;
	c->err = err;
	c->reason = reason;
	finish(c);
}

static void on_deadline(uv_timer_t *t)
{
	struct client *c = t->data;
	fprintf(stderr, "deadline: written %llu, received %llu\n", (unsigned long long)c->written,
		(unsigned long long)c->received);
	c->failed = true;
	finish(c);
}

static const struct bc_transport_cbs cbs = {.on_connected = on_connected, .on_data = on_data, .on_error = on_error};

/* 5 MB each way through the relay (set up by prepare, after relay_start); the client
 * state is left in c for the caller's checks. */
static void run_echo(const struct cam_faults *faults, const char *uid, struct relay *relay,
		     void (*prepare)(struct relay *), struct client *c_out)
{
	uv_loop_t loop;
	uv_loop_init(&loop);
	struct cam_bcudp_server *srv = echo_server(&loop, faults);
	memset(relay, 0, sizeof *relay);
	relay_start(&loop, relay, cam_bcudp_server_port(srv));
	if (prepare)
		prepare(relay);
	memset(&echo_state, 0, sizeof echo_state);
	echo_sessions = echo_frees = 0;

	static struct client c;
	memset(&c, 0, sizeof c);
	c.loop = &loop;
	c.srv = srv;
	c.relay = relay;
	uv_timer_init(&loop, &c.writer);
	uv_timer_init(&loop, &c.deadline);
	c.writer.data = c.deadline.data = &c;
	uv_timer_start(&c.writer, on_writer, 5, 5);
	uv_timer_start(&c.deadline, on_deadline, 60000, 0);
	struct bcudp_target target = at(local_port(&relay->front), uid);
	CHECK_EQ(bcudp_connect(&loop, &target, 5000, &cbs, &c, &c.t), 0);

	uint64_t start = uv_hrtime();
	while (!c.done)
		uv_run(&loop, UV_RUN_ONCE);
	uv_run(&loop, UV_RUN_DEFAULT);
	fprintf(stderr, "5 MB each way in %.2f s\n", (double)(uv_hrtime() - start) / 1e9);
	CHECK_EQ(uv_loop_close(&loop), 0);
	*c_out = c;
}

static void test_five_megabytes_each_way(void)
{
	static struct relay relay;
	struct cam_faults faults = {.udp_loss_percent = 5, .udp_reorder = true};
	struct client c;
	run_echo(&faults, NULL, &relay, NULL, &c);
	CHECK(!c.failed);
	CHECK(c.srv_stats.lookups >= 1); /* no UID configured: asked with C2D_S first */
	if (c.reason)
		fprintf(stderr, "transport error %d: %s\n", c.err, c.reason);
	CHECK_EQ(c.written, TOTAL);
	CHECK_EQ(echo_state.received, TOTAL);
	CHECK_EQ(echo_state.mismatches, 0);
	CHECK_EQ(echo_state.write_errors, 0);
	CHECK_EQ(c.received, TOTAL);
	CHECK_EQ(c.mismatches, 0);
	CHECK_EQ(echo_sessions, 1);
	CHECK_EQ(echo_frees, 1);
	CHECK(relay.dropped > 100);
	CHECK_EQ(c.srv_stats.clients, 1);
	CHECK(c.srv_stats.fault_dropped > 100);
	CHECK(c.srv_stats.fault_reordered > 100);
	CHECK(c.srv_stats.retransmits > 100);
	fprintf(stderr,
		"relay dropped %llu of %llu datagrams; server: %llu fault drops, %llu swaps, %llu retransmits\n",
		(unsigned long long)relay.dropped, (unsigned long long)(relay.dropped + relay.forwarded),
		(unsigned long long)c.srv_stats.fault_dropped, (unsigned long long)c.srv_stats.fault_reordered,
		(unsigned long long)c.srv_stats.retransmits);
}

static void open_hole(struct relay *r)
{
	r->loss_percent = 0;
	r->hole = true;
	r->hole_id = 40;
	r->hole_ms = 1500;
}

/* One packet of the camera's is lost for 1.5 s while it keeps sending (its window is
 * wider than the client's): the client's receive window fills, and its ACK vector stays
 * at most KP_BCUDP_ACK_VECTOR_MAX entries, short of the ~205 at which the camera hangs up.
 * Before the cap the vector reached 255 entries here and the camera hung up. */
static void test_hole_fills_the_window(void)
{
	static struct relay relay;
	struct cam_faults faults = {0};
	struct client c;
	run_echo(&faults, CAM_DEFAULT_UID, &relay, open_hole, &c);
	if (c.reason)
		fprintf(stderr, "transport error %d: %s\n", c.err, c.reason);
	fprintf(stderr, "hole: %llu transmissions of packet 40 dropped; longest ACK vector %zu entries\n",
		(unsigned long long)relay.hole_drops, relay.max_sack);
	CHECK(!c.failed);
	CHECK(relay.hole_drops >= 2);
	CHECK(relay.max_sack == KP_BCUDP_ACK_VECTOR_MAX); /* the vector really reached its cap */
	CHECK(relay.max_sack <= KP_BCUDP_ACK_VECTOR_MAX);
	CHECK(relay.max_sack < BCUDP_CAMERA_ACK_LIMIT);
	CHECK_EQ(c.srv_stats.ack_vector_hangups, 0);
	CHECK_EQ(c.srv_stats.lookups, 0); /* the UID was configured */
	CHECK_EQ(c.received, TOTAL);
	CHECK_EQ(c.mismatches, 0);
	CHECK_EQ(echo_state.received, TOTAL);
	CHECK_EQ(echo_state.mismatches, 0);
}

/* Nothing answers: the handshake gives up after timeout_ms with a reason. */
static void test_handshake_timeout(void)
{
	uv_loop_t loop;
	uv_loop_init(&loop);
	uv_udp_t silent;
	struct sockaddr_in any;
	uv_ip4_addr("127.0.0.1", 0, &any);
	uv_udp_init(&loop, &silent);
	uv_udp_bind(&silent, (const struct sockaddr *)&any, 0);
	static struct client c;
	c.loop = &loop;
	uv_timer_init(&loop, &c.writer);
	uv_timer_init(&loop, &c.deadline);
	c.writer.data = c.deadline.data = &c;
	uv_timer_start(&c.deadline, on_deadline, 10000, 0);
	uint64_t start = uv_now(&loop);
	struct bcudp_target target = at(local_port(&silent), CAM_DEFAULT_UID);
	CHECK_EQ(bcudp_connect(&loop, &target, 700, &cbs, &c, &c.t), 0);
	while (!c.done)
		uv_run(&loop, UV_RUN_ONCE);
	uv_close((uv_handle_t *)&silent, NULL);
	uv_run(&loop, UV_RUN_DEFAULT);
	CHECK(c.failed);
	CHECK_EQ(c.err, -ETIMEDOUT);
	CHECK(c.reason && strstr(c.reason, "D2C_C_R"));
	uint64_t took = uv_now(&loop) - start;
	CHECK(took >= 700 && took < 5000);
	CHECK_EQ(uv_loop_close(&loop), 0);
}

/* The network goes silent after the handshake: the client gives up after 10 s with a
 * reason, and the server drops the idle client (and frees its session) too. */
static uint64_t silent_start, silent_error_at;
static int silent_err;
static const char *silent_reason;
static struct relay silent_relay;

static void silent_connected(void *arg)
{
	(void)arg;
	silent_relay.blackhole = true;
	silent_start = uv_hrtime();
}

static void silent_data(void *arg, const uint8_t *data, size_t len)
{
	(void)arg;
	(void)data;
	(void)len;
}

static void silent_error(void *arg, int err, const char *reason)
{
	(void)arg;
	silent_err = err;
	silent_reason = reason;
	silent_error_at = uv_hrtime();
}

static void test_silence_timeouts(void)
{
	uv_loop_t loop;
	uv_loop_init(&loop);
	struct cam_faults faults = {0};
	struct cam_bcudp_server *srv = echo_server(&loop, &faults);
	relay_start(&loop, &silent_relay, cam_bcudp_server_port(srv));
	static const struct bc_transport_cbs silent_cbs = {
	    .on_connected = silent_connected, .on_data = silent_data, .on_error = silent_error};
	struct bc_transport *t;
	int frees_before = echo_frees;
	struct bcudp_target target = at(local_port(&silent_relay.front), NULL);
	CHECK_EQ(bcudp_connect(&loop, &target, 2000, &silent_cbs, NULL, &t), 0);
	uint64_t give_up = uv_hrtime() + 20 * 1000000000ull;
	while ((!silent_reason || cam_bcudp_server_stats(srv)->idle_timeouts == 0) && uv_hrtime() < give_up)
		uv_run(&loop, UV_RUN_ONCE);
	CHECK_EQ(silent_err, -ETIMEDOUT);
	CHECK(silent_reason && strstr(silent_reason, "no packet from camera for 10 s"));
	double waited = (double)(silent_error_at - silent_start) / 1e9;
	CHECK(waited > 9.5 && waited < 11.5);
	CHECK_EQ(cam_bcudp_server_stats(srv)->idle_timeouts, 1);
	CHECK_EQ(echo_frees, frees_before + 1);
	t->ops->close(t);
	cam_bcudp_server_stop(srv);
	uv_close((uv_handle_t *)&silent_relay.front, NULL);
	uv_close((uv_handle_t *)&silent_relay.back, NULL);
	uv_run(&loop, UV_RUN_DEFAULT);
	CHECK_EQ(uv_loop_close(&loop), 0);
}

/* A camera answers only a C2D_C that names its UID: another UID times out with a reason
 * that says so, and the camera counts what it ignored. */
static void test_wrong_uid(void)
{
	uv_loop_t loop;
	uv_loop_init(&loop);
	struct cam_faults faults = {0};
	struct cam_bcudp_server *srv = echo_server(&loop, &faults);
	static struct client c;
	memset(&c, 0, sizeof c);
	c.loop = &loop;
	uv_timer_init(&loop, &c.writer);
	uv_timer_init(&loop, &c.deadline);
	c.writer.data = c.deadline.data = &c;
	uv_timer_start(&c.deadline, on_deadline, 10000, 0);
	struct bcudp_target target = at(cam_bcudp_server_port(srv), "95270000NOTTHIS1");
	CHECK_EQ(bcudp_connect(&loop, &target, 1200, &cbs, &c, &c.t), 0);
	while (!c.done)
		uv_run(&loop, UV_RUN_ONCE);
	CHECK(c.failed);
	CHECK_EQ(c.err, -ETIMEDOUT);
	CHECK(c.reason && strstr(c.reason, "UID"));
	const struct cam_bcudp_server_stats *st = cam_bcudp_server_stats(srv);
	CHECK(st->wrong_uid >= 2); /* the first C2D_C and at least one resend */
	CHECK_EQ(st->clients, 0);
	cam_bcudp_server_stop(srv);
	uv_run(&loop, UV_RUN_DEFAULT);
	CHECK_EQ(uv_loop_close(&loop), 0);
}

int main(void)
{
	RUN(test_handshake_timeout);
	RUN(test_wrong_uid);
	RUN(test_five_megabytes_each_way);
	RUN(test_hole_fills_the_window);
	RUN(test_silence_timeouts);
	return TEST_EXIT();
}
