/* Unit tests for the libuv IPC link over a real socketpair: frames with tails and passed
 * descriptors arrive intact, a corked link holds its frames until uncorked and then
 * delivers them in order (several per sendmsg, descriptors with their own frame), the
 * send queue refuses frames past its ceilings, a write that fails inside a send or an
 * uncork is reported from the loop afterwards (never from inside the call), and a
 * malformed or truncated stream closes the link once with a precise reason. */
#include <errno.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ipc.h"
#include "test.h"

struct rx {
	int frames;
	size_t tail_bytes;
	int tail_ok;
	int fd_ok;
	int errors;
	uint64_t next_seq; /* HealthRequest seq expected next */
	int out_of_order;
	char reason[160];
	struct kp_ipc *ipc;
};

static void on_frame(struct kp_ipc *c, struct kp_ipc_frame *f, void *arg)
{
	struct rx *rx = arg;
	(void)c;
	rx->frames++;
	rx->tail_bytes += f->tail_len;
	if (f->env->which_msg == kp_Envelope_health_request_tag && f->env->msg.health_request.seq != rx->next_seq++)
		rx->out_of_order++;
	if (f->tail_len) {
		int ok = 1;
		for (size_t i = 0; i < f->tail_len; i++)
			ok &= f->tail[i] == (uint8_t)(i * 7);
		rx->tail_ok += ok;
	}
	if (f->nfds == 1) {
		char buf[8] = {0};
		if (pread(f->fds[0], buf, 5, 0) == 5 && !memcmp(buf, "hello", 5))
			rx->fd_ok++;
	}
}

static void on_error(struct kp_ipc *c, int err, const char *reason, void *arg)
{
	struct rx *rx = arg;
	(void)err;
	rx->errors++;
	snprintf(rx->reason, sizeof rx->reason, "%s", reason);
	kp_ipc_destroy(c);
	rx->ipc = NULL;
}

static const struct kp_ipc_limits peer = {.from = kp_Peer_PEER_INGESTD,
					  .to = kp_Peer_PEER_RECORDERD,
					  .max_tail = 4 * 1024 * 1024,
					  .queue_items = 64,
					  .queue_bytes = 32 * 1024 * 1024};

static void pair(int sv[2])
{
	CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
}

static void run_for(uv_loop_t *loop, int ms)
{
	uint64_t end = uv_now(loop) + (uint64_t)ms;
	while (uv_now(loop) < end) {
		uv_run(loop, UV_RUN_NOWAIT);
		usleep(1000);
		uv_update_time(loop);
	}
}

static kp_Envelope hello(void)
{
	kp_Envelope env = kp_Envelope_init_zero;
	env.which_msg = kp_Envelope_peer_hello_tag;
	env.msg.peer_hello.from = kp_Peer_PEER_INGESTD;
	return env;
}

static void test_frames_tails_fds(void)
{
	uv_loop_t loop;
	uv_loop_init(&loop);
	int sv[2];
	pair(sv);
	struct rx a = {0}, b = {0};
	CHECK_EQ(kp_ipc_open(&loop, sv[0], &peer, on_frame, on_error, &a, &a.ipc), 0);
	CHECK_EQ(kp_ipc_open(&loop, sv[1], &peer, on_frame, on_error, &b, &b.ipc), 0);
	static uint8_t tail[3 * 1024 * 1024];
	for (size_t i = 0; i < sizeof tail; i++)
		tail[i] = (uint8_t)(i * 7);
	char path[] = "/tmp/kp-ipc-XXXXXX";
	int fd = mkstemp(path);
	CHECK(fd >= 0);
	unlink(path);
	CHECK_EQ(write(fd, "hello", 5), 5);
	kp_Envelope env = hello();
	for (int i = 0; i < 5; i++)
		CHECK_EQ(kp_ipc_send(a.ipc, &env, tail, sizeof tail, NULL, 0), 0);
	CHECK_EQ(kp_ipc_send(a.ipc, &env, NULL, 0, NULL, 0), 0);
	for (int i = 0; i < 100 && b.frames < 6; i++)
		run_for(&loop, 50);
	CHECK_EQ(b.frames, 6);
	CHECK_EQ(b.tail_ok, 5);
	CHECK_EQ(b.tail_bytes, 5 * sizeof tail);
	CHECK_EQ(b.errors, 0);
	struct kp_ipc_stats st;
	kp_ipc_get_stats(a.ipc, &st);
	CHECK_EQ(st.frames_out, 6);
	CHECK_EQ(st.queue_items, 0);
	/* A descriptor crosses only with a message kind that declares one. */
	kp_Envelope ln = kp_Envelope_init_zero;
	ln.which_msg = kp_Envelope_link_new_tag;
	struct kp_ipc_limits worker_side = peer;
	worker_side.from = kp_Peer_PEER_SUPERVISOR;
	int sv2[2];
	pair(sv2);
	struct rx c = {0}, d = {0};
	CHECK_EQ(kp_ipc_open(&loop, sv2[0], &peer, on_frame, on_error, &c, &c.ipc), 0);
	CHECK_EQ(kp_ipc_open(&loop, sv2[1], &worker_side, on_frame, on_error, &d, &d.ipc), 0);
	CHECK_EQ(kp_ipc_send(c.ipc, &ln, NULL, 0, &fd, 1), 0);
	CHECK_EQ(kp_ipc_send(c.ipc, &ln, NULL, 0, &fd, 1), 0);
	for (int i = 0; i < 100 && d.frames < 2; i++)
		run_for(&loop, 50);
	CHECK_EQ(d.frames, 2);
	CHECK_EQ(d.fd_ok, 2);
	close(fd);
	kp_ipc_destroy(a.ipc);
	kp_ipc_destroy(b.ipc);
	kp_ipc_destroy(c.ipc);
	kp_ipc_destroy(d.ipc);
	run_for(&loop, 10);
	CHECK_EQ(uv_loop_close(&loop), 0);
}

