/* Shared by the recorderd unit tests: reads a build-time fixture stream with libavformat
 * and records it through a real rec_stream, committer and catalog in a temporary data
 * directory. */
#ifndef KP_TEST_REC_FIXTURE_H
#define KP_TEST_REC_FIXTURE_H

#include <fcntl.h>
#include <libavformat/avformat.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "catalog.h"
#include "commit.h"
#include "event_log.h"
#include "kp_build_config.h"
#include "stream.h"

#define FIXTURE_MAX_AUS 512

struct fixture_au {
	uint8_t *data;
	size_t len;
	int key;
};

struct fixture {
	struct fixture_au au[FIXTURE_MAX_AUS];
	unsigned n;
	enum kp_codec codec;
	uint32_t width, height;
};

static int fixture_load(const char *name, struct fixture *fx)
{
	char path[1024];
	snprintf(path, sizeof path, "%s/test/fixtures/%s", KP_TEST_BUILD_ROOT, name);
	AVFormatContext *ic = NULL;
	if (avformat_open_input(&ic, path, NULL, NULL) < 0 || avformat_find_stream_info(ic, NULL) < 0) {
		fprintf(stderr, "cannot read fixture %s (build it first)\n", path);
		return -1;
	}
	AVCodecParameters *par = ic->streams[0]->codecpar;
	fx->codec = par->codec_id == AV_CODEC_ID_HEVC ? KP_CODEC_H265 : KP_CODEC_H264;
	fx->width = (uint32_t)par->width;
	fx->height = (uint32_t)par->height;
	fx->n = 0;
	AVPacket *pkt = av_packet_alloc();
	while (fx->n < FIXTURE_MAX_AUS && av_read_frame(ic, pkt) >= 0) {
		struct fixture_au *a = &fx->au[fx->n++];
		a->data = malloc((size_t)pkt->size);
		memcpy(a->data, pkt->data, (size_t)pkt->size);
		a->len = (size_t)pkt->size;
		a->key = !!(pkt->flags & AV_PKT_FLAG_KEY);
		av_packet_unref(pkt);
	}
	av_packet_free(&pkt);
	avformat_close_input(&ic);
	return 0;
}

static void fixture_free(struct fixture *fx)
{
	for (unsigned i = 0; i < fx->n; i++)
		free(fx->au[i].data);
	fx->n = 0;
}

struct rec_setup {
	char dir[256];
	int dirfd;
	struct cat *cat;
	struct rec_env env;
	uint32_t camera_id;
	struct rec_evlog *log; /* for rec_jobs_run called directly */
};

static int rec_setup_open(struct rec_setup *rs, const char *camera)
{
	snprintf(rs->dir, sizeof rs->dir, "/tmp/kp-rec-test-XXXXXX");
	if (!mkdtemp(rs->dir))
		return -1;
	rs->dirfd = open(rs->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	char cat_dir[300];
	snprintf(cat_dir, sizeof cat_dir, "%s/catalog", rs->dir);
	if (cat_open(cat_dir, 1ull << 30, &rs->cat) < 0)
		return -1;
	struct cat_txn *t;
	if (cat_begin(rs->cat, 1, &t) < 0 || cat_camera(t, camera, 0, &rs->camera_id) < 0 || cat_commit(t) < 0)
		return -1;
	memset(&rs->env, 0, sizeof rs->env);
	rs->env.data_dirfd = rs->dirfd;
	rs->env.rollover_ms = REC_DEFAULT_ROLLOVER_MS;
	rs->env.next_recording_id = 1;
	if (rec_evlog_new(rs->dirfd, &rs->log) < 0)
		return -1;
	return rec_commit_new(rs->cat, rs->dirfd, &rs->env.commit);
}

/* Feeds loops x the fixture into s; frame *seq (counted on) is at wall0_ms + 40 * seq. */
static void rec_feed(struct rec_stream *s, const struct fixture *fx, unsigned loops, int64_t wall0_ms, uint64_t *seq)
{
	for (unsigned l = 0; l < loops; l++)
		for (unsigned i = 0; i < fx->n; i++) {
			int64_t frame = (int64_t)*seq;
			rec_stream_frame(s, fx->codec, fx->au[i].key, 1000000 + frame * 3600, 1000000 + frame * 3600,
					 (wall0_ms + frame * 40) * 1000, fx->width, fx->height, ++*seq, fx->au[i].data,
					 fx->au[i].len);
		}
}

static void rec_setup_close(struct rec_setup *rs)
{
	rec_commit_free(rs->env.commit);
	rec_evlog_free(rs->log);
	cat_close(rs->cat);
	close(rs->dirfd);
	char cmd[300];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", rs->dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", rs->dir);
}

#endif
