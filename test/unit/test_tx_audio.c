/* AAC -> Opus end to end at rtcd's client API (rtcd/transcoder_client.c) through the real
 * keeppeek-transcoder process: this test is the supervisor of two children, a worker
 * that plays rtcd (the client, confined like rtcd) and the transcoder program itself,
 * linked by a socketpair as keeppeekd links them. The "rtcd" child opens two audio jobs
 * in the one transcoder, the test camera's sound (440 Hz, AAC-LC 16 kHz mono, 4 s) and a
 * 1 kHz stereo tone at 44.1 kHz (2 s), feeds their raw frames (ADTS headers removed,
 * the AudioSpecificConfig given at open) interleaved, and hands every Opus packet back
 * to this process through a pipe. Checked here: every packet is 48 kHz with the
 * source's channels, 20 ms apart in pts (a gap only where the transcoder counted a drop
 * under load), wall clock following the input's; libavcodec's
 * own opus decoder (not libopus, which encoded them) decodes each to 960 samples; the
 * decoded duration is the source's within 60 ms and the tone's frequency is the source's
 * (zero crossings); rtcd asked keeppeekd for the transcoder (TranscoderDemand, then
 * 0 after the close) and the transcoder exits cleanly on Shutdown. Once everything came
 * back, the child fills rtcd's ceiling of KP_TRANSCODE_AUDIO_JOBS audio jobs: the one
 * past it is refused (EBUSY, counted), and closing makes room again. Last, the link
 * goes down with both jobs running and the first job's owner closes the other from its
 * lost callback: one lost callback, nothing touched after its close. */
#include <errno.h>
#include <fcntl.h>
#include <libavcodec/avcodec.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "audio.h"
#include "kp_build_config.h"
#include "kp_limits.h"
#include "sandbox.h"
#include "test.h"
#include "transcoder_client.h"
#include "worker.h"

#define MAX_FRAMES   256
#define WALL0        1700000000000ll
#define OPUS_RATE    48000 /* RFC 7587: the RTP clock of Opus */
#define OPUS_SAMPLES 960   /* 20 ms */

struct source {
	const char *file;
	unsigned freq; /* the tone */
	struct kp_audio_format fmt;
	uint8_t *data[MAX_FRAMES];
	size_t len[MAX_FRAMES];
	unsigned n;
	/* Parent: what came back. */
	unsigned packets, bad_rate, bad_step, decoded_bad;
	int64_t first_pts, last_pts, first_wall, last_wall, samples;
	unsigned crossings;
	double energy;
	float prev;
	AVCodecContext *dec;
};

static struct source src[2] = {{.file = "audio.aac", .freq = 440}, {.file = "audio_stereo.aac", .freq = 1000}};
static int result_fd = -1;
static int64_t dropped; /* parent: the transcoder's drops, as the child last saw them */

static int load(struct source *s)
{
	char path[1024];
	snprintf(path, sizeof path, "%s/test/fixtures/%s", KP_TEST_BUILD_ROOT, s->file);
	FILE *f = fopen(path, "rb");
	if (!f)
		return -errno;
	static uint8_t buf[1 << 20];
	size_t len = fread(buf, 1, sizeof buf, f);
	fclose(f);
	for (size_t off = 0; off < len && s->n < MAX_FRAMES;) {
		size_t hl, fl;
		struct kp_audio_format fmt;
		if (kp_adts_parse(buf + off, len - off, &hl, &fl, &fmt) < 0)
			return -EBADMSG;
		s->fmt = fmt;
		s->len[s->n] = fl - hl;
		s->data[s->n] = malloc(fl - hl);
		memcpy(s->data[s->n++], buf + off + hl, fl - hl);
		off += fl;
	}
	return 0;
}

/* ---------------- the "rtcd" child: the client API ---------------- */

static struct rtc_tx_job *jobs[2];
static unsigned fed[2], got[2];
static uv_timer_t feeder;

struct record {
	uint32_t which, rate, channels, len;
	int64_t pts, wall_ms;
};

static void on_opus(void *arg, const struct rtc_audio_frame *a)
{
	struct source *s = arg;
	struct record r = {(uint32_t)(s - src), a->rate, a->channels, (uint32_t)a->len, a->pts, a->wall_ms};
	CHECK_EQ(a->codec, kp_AudioCodec_AUDIO_OPUS);
	if (write(result_fd, &r, sizeof r) != (ssize_t)sizeof r || write(result_fd, a->data, a->len) != (ssize_t)a->len)
		CHECK(0);
	got[s - src]++;
}

