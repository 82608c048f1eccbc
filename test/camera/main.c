/* keeppeek-test-camera: a camera simulator for tests, the demo and operators. Serves
 * Baichuan over TCP and BCUDP and RTSP over TCP from fixture streams paced in real
 * time (and, with --audio, an AAC fixture as the main stream's sound),
 * with fault switches, and writes its counters to a JSON stats file. For benchmarks,
 * --cameras N runs N Baichuan TCP cameras in one process and --replay sends their
 * streams from precomputed wire bytes (baichuan/bc_replay.c). */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <libavutil/error.h>

#include "camera.h"
#include "wsd_responder.h"

struct cam_stats cam_stats;

#define CAM_MAX_CAMERAS 256

uint32_t cam_utc_s(void)
{
	return (uint32_t)time(NULL);
}

static const char *stats_path;
static unsigned ncameras = 1;
/* --cameras N > 1: each camera's Baichuan counters; cam_stats.baichuan is their sum. */
static struct cam_stream_stats (*camera_stats)[2];
static uv_timer_t stats_timer;
static uv_signal_t sig_term, sig_int, sig_usr1;

static void usage(FILE *f)
{
	fprintf(
	    f, "usage: keeppeek-test-camera --main FILE --sub FILE [--fps N] [--host ADDR]\n"
	       "         [--baichuan-port N] [--bcudp-port N] [--uid UID] [--rtsp-port N]\n"
	       "         [--user NAME] [--password PW] [--encryption none|bc|aes|full-aes]\n"
	       "         [--motion-interval S] [--alarm STATUS/AITYPE] [--snapshot FILE.jpg] [--stats FILE]\n"
	       "         [--parent PID] [--wsd ADDRESS] [--audio FILE.aac|.wav|.opus] [--replay] [--cameras N]\n"
	       "         [--fault wrong-password|drop=S|stall=S|garbage=S|oversize|udp-loss=P|udp-reorder|\n"
	       "                  udp-461|udp-silent|cut-mid-frame=S|refuse=main|sub[:S]|ssrc-space|\n"
	       "                  base-no-scheme|session-change|sps-marker|no-marker|pt50-dup|seq-jump=S|\n"
	       "                  ssrc-change=S|bad-sprop|redirect]...\n"
	       "FILE is an Annex-B stream (.h264, .h265) or MPEG-TS (.h264.ts, .h265.ts: B-frames, PTS and DTS kept).\n"
	       "SIGUSR1 stops all media (connections stay open) so that counters can be compared.\n"
	       "--replay sends Baichuan streams from one precomputed loop of their wire bytes (same bytes,\n"
	       "less CPU); --cameras N (Baichuan TCP only) runs N cameras on ports PORT..PORT+N-1.\n");
}

/* .h265 / .hevc, and .h265.ts for an MPEG-TS fixture, are H.265; the rest H.264. */
static enum kp_codec codec_of(const char *path)
{
	size_t n = strlen(path);
	if (n > 3 && !strcmp(path + n - 3, ".ts"))
		n -= 3;
	return n > 5 && (!strncmp(path + n - 5, ".h265", 5) || !strncmp(path + n - 5, ".hevc", 5)) ? KP_CODEC_H265
												   : KP_CODEC_H264;
}

static void put_one(FILE *f, const char *name, const struct cam_stream_stats *s)
{
	fprintf(
	    f,
	    "\"%s\":{\"frames_sent\":%llu,\"bytes_sent\":%llu,\"sessions\":%llu,\"refused\":%llu,\"refused_at_ms\":[",
	    name, (unsigned long long)s->frames_sent, (unsigned long long)s->bytes_sent,
	    (unsigned long long)s->sessions, (unsigned long long)s->refused);
	for (uint64_t i = 0; i < s->refused && i < CAM_REFUSED_TIMES; i++)
		fprintf(f, "%s%llu", i ? "," : "", (unsigned long long)s->refused_at_ms[i]);
	fputs("]}", f);
}

static void put_stream(FILE *f, const char *name, const struct cam_stream_stats s[2])
{
	fprintf(f, "\"%s\":{", name);
	put_one(f, "main", &s[0]);
	fputc(',', f);
	put_one(f, "sub", &s[1]);
	fputc('}', f);
}

