/* Stored playback end to end over real IPC, without a browser: this program forks a
 * worker built like rtcd (common/worker.c runtime, rtcd's confinement: seccomp NET, no
 * file system) that runs playback.c, while the parent plays its supervisor and its
 * recorderd, answering MediaOpen with recorderd's own span logic (recorderd/media.c) as
 * MediaPiece frames with the descriptors of a real recording (fixture sub.h264, 12 s, a
 * new file every second). The worker's script checks: opening at 3.5 s starts at the
 * keyframe at 3 s with SPS/PPS; frames follow 40 ms apart in recorded order across files
 * and across answers (a cursor queues the pieces of at most 3 files and asks for the
 * rest later); pause stops them and play resumes where it stopped; a seek to 8.2 s
 * resumes at the keyframe at 8 s; 8x hands out keyframes only and the cursor reports it
 * ended after the last one; a server holds 1,024 cursors and refuses the 1,025th with
 * EMFILE; a cursor whose request recorderd leaves unanswered reports an error after 10
 * s. */
#include <errno.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "../../rtcd/media.h"
#include "catalog_keys.h"
#include "ipc.h"
#include "kp_limits.h"
#include "sandbox.h"
#include "test.h"
#include "test_rtc_playback_fixture.h"
#include "worker.h"
#include "../../recorderd/media.h" /* recorderd's span logic (both are media.h) */

static struct recorded rec;

/* ---------------- the worker (child) ---------------- */

enum phase { OPENED, PAUSED, RESUMED, SEEKING, FAST, ENDED, MANY };

static struct {
	struct kp_worker *w;
	struct rtc_cursor *c;
	enum phase phase;
	unsigned aus, phase_aus;
	int64_t last_wall, paused_at_wall;
	uint64_t phase_start_ns, paused_ns;
	unsigned files_seen;
	bool ended_reported;
	uv_timer_t timer;
	struct rtc_cursor *many[KP_RTC_CURSORS_PER_SERVER];
	unsigned nmany;
	struct rtc_cursor *silent;
	uint64_t silent_ms; /* uv_now when the silent cursor opened */
	bool script_done;
	unsigned base_fds;
} ws;

static int64_t at(int64_t ms)
{
	return rec.wall0 + ms;
}

static bool starts_with_sps(const struct rtc_au *au)
{
	return au->len > 5 && !memcmp(au->data, "\0\0\0\1", 4) && (au->data[4] & 0x1f) == 7;
}

/* Open descriptors (Landlock hides /proc: probe them). */
static unsigned count_fds(void)
{
	unsigned n = 0;
	for (int fd = 0; fd < 4096; fd++)
		n += fcntl(fd, F_GETFD) >= 0;
	return n;
}

static void exit_worker(uv_timer_t *t)
{
	(void)t;
	/* Every recording descriptor received was closed: kept ones with their cursors,
	 * the others (late answers to closed cursors) by the link. */
	CHECK_EQ(count_fds(), ws.base_fds);
	fprintf(stderr, "worker: %u access units handed out; %u descriptors open at the end, %u before\n", ws.aus,
		count_fds(), ws.base_fds);
	exit(TEST_EXIT());
}

static void finish(void)
{
	if (ws.silent)
		return;                                 /* the unanswered cursor has not failed yet */
	uv_timer_start(&ws.timer, exit_worker, 500, 0); /* late answers arrive meanwhile */
}

static void open_many(uv_timer_t *t);

static void resume(uv_timer_t *t)
{
	(void)t;
	rtc_cursor_play(ws.c);
}