static bool link_lost;     /* the last step: the link is taken down */
static unsigned lost_jobs; /* lost callbacks since */

/* Lost is a failure, but in the last step: there the owner of the first job told closes
 * the other one (a session that ends leaves its camera's live audio, whose job was
 * marked lost too); rtcd must not touch or report that one again. */
static void on_lost(void *arg, int err, const char *reason)
{
	unsigned i = (unsigned)((struct source *)arg - src);
	if (!link_lost) {
		fprintf(stderr, "child: job of %s lost: %s (%s)\n", src[i].file, reason, strerror(err));
		CHECK(0);
		exit(TEST_EXIT());
	}
	CHECK_EQ(err, EPIPE);
	lost_jobs++;
	jobs[i] = NULL;
	if (jobs[1 - i]) {
		rtc_tx_close(jobs[1 - i]);
		jobs[1 - i] = NULL;
	}
}

/* Feeds one frame of each source every 10 ms (faster than real time, slower than the
 * transcoder), then waits for the last packets and closes both jobs. */
/* rtcd's ceiling on open audio jobs, one past it: refused with EBUSY and counted; the
 * jobs open stay, and those closed make room again. */
static void audio_ceiling(void)
{
	static struct rtc_tx_job *extra[KP_TRANSCODE_AUDIO_JOBS];
	for (unsigned i = 2; i < KP_TRANSCODE_AUDIO_JOBS; i++) {
		extra[i] = rtc_tx_open_audio("extra", src[0].fmt.rate, src[0].fmt.channels, src[0].fmt.config,
					     src[0].fmt.config_len, on_opus, on_lost, &src[0]);
		CHECK(extra[i] != NULL);
	}
	struct rtc_tx_stats st;
	rtc_tx_stats(&st);
	CHECK_EQ(st.jobs_audio, KP_TRANSCODE_AUDIO_JOBS);
	CHECK_EQ(st.refused, 0);
	errno = 0;
	CHECK(rtc_tx_open_audio("past", src[0].fmt.rate, src[0].fmt.channels, src[0].fmt.config, src[0].fmt.config_len,
				on_opus, on_lost, &src[0]) == NULL);
	CHECK_EQ(errno, EBUSY);
	rtc_tx_stats(&st);
	CHECK_EQ(st.jobs_audio, KP_TRANSCODE_AUDIO_JOBS);
	CHECK_EQ(st.refused, 1);
	for (unsigned i = 2; i < KP_TRANSCODE_AUDIO_JOBS; i++)
		rtc_tx_close(extra[i]);
	rtc_tx_stats(&st);
	CHECK_EQ(st.jobs_audio, 2);
}

static void feed(uv_timer_t *t)
{
	static unsigned idle;
	bool all = true;
	for (unsigned i = 0; i < 2; i++) {
		struct source *s = &src[i];
		if (fed[i] == s->n)
			continue;
		all = false;
		struct rtc_audio_frame a = {
		    .data = s->data[fed[i]],
		    .len = s->len[fed[i]],
		    .codec = kp_AudioCodec_AUDIO_AAC,
		    .rate = s->fmt.rate,
		    .channels = s->fmt.channels,
		    .pts = (int64_t)fed[i] * s->fmt.frame_samples,
		    .wall_ms = WALL0 + (int64_t)fed[i] * s->fmt.frame_samples * 1000 / s->fmt.rate,
		};
		if (rtc_tx_feed_audio(jobs[i], &a) == 0)
			fed[i]++;
	}
	static unsigned last_got;
	if (!all || got[0] + got[1] != last_got) {
		last_got = got[0] + got[1];
		idle = 0;
		return;
	}
	if (++idle < 50) /* 500 ms without a packet: the last came */
		return;
	uv_timer_stop(t);
	audio_ceiling();
	/* What the transcoder dropped (counted) under load: each drop may leave one gap. */
	struct rtc_tx_stats st;
	rtc_tx_stats(&st);
	struct record drops = {.which = 2, .pts = (int64_t)st.dropped_tx};
	CHECK(write(result_fd, &drops, sizeof drops) == (ssize_t)sizeof drops);
	/* Both jobs had output: the link going down ends both, and the first one's owner
	 * closes the other from its lost callback. */
	link_lost = true;
	rtc_tx_on_link(false);
	CHECK_EQ(lost_jobs, 1);
	CHECK(jobs[0] == NULL && jobs[1] == NULL);
	rtc_tx_stats(&st);
	CHECK_EQ(st.jobs_audio, 0);
	CHECK_EQ(st.lost, 1);
	fprintf(stderr, "child: fed %u and %u frames, got %u and %u packets\n", fed[0], fed[1], got[0], got[1]);
	close(result_fd);
	exit(TEST_EXIT());
}