static void write_stats(uv_timer_t *t)
{
	(void)t;
	char tmp[4096];
	snprintf(tmp, sizeof tmp, "%s.tmp", stats_path);
	FILE *f = fopen(tmp, "we");
	if (!f)
		return;
	fputc('{', f);
	if (camera_stats) {
		memset(cam_stats.baichuan, 0, sizeof cam_stats.baichuan);
		fputs("\"baichuan_cameras\":[", f);
		for (unsigned i = 0; i < ncameras; i++) {
			for (int k = 0; k < 2; k++) {
				struct cam_stream_stats *a = &cam_stats.baichuan[k];
				const struct cam_stream_stats *b = &camera_stats[i][k];
				a->frames_sent += b->frames_sent;
				a->bytes_sent += b->bytes_sent;
				a->sessions += b->sessions;
			}
			if (i)
				fputc(',', f);
			fputc('{', f);
			put_one(f, "main", &camera_stats[i][0]);
			fputc(',', f);
			put_one(f, "sub", &camera_stats[i][1]);
			fputc('}', f);
		}
		fputs("],", f);
	}
	put_stream(f, "baichuan", cam_stats.baichuan);
	fputc(',', f);
	put_stream(f, "bcudp", cam_stats.bcudp);
	fputc(',', f);
	put_stream(f, "rtsp", cam_stats.rtsp);
	unsigned long long wsd_answered, wsd_ignored;
	cam_wsd_counts(&wsd_answered, &wsd_ignored);
	fprintf(f, ",\"wsd_probes_answered\":%llu,\"wsd_probes_ignored\":%llu", wsd_answered, wsd_ignored);
	fprintf(f,
		",\"audio\":{\"rtsp\":{\"frames_sent\":%llu,\"first_offset_us\":%lld},"
		"\"baichuan\":{\"frames_sent\":%llu,\"first_offset_us\":%lld}}",
		(unsigned long long)cam_stats.audio_rtsp.frames_sent, (long long)cam_stats.audio_rtsp.first_offset_us,
		(unsigned long long)cam_stats.audio_baichuan.frames_sent,
		(long long)cam_stats.audio_baichuan.first_offset_us);
	fprintf(f,
		",\"logins_ok\":%llu,\"logins_refused\":%llu,\"motion_sent\":%llu,\"udp_keepalives_sent\":%llu,"
		"\"udp_keepalives_answered\":%llu,\"udp_keepalive_mismatches\":%llu}\n",
		(unsigned long long)cam_stats.logins_ok, (unsigned long long)cam_stats.logins_refused,
		(unsigned long long)cam_stats.motion_sent, (unsigned long long)cam_stats.udp_keepalives_sent,
		(unsigned long long)cam_stats.udp_keepalives_answered,
		(unsigned long long)cam_stats.udp_keepalive_mismatches);
	if (fclose(f) == 0)
		rename(tmp, stats_path);
}

static void on_signal(uv_signal_t *h, int sig)
{
	(void)sig;
	if (stats_path)
		write_stats(NULL);
	uv_stop(h->loop);
}

static void on_pause(uv_signal_t *h, int sig)
{
	(void)h;
	(void)sig;
	cam_sources_pause();
	if (stats_path)
		write_stats(NULL);
}