static void on_au(void *arg, const struct rtc_au *au)
{
	(void)arg;
	ws.aus++;
	ws.phase_aus++;
	CHECK_EQ(au->codec, kp_Codec_CODEC_H264);
	CHECK_EQ(au->width, 640);
	CHECK_EQ(au->height, 360);
	CHECK(!memcmp(au->data, "\0\0\0\1", 4));
	if (au->keyframe)
		CHECK(starts_with_sps(au));
	uint64_t now = uv_hrtime();
	switch (ws.phase) {
	case OPENED:
		if (ws.phase_aus == 1) {
			CHECK(au->keyframe);
			CHECK_EQ(au->wall_ms, at(3000));
			ws.phase_start_ns = now;
		} else {
			CHECK_EQ(au->wall_ms, ws.last_wall + 40);
		}
		if (ws.phase_aus == 100) {
			/* 99 intervals of 40 ms over 4 files, more than one answer holds. */
			uint64_t ms = (now - ws.phase_start_ns) / 1000000;
			CHECK(ms >= 99 * 40 - 60);
			CHECK(ms < 99 * 40 * 3);
			rtc_cursor_pause(ws.c);
			ws.phase = PAUSED;
			ws.paused_at_wall = au->wall_ms;
			ws.paused_ns = now;
			uv_timer_start(&ws.timer, resume, 600, 0);
		}
		break;
	case PAUSED:
		CHECK(0); /* nothing while paused */
		break;
	case RESUMED:
		CHECK_EQ(au->wall_ms, ws.last_wall + 40);
		if (ws.phase_aus == 5) {
			rtc_cursor_seek(ws.c, at(8200));
			ws.phase = SEEKING;
			ws.phase_aus = 0;
		}
		break;
	case SEEKING:
		if (ws.phase_aus == 1) {
			CHECK(au->keyframe);
			CHECK_EQ(au->wall_ms, at(8000));
		} else {
			CHECK_EQ(au->wall_ms, ws.last_wall + 40);
		}
		if (ws.phase_aus == 10) {
			CHECK_EQ(rtc_cursor_rate(ws.c, 3), -EINVAL);
			CHECK_EQ(rtc_cursor_rate(ws.c, 8), 0);
			ws.phase = FAST;
			ws.phase_aus = 0;
		}
		break;
	case FAST:
		CHECK(au->keyframe);
		CHECK_EQ(au->wall_ms, at(9000 + 1000 * (ws.phase_aus - 1)));
		break;
	default:
		CHECK(0);
	}
	ws.last_wall = au->wall_ms;
}

static void on_state(void *arg, const struct rtc_cursor_state *st)
{
	(void)arg;
	CHECK(st->error == NULL);
	if (st->error)
		fprintf(stderr, "cursor error: %s\n", st->error);
	if (ws.phase == PAUSED && st->playing) {
		CHECK((uv_hrtime() - ws.paused_ns) / 1000000 >= 590);
		CHECK_EQ(st->position_ms, ws.paused_at_wall);
		ws.phase = RESUMED;
		ws.phase_aus = 0;
	}
	if (ws.phase == FAST)
		CHECK_EQ(st->rate, 8);
	if (st->ended) {
		CHECK_EQ(ws.phase, FAST);
		CHECK_EQ(ws.phase_aus, 3); /* keyframes at 9, 10, 11 s */
		CHECK_EQ(st->position_ms, at(11000));
		CHECK(!ws.ended_reported);
		ws.ended_reported = true;
		ws.phase = MANY;
		uv_timer_start(&ws.timer, open_many, 10, 10);
	}
}

/* The main cursor stays open; 1,023 more reach the ceiling, in batches so that the link
 * to recorderd drains between them. */
static void open_many(uv_timer_t *t)
{
	for (unsigned i = 0; i < 128 && rtc_cursors_open_count() < KP_RTC_CURSORS_PER_SERVER; i++) {
		struct rtc_cursor *c = rtc_cursor_open(ws.w, "cam-1", 0, at(60000), on_au, NULL, NULL);
		CHECK(c != NULL);
		if (!c)
			break;
		ws.many[ws.nmany++] = c;
	}
	if (rtc_cursors_open_count() < KP_RTC_CURSORS_PER_SERVER)
		return;
	uv_timer_stop(t);
	CHECK_EQ(rtc_cursors_open_count(), 1024);
	errno = 0;
	CHECK(rtc_cursor_open(ws.w, "cam-1", 0, at(60000), on_au, NULL, NULL) == NULL);
	CHECK_EQ(errno, EMFILE);
	rtc_cursor_close(ws.many[0]);
	ws.many[0] = rtc_cursor_open(ws.w, "cam-1", 0, at(60000), on_au, NULL, NULL);
	CHECK(ws.many[0] != NULL);
	for (unsigned i = 0; i < ws.nmany; i++)
		rtc_cursor_close(ws.many[i]);
	rtc_cursor_close(ws.c);
	CHECK_EQ(rtc_cursors_open_count(), ws.silent ? 1 : 0);
	ws.script_done = true;
	finish();
}

static void on_timeout(uv_timer_t *t)
{
	(void)t;
	fprintf(stderr, "worker: script stuck in phase %d after %u access units\n", ws.phase, ws.aus);
	CHECK(0);
	ws.silent = NULL;
	finish();
}

static uv_timer_t deadline;

static void on_silent_state(void *arg, const struct rtc_cursor_state *st)
{
	(void)arg;
	CHECK(st->error && !strcmp(st->error, "recorderd did not answer in time"));
	CHECK(!st->playing);
	/* On the loop's clock, which the cursor's timer runs on (a loaded machine's loop
	 * iteration can start long before the cursor opened, so wall time may show less). */
	CHECK(uv_now(kp_worker_loop(ws.w)) - ws.silent_ms >= 10000);
	rtc_cursor_close(ws.silent); /* from its own callback */
	ws.silent = NULL;
	if (ws.script_done)
		finish();
}