static void child_linked(struct kp_worker *w, kp_Peer peer)
{
	CHECK_EQ(peer, kp_Peer_PEER_TRANSCODER);
	rtc_tx_on_link(true);
	uv_timer_init(kp_worker_loop(w), &feeder);
	uv_timer_start(&feeder, feed, 10, 10);
}

static int child_confined(struct kp_worker *w)
{
	rtc_tx_init(w);
	for (unsigned i = 0; i < 2; i++) {
		struct source *s = &src[i];
		jobs[i] = rtc_tx_open_audio(s->file, s->fmt.rate, s->fmt.channels, s->fmt.config, s->fmt.config_len,
					    on_opus, on_lost, s);
		CHECK(jobs[i] != NULL);
	}
	return 0;
}

static void child_frame(struct kp_worker *w, kp_Peer from, struct kp_ipc_frame *f)
{
	(void)w;
	CHECK_EQ(from, kp_Peer_PEER_TRANSCODER);
	rtc_tx_on_frame(f);
}

static const struct kp_worker_def rtcd_def = {
    .name = "rtcd-audio-test",
    .self = kp_Peer_PEER_RTCD,
    .peers = {kp_Peer_PEER_TRANSCODER},
    .npeers = 1,
    .fs = KP_WORKER_FS_NONE,
    .rlimit_as = 2048ull * KP_MIB,
    .rlimit_nofile = 4096,
    .syscalls = KP_SYSCALLS_NET,
    .on_confined = child_confined,
    .on_peer_frame = child_frame,
    .on_peer_linked = child_linked,
};

/* ---------------- the supervisor (parent) ---------------- */

static struct kp_ipc *sup_r, *sup_t;
static pid_t rtcd_pid, tx_pid;
static int rtcd_status = -1, tx_status = -1;
static uint32_t demand_max, demand_last = 99;
static uv_signal_t sigchld;

static void on_rtcd(struct kp_ipc *c, struct kp_ipc_frame *f, void *arg)
{
	(void)c;
	(void)arg;
	if (f->env->which_msg == kp_Envelope_transcoder_demand_tag) {
		demand_last = f->env->msg.transcoder_demand.jobs;
		if (demand_last > demand_max)
			demand_max = demand_last;
	}
}

static void on_tx(struct kp_ipc *c, struct kp_ipc_frame *f, void *arg)
{
	(void)c;
	(void)f;
	(void)arg;
}

static void on_error(struct kp_ipc *c, int err, const char *reason, void *arg)
{
	(void)err;
	struct kp_ipc **which = arg;
	if (*which == c)
		*which = NULL;
	kp_ipc_destroy(c);
	(void)reason;
}

static void on_sigchld(uv_signal_t *h, int sig)
{
	(void)sig;
	int st;
	pid_t p;
	while ((p = waitpid(-1, &st, WNOHANG)) > 0) {
		if (p == rtcd_pid) {
			rtcd_status = st;
			/* The client is done: the transcoder is told to stop, as keeppeekd would. */
			kp_Envelope env = kp_Envelope_init_zero;
			env.which_msg = kp_Envelope_shutdown_tag;
			if (sup_t)
				CHECK_EQ(kp_ipc_send(sup_t, &env, NULL, 0, NULL, 0), 0);
		} else if (p == tx_pid) {
			tx_status = st;
		}
	}
	if (rtcd_status != -1 && tx_status != -1) {
		uv_signal_stop(h);
		uv_close((uv_handle_t *)h, NULL);
		kp_ipc_destroy(sup_r);
		kp_ipc_destroy(sup_t);
		sup_r = sup_t = NULL;
	}
}