/* Corked: nothing leaves; uncorked: all of it, in order, the descriptors with the frames
 * that carry them (each such frame starts its own sendmsg). */
static void test_cork(void)
{
	uv_loop_t loop;
	uv_loop_init(&loop);
	int sv[2];
	pair(sv);
	struct kp_ipc_limits from_sup = peer, roomy = peer;
	from_sup.from = kp_Peer_PEER_SUPERVISOR;
	roomy.queue_items = 256; /* a corked link's frames count against its ceilings */
	struct rx a = {0}, b = {0};
	CHECK_EQ(kp_ipc_open(&loop, sv[0], &roomy, on_frame, on_error, &a, &a.ipc), 0);
	CHECK_EQ(kp_ipc_open(&loop, sv[1], &from_sup, on_frame, on_error, &b, &b.ipc), 0);
	char path[] = "/tmp/kp-ipc-XXXXXX";
	int fd = mkstemp(path);
	CHECK(fd >= 0);
	unlink(path);
	CHECK_EQ(write(fd, "hello", 5), 5);
	kp_Envelope ln = kp_Envelope_init_zero;
	ln.which_msg = kp_Envelope_link_new_tag;
	kp_HealthRequest hr = kp_HealthRequest_init_zero;
	struct kp_frame_msg m = {
	    .which = kp_Envelope_health_request_tag, .fields = kp_HealthRequest_fields, .msg = &hr};
	enum { N = 150 };
	kp_ipc_cork(a.ipc);
	for (int i = 0, seq = 0; i < N; i++) {
		if (i == 0 || i == 70 || i == N - 1) {
			CHECK_EQ(kp_ipc_send(a.ipc, &ln, NULL, 0, &fd, 1), 0);
			continue;
		}
		hr.seq = (uint64_t)seq++;
		CHECK_EQ(kp_ipc_send_msg(a.ipc, &m, NULL, 0, NULL, 0), 0);
	}
	run_for(&loop, 50);
	CHECK_EQ(b.frames, 0);
	struct kp_ipc_stats st;
	kp_ipc_get_stats(a.ipc, &st);
	CHECK_EQ(st.queue_items, N);
	CHECK_EQ(st.frames_out, 0);
	kp_ipc_uncork(a.ipc);
	for (int i = 0; i < 100 && b.frames < N; i++)
		run_for(&loop, 20);
	CHECK_EQ(b.frames, N);
	CHECK_EQ(b.fd_ok, 3);
	CHECK_EQ(b.next_seq, N - 3);
	CHECK_EQ(b.out_of_order, 0);
	CHECK_EQ(b.errors, 0);
	kp_ipc_get_stats(a.ipc, &st);
	CHECK_EQ(st.queue_items, 0);
	CHECK_EQ(st.frames_out, N);
	close(fd);
	kp_ipc_destroy(a.ipc);
	kp_ipc_destroy(b.ipc);
	run_for(&loop, 10);
	CHECK_EQ(uv_loop_close(&loop), 0);
}

static void test_queue_ceilings(void)
{
	uv_loop_t loop;
	uv_loop_init(&loop);
	int sv[2];
	pair(sv);
	struct rx a = {0};
	struct kp_ipc_limits small = peer;
	small.queue_items = 4;
	small.queue_bytes = 6 * 1024 * 1024;
	CHECK_EQ(kp_ipc_open(&loop, sv[0], &small, on_frame, on_error, &a, &a.ipc), 0);
	static uint8_t tail[1024 * 1024];
	kp_Envelope env = hello();
	/* Nobody reads sv[1]: the socket buffer fills, then the queue, then sends fail. */
	int sent = 0, rejected = 0;
	for (int i = 0; i < 32; i++) {
		int r = kp_ipc_send(a.ipc, &env, tail, sizeof tail, NULL, 0);
		if (r == 0)
			sent++;
		else if (r == -ENOBUFS)
			rejected++;
	}
	CHECK(sent > 0);
	CHECK(rejected > 0);
	struct kp_ipc_stats st;
	kp_ipc_get_stats(a.ipc, &st);
	CHECK(st.queue_items <= 4);
	CHECK(st.queue_bytes <= 6 * 1024 * 1024);
	CHECK_EQ(st.send_rejected, rejected);
	/* Small frames are refused by the item ceiling alone. */
	kp_ipc_destroy(a.ipc);
	close(sv[1]);
	run_for(&loop, 10);
	CHECK_EQ(uv_loop_close(&loop), 0);
}