static void worker_configured(struct kp_worker *w, uint32_t generation)
{
	(void)generation;
	ws.w = w;
	uv_timer_init(kp_worker_loop(w), &ws.timer);
	ws.timer.data = NULL;
	uv_timer_init(kp_worker_loop(w), &deadline);
	uv_timer_start(&deadline, on_timeout, 60000, 0);
	ws.c = rtc_cursor_open(w, "cam-1", 0, at(3500), on_au, on_state, NULL);
	CHECK(ws.c != NULL);
	ws.base_fds = count_fds(); /* the loop's, the links' */
	ws.silent_ms = uv_now(kp_worker_loop(w));
	ws.silent = rtc_cursor_open(w, "silent-cam", 0, at(0), on_au, on_silent_state, NULL);
	CHECK(ws.silent != NULL);
}

static void worker_peer_frame(struct kp_worker *w, kp_Peer from, struct kp_ipc_frame *f)
{
	(void)w;
	CHECK_EQ(from, kp_Peer_PEER_RECORDERD);
	if (f->env->which_msg == kp_Envelope_media_piece_tag)
		rtc_playback_on_piece(f);
}

static const struct kp_worker_def worker_def = {
    .name = "rtcd-playback-test",
    .self = kp_Peer_PEER_RTCD,
    .peers = {kp_Peer_PEER_RECORDERD},
    .npeers = 1,
    .fs = KP_WORKER_FS_NONE,
    .rlimit_as = 2048ull * KP_MIB,
    .rlimit_nofile = 4096,
    .syscalls = KP_SYSCALLS_NET,
    .on_configured = worker_configured,
    .on_peer_frame = worker_peer_frame,
};

/* ---------------- supervisor and recorderd (parent) ---------------- */

static struct kp_ipc *sup, *peer;
static unsigned opens;

static void send_piece(const kp_MediaOpen *m, const struct rec_span *sp, unsigned i)
{
	const struct rec_piece *p = &sp->p[i];
	unsigned file = 0;
	while (file < rec.nfiles && rec.files[file].id != sp->recs[p->rec].id)
		file++;
	CHECK(file < rec.nfiles);
	if (file == rec.nfiles)
		return;
	kp_Envelope env = kp_Envelope_init_zero;
	env.which_msg = kp_Envelope_media_piece_tag;
	kp_MediaPiece *mp = &env.msg.media_piece;
	mp->id = m->id;
	mp->index = i;
	mp->done = i + 1 == sp->n;
	mp->result = kp_CatalogResult_CATALOG_OK;
	mp->recording_id = sp->recs[p->rec].id;
	mp->init = p->init;
	mp->offset = p->off;
	mp->length = p->len;
	mp->start_ms = p->start_ms;
	mp->duration_ms = (uint32_t)(p->end_ms - p->start_ms);
	mp->codec = kp_Codec_CODEC_H264;
	mp->width = 640;
	mp->height = 360;
	CHECK_EQ(kp_ipc_send(peer, &env, NULL, 0, &rec.files[file].fd, 1), 0);
}

/* recorderd's answer, from its own span logic (recorderd/media.c) over the catalog. */
static void answer(const kp_MediaOpen *m)
{
	CHECK(!m->for_export);
	if (!strcmp(m->camera, "silent-cam"))
		return; /* a recorderd that never answers */
	opens++;
	CHECK(!strcmp(m->camera, "cam-1"));
	static struct rec_span sp;
	memset(&sp, 0, sizeof sp);
	struct cat_txn *t;
	int r = cat_begin(rec.rs.cat, 0, &t);
	CHECK_EQ(r, 0);
	if (r == 0) {
		r = rec_media_span(t, cat_stream_id(rec.rs.camera_id, m->stream), m->from_ms, m->to_ms, 0, &sp);
		cat_abort(t);
	}
	if (r < 0) {
		CHECK_EQ(r, -ENOENT);
		kp_Envelope env = kp_Envelope_init_zero;
		env.which_msg = kp_Envelope_media_piece_tag;
		env.msg.media_piece.id = m->id;
		env.msg.media_piece.done = true;
		env.msg.media_piece.result = kp_CatalogResult_CATALOG_NOT_FOUND;
		snprintf(env.msg.media_piece.error_code, sizeof env.msg.media_piece.error_code, "nothing_recorded");
		CHECK_EQ(kp_ipc_send(peer, &env, NULL, 0, NULL, 0), 0);
		return;
	}
	for (unsigned i = 0; i < sp.n; i++)
		send_piece(m, &sp, i);
}

static void on_peer(struct kp_ipc *c, struct kp_ipc_frame *f, void *arg)
{
	(void)c;
	(void)arg;
	if (f->env->which_msg == kp_Envelope_media_open_tag)
		answer(&f->env->msg.media_open);
}

static void on_sup(struct kp_ipc *c, struct kp_ipc_frame *f, void *arg)
{
	(void)c;
	(void)f;
	(void)arg;
}