static void send_config(struct kp_ipc *c, kp_Peer peer, int link_fd)
{
	kp_Envelope env = kp_Envelope_init_zero;
	env.which_msg = kp_Envelope_worker_config_tag;
	env.msg.worker_config.generation = 1;
	CHECK_EQ(kp_ipc_send(c, &env, NULL, 0, NULL, 0), 0);
	env = (kp_Envelope)kp_Envelope_init_zero;
	env.which_msg = kp_Envelope_link_new_tag;
	env.msg.link_new.peer = peer;
	env.msg.link_new.generation = 1;
	CHECK_EQ(kp_ipc_send(c, &env, NULL, 0, &link_fd, 1), 0);
	env = (kp_Envelope)kp_Envelope_init_zero;
	env.which_msg = kp_Envelope_config_done_tag;
	env.msg.config_done.generation = 1;
	CHECK_EQ(kp_ipc_send(c, &env, NULL, 0, NULL, 0), 0);
}

/* One record from the child: its packet decoded and measured. */
static void take(const struct record *r, const uint8_t *data)
{
	CHECK(r->which <= 2);
	if (r->which == 2)
		dropped = r->pts;
	if (r->which >= 2)
		return;
	struct source *s = &src[r->which];
	unsigned want_ch = s->fmt.channels > 2 ? 2 : s->fmt.channels;
	s->bad_rate += r->rate != OPUS_RATE || r->channels != want_ch;
	if (s->packets) {
		s->bad_step += r->pts - s->last_pts != OPUS_SAMPLES;
	} else {
		s->first_pts = r->pts;
		s->first_wall = r->wall_ms;
	}
	s->last_pts = r->pts;
	s->last_wall = r->wall_ms;
	s->packets++;
	AVPacket *pkt = av_packet_alloc();
	AVFrame *frame = av_frame_alloc();
	CHECK_EQ(av_new_packet(pkt, (int)r->len), 0);
	memcpy(pkt->data, data, r->len);
	CHECK_EQ(avcodec_send_packet(s->dec, pkt), 0);
	while (avcodec_receive_frame(s->dec, frame) == 0) {
		s->decoded_bad += frame->nb_samples != OPUS_SAMPLES || frame->sample_rate != OPUS_RATE ||
				  frame->ch_layout.nb_channels != (int)want_ch;
		const float *x = (const float *)frame->data[0]; /* fltp: the first channel */
		for (int i = 0; i < frame->nb_samples; i++) {
			s->energy += (double)x[i] * x[i];
			s->crossings += (s->prev < 0) != (x[i] < 0);
			s->prev = x[i];
		}
		s->samples += frame->nb_samples;
		av_frame_unref(frame);
	}
	av_packet_free(&pkt);
	av_frame_free(&frame);
}