static int parse_fault(struct cam_faults *f, const char *arg)
{
	char *end = NULL;
	if (!strcmp(arg, "wrong-password"))
		f->wrong_password = true;
	else if (!strcmp(arg, "oversize"))
		f->oversize_body = true;
	else if (!strcmp(arg, "udp-reorder"))
		f->udp_reorder = true;
	else if (!strcmp(arg, "udp-461"))
		f->udp_461 = true;
	else if (!strcmp(arg, "udp-silent"))
		f->udp_silent = true;
	else if (!strcmp(arg, "ssrc-space"))
		f->ssrc_space = true;
	else if (!strcmp(arg, "base-no-scheme"))
		f->base_no_scheme = true;
	else if (!strcmp(arg, "session-change"))
		f->session_change = true;
	else if (!strcmp(arg, "sps-marker"))
		f->sps_marker = true;
	else if (!strcmp(arg, "no-marker"))
		f->no_marker = true;
	else if (!strcmp(arg, "pt50-dup"))
		f->pt50_dup = true;
	else if (!strcmp(arg, "bad-sprop"))
		f->bad_sprop = true;
	else if (!strcmp(arg, "redirect"))
		f->redirect = true;
	else if (!strncmp(arg, "seq-jump=", 9))
		f->seq_jump_s = (unsigned)strtoul(arg + 9, &end, 10);
	else if (!strncmp(arg, "ssrc-change=", 12))
		f->ssrc_change_s = (unsigned)strtoul(arg + 12, &end, 10);
	else if (!strncmp(arg, "cut-mid-frame=", 14))
		f->cut_mid_frame_s = (unsigned)strtoul(arg + 14, &end, 10);
	else if (!strncmp(arg, "drop=", 5))
		f->drop_after_s = (unsigned)strtoul(arg + 5, &end, 10);
	else if (!strncmp(arg, "stall=", 6))
		f->stall_after_s = (unsigned)strtoul(arg + 6, &end, 10);
	else if (!strncmp(arg, "garbage=", 8))
		f->garbage_after_s = (unsigned)strtoul(arg + 8, &end, 10);
	else if (!strncmp(arg, "udp-loss=", 9))
		f->udp_loss_percent = (unsigned)strtoul(arg + 9, &end, 10);
	else if (!strncmp(arg, "refuse=main", 11) || !strncmp(arg, "refuse=sub", 10)) {
		/* refuse=sub or refuse=sub:S (only during the camera's first S seconds) */
		bool sub = arg[7] == 's';
		end = (char *)arg + (sub ? 10 : 11);
		f->refuse_streams |= sub ? 2u : 1u;
		if (*end == ':')
			f->refuse_for_s = (unsigned)strtoul(end + 1, &end, 10);
	} else
		return -EINVAL;
	return end && *end ? -EINVAL : 0;
}

/* --cameras N: N Baichuan TCP cameras on consecutive ports, each with its own counters
 * and, in replay mode, its own clock origin spread over one frame interval, as N
 * cameras started independently would be. */