static void on_link_error(struct kp_ipc *c, int err, const char *reason, void *arg)
{
	(void)err;
	(void)arg;
	fprintf(stderr, "parent: link closed: %s\n", reason);
	kp_ipc_destroy(c);
	if (c == sup)
		sup = NULL;
	if (c == peer)
		peer = NULL;
}

static pid_t child;
static int child_status = -1;
static uv_signal_t sigchld;

static void on_sigchld(uv_signal_t *h, int sig)
{
	(void)sig;
	if (waitpid(child, &child_status, WNOHANG) != child)
		return;
	uv_signal_stop(h);
	uv_close((uv_handle_t *)h, NULL);
	kp_ipc_destroy(sup);
	kp_ipc_destroy(peer);
	sup = peer = NULL;
}

static void test_playback(void)
{
	int sv[2], pv[2];
	CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pv), 0);
	/* Fork before this process touches libuv: the worker's loop must not share its
	 * epoll instance and signal pipe with the parent's. */
	child = fork();
	if (child == 0) {
		close(sv[0]);
		close(pv[0]);
		close(pv[1]);
		dup2(sv[1], KP_WORKER_CHANNEL_FD);
		char *argv[] = {"test_rtc_playback", NULL};
		exit(kp_worker_main(&worker_def, 1, argv) ? 1 : TEST_EXIT());
	}
	close(sv[1]);
	uv_loop_t *loop = uv_default_loop();
	uv_signal_init(loop, &sigchld);
	uv_signal_start(&sigchld, on_sigchld, SIGCHLD);
	/* This test is rtcd's supervisor and its recorderd. */
	static const struct kp_ipc_limits sup_lim = {kp_Peer_PEER_RTCD, kp_Peer_PEER_SUPERVISOR,
						     KP_IPC_TAIL_MAX_SUPERVISOR, KP_IPC_QUEUE_ITEMS_SUPERVISOR,
						     KP_IPC_QUEUE_BYTES_SUPERVISOR};
	static const struct kp_ipc_limits peer_lim = {kp_Peer_PEER_RTCD, kp_Peer_PEER_RECORDERD, KP_IPC_TAIL_MAX_PEER,
						      KP_IPC_QUEUE_ITEMS_PEER, KP_IPC_QUEUE_BYTES_PEER};
	CHECK_EQ(kp_ipc_open(loop, sv[0], &sup_lim, on_sup, on_link_error, NULL, &sup), 0);
	CHECK_EQ(kp_ipc_open(loop, pv[0], &peer_lim, on_peer, on_link_error, NULL, &peer), 0);
	kp_Envelope env = kp_Envelope_init_zero;
	env.which_msg = kp_Envelope_worker_config_tag;
	env.msg.worker_config.generation = 1;
	CHECK_EQ(kp_ipc_send(sup, &env, NULL, 0, NULL, 0), 0);
	env = (kp_Envelope)kp_Envelope_init_zero;
	env.which_msg = kp_Envelope_link_new_tag;
	env.msg.link_new.peer = kp_Peer_PEER_RECORDERD;
	env.msg.link_new.generation = 1;
	CHECK_EQ(kp_ipc_send(sup, &env, NULL, 0, &pv[1], 1), 0);
	close(pv[1]);
	env = (kp_Envelope)kp_Envelope_init_zero;
	env.which_msg = kp_Envelope_peer_hello_tag;
	env.msg.peer_hello.from = kp_Peer_PEER_RECORDERD;
	env.msg.peer_hello.generation = 1;
	env.msg.peer_hello.pid = (uint32_t)getpid();
	CHECK_EQ(kp_ipc_send(peer, &env, NULL, 0, NULL, 0), 0);
	env = (kp_Envelope)kp_Envelope_init_zero;
	env.which_msg = kp_Envelope_config_done_tag;
	env.msg.config_done.generation = 1;
	CHECK_EQ(kp_ipc_send(sup, &env, NULL, 0, NULL, 0), 0);
	uv_run(loop, UV_RUN_DEFAULT);
	CHECK(WIFEXITED(child_status));
	CHECK_EQ(WEXITSTATUS(child_status), 0);
	fprintf(stderr, "recorderd role: %u MediaOpen answered\n", opens);
	CHECK(opens >= 1024 + 4);
}

int main(void)
{
	if (recorded_make(&rec, "sub.h264", 3, 1000) < 0) {
		fprintf(stderr, "cannot record the fixture\n");
		return 1;
	}
	fprintf(stderr, "recorded %u frames in %u files, %u fragments\n", rec.nframes, rec.nfiles, rec.nfrags);
	CHECK_EQ(rec.nfiles, 12);
	RUN(test_playback);
	recorded_free(&rec);
	return TEST_EXIT();
}