static void test_audio(void)
{
	for (unsigned i = 0; i < 2; i++) {
		CHECK_EQ(load(&src[i]), 0);
		fprintf(stderr, "%s: %u frames of %u samples, %u Hz, %u channels\n", src[i].file, src[i].n,
			src[i].fmt.frame_samples, src[i].fmt.rate, src[i].fmt.channels);
		const AVCodec *opus = avcodec_find_decoder_by_name("opus");
		CHECK(opus != NULL);
		src[i].dec = avcodec_alloc_context3(opus);
		src[i].dec->sample_rate = OPUS_RATE;
		av_channel_layout_default(&src[i].dec->ch_layout,
					  src[i].fmt.channels > 2 ? 2 : (int)src[i].fmt.channels);
		CHECK_EQ(avcodec_open2(src[i].dec, opus, NULL), 0);
	}
	CHECK(src[0].fmt.rate == 16000 && src[0].fmt.channels == 1);
	CHECK(src[1].fmt.rate == 44100 && src[1].fmt.channels == 2);
	int sr[2], st[2], link[2], pipefd[2];
	CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sr), 0);
	CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, st), 0);
	CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, link), 0);
	CHECK_EQ(pipe2(pipefd, O_CLOEXEC), 0);
	CHECK(fcntl(pipefd[1], F_SETPIPE_SZ, 1 << 20) >= (1 << 20));
	rtcd_pid = fork();
	if (rtcd_pid == 0) {
		close(sr[0]);
		close(st[0]);
		close(st[1]);
		close(pipefd[0]);
		result_fd = pipefd[1];
		dup2(sr[1], KP_WORKER_CHANNEL_FD);
		char *argv[] = {"test_tx_audio", NULL};
		exit(kp_worker_main(&rtcd_def, 1, argv) ? 1 : TEST_EXIT());
	}
	close(sr[1]);
	close(pipefd[1]);
	tx_pid = fork();
	if (tx_pid == 0) {
		dup2(st[1], KP_WORKER_CHANNEL_FD);
		char path[1024];
		snprintf(path, sizeof path, "%s/transcoder/keeppeek-transcoder", KP_TEST_BUILD_ROOT);
		char *argv[] = {path, NULL};
		execv(path, argv);
		_exit(127);
	}
	close(st[1]);
	uv_loop_t *loop = uv_default_loop();
	uv_signal_init(loop, &sigchld);
	uv_signal_start(&sigchld, on_sigchld, SIGCHLD);
	static const struct kp_ipc_limits lim_r = {kp_Peer_PEER_RTCD, kp_Peer_PEER_SUPERVISOR,
						   KP_IPC_TAIL_MAX_SUPERVISOR, KP_IPC_QUEUE_ITEMS_SUPERVISOR,
						   KP_IPC_QUEUE_BYTES_SUPERVISOR};
	static const struct kp_ipc_limits lim_t = {kp_Peer_PEER_TRANSCODER, kp_Peer_PEER_SUPERVISOR,
						   KP_IPC_TAIL_MAX_SUPERVISOR, KP_IPC_QUEUE_ITEMS_SUPERVISOR,
						   KP_IPC_QUEUE_BYTES_SUPERVISOR};
	CHECK_EQ(kp_ipc_open(loop, sr[0], &lim_r, on_rtcd, on_error, &sup_r, &sup_r), 0);
	CHECK_EQ(kp_ipc_open(loop, st[0], &lim_t, on_tx, on_error, &sup_t, &sup_t), 0);
	send_config(sup_r, kp_Peer_PEER_TRANSCODER, link[0]);
	send_config(sup_t, kp_Peer_PEER_RTCD, link[1]);
	close(link[0]);
	close(link[1]);
	uv_run(loop, UV_RUN_DEFAULT);
	CHECK(WIFEXITED(rtcd_status) && WEXITSTATUS(rtcd_status) == 0);
	CHECK(WIFEXITED(tx_status) && WEXITSTATUS(tx_status) == 0);
	CHECK_EQ(demand_max, KP_TRANSCODE_AUDIO_JOBS); /* the extra jobs, open for a moment */
	CHECK_EQ(demand_last, 0);
	/* The packets, in the pipe (made large enough for all of them). */
	static uint8_t buf[1 << 20];
	size_t len = 0;
	ssize_t n;
	while ((n = read(pipefd[0], buf + len, sizeof buf - len)) > 0)
		len += (size_t)n;
	close(pipefd[0]);
	for (size_t off = 0; off + sizeof(struct record) <= len;) {
		struct record r;
		memcpy(&r, buf + off, sizeof r);
		off += sizeof r;
		CHECK(off + r.len <= len);
		if (off + r.len > len)
			break;
		take(&r, buf + off);
		off += r.len;
	}
	for (unsigned i = 0; i < 2; i++) {
		struct source *s = &src[i];
		double in_s = (double)s->n * s->fmt.frame_samples / s->fmt.rate;
		double out_s = (double)s->samples / OPUS_RATE;
		double rms = sqrt(s->energy / (double)(s->samples ? s->samples : 1));
		double freq = s->crossings / 2.0 / (out_s ? out_s : 1);
		fprintf(stderr,
			"%s: %u packets, %.3f s decoded of %.3f s fed, rms %.3f, %.0f Hz, wall %lld..%lld ms, "
			"pts %lld..%lld, %lld dropped and counted\n",
			s->file, s->packets, out_s, in_s, rms, freq, (long long)(s->first_wall - WALL0),
			(long long)(s->last_wall - WALL0), (long long)s->first_pts, (long long)s->last_pts,
			(long long)dropped);
		CHECK(s->packets > 0);
		CHECK_EQ(s->bad_rate, 0);
		/* A step other than 20 ms only where a drop was counted, and the time it lost. */
		CHECK(s->bad_step <= dropped);
		CHECK_EQ(s->decoded_bad, 0);
		CHECK(fabs(out_s - in_s) <= 0.060 + 0.064 * (double)dropped);
		CHECK(rms > 0.05);
		CHECK(fabs(freq - s->freq) <= s->freq * 0.03);
		CHECK(s->first_pts == 0);
		CHECK(llabs(s->first_wall - WALL0) <= 1);
		CHECK(llabs((s->last_wall - WALL0) - s->last_pts * 1000 / OPUS_RATE) <= 2);
		avcodec_free_context(&s->dec);
		for (unsigned k = 0; k < s->n; k++)
			free(s->data[k]);
	}
	CHECK_EQ(uv_loop_close(loop), 0);
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	RUN(test_audio);
	return TEST_EXIT();
}