static int start_cameras(uv_loop_t *loop, const struct cam_config *cfg, unsigned fps, const char *host, uint16_t port)
{
	struct cam_config *cams = calloc(ncameras, sizeof *cams);
	camera_stats = calloc(ncameras, sizeof *camera_stats);
	if (!cams || !camera_stats) {
		fprintf(stderr, "keeppeek-test-camera: no memory for %u cameras\n", ncameras);
		return -ENOMEM;
	}
	for (unsigned i = 0; i < ncameras; i++) {
		cams[i] = *cfg;
		cams[i].replay_epoch_us = cfg->replay_epoch_us + 1000000ull * i / ((uint64_t)fps * ncameras);
		int r = cam_baichuan_tcp_listen(loop, &cams[i], camera_stats[i], host, (uint16_t)(port + i));
		if (r < 0) {
			fprintf(stderr, "keeppeek-test-camera: Baichuan camera %u on %s:%u: %s\n", i, host, port + i,
				strerror(-r));
			return r;
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	static struct cam_config cfg = {.user = "admin",
					.password = "password",
					.encryption = CAM_ENC_AES,
					.uid = CAM_DEFAULT_UID,
					.alarm_status = "MD",
					.alarm_ai = "people"};
	const char *main_path = NULL, *sub_path = NULL, *audio_path = NULL, *host = "127.0.0.1", *wsd_address = NULL;
	unsigned fps = 25;
	long bc_port = -1, udp_port = -1, rtsp_port = -1;
	pid_t parent = 0;
	enum {
		O_MAIN = 256,
		O_SUB,
		O_FPS,
		O_HOST,
		O_BC,
		O_UDP,
		O_RTSP,
		O_USER,
		O_PW,
		O_ENC,
		O_MOTION,
		O_SNAP,
		O_STATS,
		O_FAULT,
		O_PARENT,
		O_UID,
		O_ALARM,
		O_WSD,
		O_AUDIO,
		O_REPLAY,
		O_CAMERAS
	};
	static const struct option opts[] = {
	    {"main", required_argument, NULL, O_MAIN},
	    {"sub", required_argument, NULL, O_SUB},
	    {"fps", required_argument, NULL, O_FPS},
	    {"host", required_argument, NULL, O_HOST},
	    {"baichuan-port", required_argument, NULL, O_BC},
	    {"bcudp-port", required_argument, NULL, O_UDP},
	    {"rtsp-port", required_argument, NULL, O_RTSP},
	    {"user", required_argument, NULL, O_USER},
	    {"password", required_argument, NULL, O_PW},
	    {"encryption", required_argument, NULL, O_ENC},
	    {"motion-interval", required_argument, NULL, O_MOTION},
	    {"snapshot", required_argument, NULL, O_SNAP},
	    {"stats", required_argument, NULL, O_STATS},
	    {"fault", required_argument, NULL, O_FAULT},
	    {"parent", required_argument, NULL, O_PARENT},
	    {"uid", required_argument, NULL, O_UID},
	    {"alarm", required_argument, NULL, O_ALARM},
	    {"wsd", required_argument, NULL, O_WSD},
	    {"audio", required_argument, NULL, O_AUDIO},
	    {"replay", no_argument, NULL, O_REPLAY},
	    {"cameras", required_argument, NULL, O_CAMERAS},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	int c;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case O_MAIN:
			main_path = optarg;
			break;
		case O_SUB:
			sub_path = optarg;
			break;
		case O_FPS:
			fps = (unsigned)atoi(optarg);
			break;
		case O_HOST:
			host = optarg;
			break;
		case O_BC:
			bc_port = atol(optarg);
			break;
		case O_UDP:
			udp_port = atol(optarg);
			break;
		case O_RTSP:
			rtsp_port = atol(optarg);
			break;
		case O_AUDIO:
			audio_path = optarg;
			break;
		case O_REPLAY:
			cfg.replay = true;
			break;
		case O_CAMERAS:
			ncameras = (unsigned)atoi(optarg);
			break;
		case O_UID:
			cfg.uid = optarg;
			break;
		case O_WSD:
			wsd_address = optarg;
			break;
		case O_ALARM: {
			/* STATUS/AITYPE, e.g. visitor/none or none/dog_cat,vehicle */
			char *slash = strchr(optarg, '/');
			if (!slash || slash == optarg || !slash[1]) {
				fprintf(stderr, "keeppeek-test-camera: --alarm wants STATUS/AITYPE\n");
				return 2;
			}
			*slash = '\0';
			cfg.alarm_status = optarg;
			cfg.alarm_ai = slash + 1;
			break;
		}
		case O_USER:
			cfg.user = optarg;
			break;
		case O_PW:
			cfg.password = optarg;
			break;
		case O_ENC:
			if (!strcmp(optarg, "none"))
				cfg.encryption = CAM_ENC_NONE;
			else if (!strcmp(optarg, "bc"))
				cfg.encryption = CAM_ENC_BC;
			else if (!strcmp(optarg, "aes"))
				cfg.encryption = CAM_ENC_AES;
			else if (!strcmp(optarg, "full-aes"))
				cfg.encryption = CAM_ENC_FULL_AES;
			else {
				usage(stderr);
				return 2;
			}
			break;
		case O_MOTION:
			cfg.motion_interval_s = (unsigned)atoi(optarg);
			break;
		case O_SNAP:
			cfg.snapshot_jpeg = optarg;
			break;
		case O_STATS:
			stats_path = optarg;
			break;
		case O_FAULT:
			if (parse_fault(&cfg.faults, optarg) < 0) {
				fprintf(stderr, "keeppeek-test-camera: unknown fault '%s'\n", optarg);
				return 2;
			}
			break;
		case O_PARENT:
			parent = (pid_t)atol(optarg);
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (!main_path || !sub_path || fps == 0 || fps > 120 || optind != argc ||
	    (bc_port < 0 && udp_port < 0 && rtsp_port < 0) || ncameras < 1 || ncameras > CAM_MAX_CAMERAS ||
	    (ncameras > 1 && (bc_port <= 0 || bc_port + ncameras - 1 > 65535 || udp_port >= 0 || rtsp_port >= 0))) {
		usage(stderr);
		return 2;
	}
	/* Replay sends Baichuan TCP video only: audio records are interleaved by time in live
	 * mode, RTSP is paced by the sources, which replay stops, and BCUDP's send window was
	 * not tried with whole frames per write. */
	if (cfg.replay && (audio_path || rtsp_port >= 0 || udp_port >= 0)) {
		fprintf(stderr, "keeppeek-test-camera: --replay serves Baichuan over TCP, without --audio\n");
		return 2;
	}
	/* A demo camera dies with the keeppeekd that started it, even by SIGKILL. */
	if (parent > 0 && (prctl(PR_SET_PDEATHSIG, SIGTERM) < 0 || getppid() != parent))
		return 0;
	signal(SIGPIPE, SIG_IGN);
	uv_loop_t *loop = uv_default_loop();
	cfg.started_ms = uv_now(loop);
	int r = cam_source_open(loop, main_path, codec_of(main_path), fps, &cfg.main);
	if (r == 0)
		r = cam_source_open(loop, sub_path, codec_of(sub_path), fps, &cfg.sub);
	if (r < 0) {
		fprintf(stderr, "keeppeek-test-camera: cannot load fixture streams %s, %s: %s\n", main_path, sub_path,
			r == -EINVAL ? "no keyframe-first H.264/H.265 stream" : strerror(-r));
		return 1;
	}
	if (audio_path && (r = cam_audio_open(loop, audio_path, &cfg.audio)) < 0) {
		fprintf(stderr, "keeppeek-test-camera: cannot load the audio fixture %s: %s\n", audio_path,
			r == -EINVAL ? "no ADTS AAC frames" : av_err2str(r));
		return 1;
	}
	cfg.replay_epoch_us = uv_hrtime() / 1000;
	if (cfg.replay) {
		cam_source_stop_pacing(cfg.main);
		cam_source_stop_pacing(cfg.sub);
	}
	if (bc_port >= 0 && ncameras == 1 &&
	    (r = cam_baichuan_tcp_listen(loop, &cfg, cam_stats.baichuan, host, (uint16_t)bc_port)) < 0)
		fprintf(stderr, "keeppeek-test-camera: Baichuan on %s:%ld: %s\n", host, bc_port, strerror(-r));
	if (ncameras > 1 && (r = start_cameras(loop, &cfg, fps, host, (uint16_t)bc_port)) < 0)
		return 1;
	if (r == 0 && udp_port >= 0 && (r = cam_bcudp_listen(loop, &cfg, host, (uint16_t)udp_port)) < 0)
		fprintf(stderr, "keeppeek-test-camera: BCUDP on %s:%ld: %s\n", host, udp_port, strerror(-r));
	if (r == 0 && rtsp_port >= 0 && (r = cam_rtsp_listen(loop, &cfg, host, (uint16_t)rtsp_port)) < 0)
		fprintf(stderr, "keeppeek-test-camera: RTSP on %s:%ld: %s\n", host, rtsp_port, strerror(-r));
	if (r == 0 && wsd_address && (r = cam_wsd_start(loop, wsd_address, "KeepPeek%20Test", "KP-TEST-CAM")) < 0)
		fprintf(stderr, "keeppeek-test-camera: WS-Discovery on 3702: %s\n", uv_strerror(r));
	if (r < 0)
		return 1;
	if (stats_path) {
		uv_timer_init(loop, &stats_timer);
		uv_timer_start(&stats_timer, write_stats, 0, 200);
	}
	uv_signal_init(loop, &sig_term);
	uv_signal_start(&sig_term, on_signal, SIGTERM);
	uv_signal_init(loop, &sig_int);
	uv_signal_start(&sig_int, on_signal, SIGINT);
	uv_signal_init(loop, &sig_usr1);
	uv_signal_start(&sig_usr1, on_pause, SIGUSR1);
	printf("ready\n");
	fflush(stdout);
	uv_run(loop, UV_RUN_DEFAULT);
	return 0;
}