/* The peer is gone: the send (or the uncork) that finds it out returns, and only the
 * loop runs the error callback, once. The callback destroys the link, as rtcd's does
 * (on_peer_error): before, it ran inside kp_ipc_send and freed what its caller was
 * still using (rtcd's transcode job, a use-after-free in CI). */
static void test_write_error_deferred(void)
{
	for (int corked = 0; corked < 2; corked++) {
		uv_loop_t loop;
		uv_loop_init(&loop);
		int sv[2];
		pair(sv);
		struct rx a = {0};
		CHECK_EQ(kp_ipc_open(&loop, sv[0], &peer, on_frame, on_error, &a, &a.ipc), 0);
		kp_Envelope env = hello();
		if (corked) {
			kp_ipc_cork(a.ipc);
			CHECK_EQ(kp_ipc_send(a.ipc, &env, NULL, 0, NULL, 0), 0);
		}
		close(sv[1]);
		if (corked)
			kp_ipc_uncork(a.ipc);
		else
			CHECK_EQ(kp_ipc_send(a.ipc, &env, NULL, 0, NULL, 0), -EPIPE);
		CHECK_EQ(a.errors, 0);
		CHECK(a.ipc != NULL);
		CHECK_EQ(kp_ipc_send(a.ipc, &env, NULL, 0, NULL, 0), -EPIPE);
		CHECK_EQ(a.errors, 0);
		for (int i = 0; i < 50 && !a.errors; i++)
			run_for(&loop, 10);
		CHECK_EQ(a.errors, 1);
		CHECK(a.ipc == NULL);
		run_for(&loop, 10);
		CHECK_EQ(a.errors, 1);
		CHECK_EQ(uv_loop_close(&loop), 0);
	}
}

static void expect_reason_on(kp_Peer from, const uint8_t *bytes, size_t len, int close_after, const char *want)
{
	uv_loop_t loop;
	uv_loop_init(&loop);
	int sv[2];
	pair(sv);
	struct rx b = {0};
	struct kp_ipc_limits lim = peer;
	lim.from = from;
	CHECK_EQ(kp_ipc_open(&loop, sv[1], &lim, on_frame, on_error, &b, &b.ipc), 0);
	CHECK_EQ(write(sv[0], bytes, len), (ssize_t)len);
	if (close_after)
		close(sv[0]);
	run_for(&loop, 50);
	CHECK_EQ(b.errors, 1);
	CHECK_EQ(b.frames, 0);
	CHECK_STR_CONTAINS(b.reason, want);
	if (!close_after)
		close(sv[0]);
	run_for(&loop, 10);
	CHECK_EQ(uv_loop_close(&loop), 0);
}

static void expect_reason(const uint8_t *bytes, size_t len, int close_after, const char *want)
{
	expect_reason_on(kp_Peer_PEER_INGESTD, bytes, len, close_after, want);
}

static void test_malformed_streams(void)
{
	const uint8_t zero_len[] = {0, 0, 0, 0};
	expect_reason(zero_len, sizeof zero_len, 0, "empty frame");
	const uint8_t over[] = {0xff, 0xff, 0xff, 0x7f};
	expect_reason(over, sizeof over, 0, "exceeds the schema maximum");
	const uint8_t garbage[] = {5, 0, 0, 0, 0x82, 0x01, 0x20, 0x08, 0x01};
	expect_reason(garbage, sizeof garbage, 0, "does not decode");
	/* tail_len of 64 MiB on a 4 MiB link. */
	const uint8_t big_tail[] = {9, 0, 0, 0, 0x08, 0x80, 0x80, 0x80, 0x20, 0x7a, 0x02, 0x08, 0x02};
	expect_reason(big_tail, sizeof big_tail, 0, "raw tail exceeds the link ceiling");
	/* Shutdown is a supervisor's message, not a peer's. */
	const uint8_t wrong_sender[] = {3, 0, 0, 0, 0x9a, 0x01, 0x00};
	expect_reason(wrong_sender, sizeof wrong_sender, 0, "not accepted from this sender");
	/* A LinkNew that declares a descriptor which never arrives. */
	const uint8_t no_fd[] = {4, 0, 0, 0, 0x10, 0x01, 0x6a, 0x00};
	expect_reason_on(kp_Peer_PEER_SUPERVISOR, no_fd, sizeof no_fd, 0, "did not arrive");
	const uint8_t truncated[] = {5, 0, 0, 0, 0x7a, 0x02};
	expect_reason(truncated, sizeof truncated, 1, "inside a frame");
	const uint8_t nothing[] = {0};
	expect_reason(nothing, 0, 1, "peer closed the link");
}

int main(void)
{
	RUN(test_frames_tails_fds);
	RUN(test_cork);
	RUN(test_queue_ceilings);
	RUN(test_write_error_deferred);
	RUN(test_malformed_streams);
	return TEST_EXIT();
}
