/* The fMP4 writer through the real recording path (rec_stream, group commit, catalog):
 * each fixture stream (H.264 and H.265, 1080p and 360p) recorded for 12 s (one fragment
 * per GOP, wherever the encoder put its keyframes) must pass
 * ffprobe and ffmpeg without a message, with the right codec and duration, play while
 * still being written, and keep every keyframe's bytes at the catalogued range. A file
 * closed with audio queued past its last video frame ends its audio track with the
 * video (within the frame that started before the video's end). */
#include "test_rec_fixture.h"
#include "test.h"

static int run(const char *cmd, char *out, size_t cap)
{
	FILE *p = popen(cmd, "r");
	if (!p)
		return -1;
	size_t n = fread(out, 1, cap - 1, p);
	out[n] = '\0';
	return pclose(p);
}

static void probe(const char *path, const char *codec, double seconds)
{
	char duration[32];
	snprintf(duration, sizeof duration, "%.6f", seconds);
	char cmd[1200], out[4096];
	snprintf(cmd, sizeof cmd,
		 "ffprobe -v error -show_entries format=duration:stream=codec_name -of default=nw=1 '%s' 2>&1", path);
	CHECK_EQ(run(cmd, out, sizeof out), 0);
	char want[128];
	snprintf(want, sizeof want, "codec_name=%s\nduration=%s\n", codec, duration);
	CHECK_STR_CONTAINS(out, want);
	CHECK(!strstr(out, "rror"));
	snprintf(cmd, sizeof cmd, "ffmpeg -nostdin -v error -i '%s' -f null - 2>&1", path);
	CHECK_EQ(run(cmd, out, sizeof out), 0);
	CHECK_EQ(strlen(out), 0);
	if (out[0])
		fprintf(stderr, "%s: ffmpeg said: %s\n", path, out);
}

struct frags {
	struct cat_fragment f[64];
	unsigned n;
};

static int add_frag(void *arg, const struct cat_fragment *f)
{
	struct frags *l = arg;
	if (l->n < 64)
		l->f[l->n++] = *f;
	return 0;
}

static int first_rec(void *arg, const struct cat_recording *r)
{
	*(struct cat_recording *)arg = *r;
	return 1;
}

static void record_fixture(const char *name, const char *codec)
{
	struct fixture fx;
	if (fixture_load(name, &fx) < 0) {
		CHECK(0);
		return;
	}
	CHECK_EQ(fx.n, 100);
	/* Keyframe positions over the three loops recorded, and the end. */
	unsigned kf[64], nkf = 0, first_loop = 0;
	for (unsigned l = 0; l < 3; l++)
		for (unsigned i = 0; i < fx.n; i++)
			if (fx.au[i].key && nkf < 63) {
				kf[nkf++] = l * fx.n + i;
				first_loop += l == 0;
			}
	kf[nkf] = 3 * fx.n;
	struct rec_setup rs;
	CHECK_EQ(rec_setup_open(&rs, "cam-1"), 0);
	struct rec_stream s;
	rec_stream_init(&s, &rs.env, "cam-1", 0, rs.camera_id);
	uint64_t seq = 0;
	int64_t wall0 = 1700000000000;
	rec_feed(&s, &fx, 1, wall0, &seq);
	CHECK_EQ(s.state, REC_RECORDING);
	CHECK_EQ(s.fragments, first_loop - 1); /* the last GOP waits for its successor */
	char path[600];
	snprintf(path, sizeof path, "%s/%s", rs.dir, s.rec.path);
	probe(path, codec, kf[first_loop - 1] * 0.04); /* plays while being written */
	rec_feed(&s, &fx, 2, wall0, &seq);
	rec_stream_close(&s);
	rec_commit_free(rs.env.commit);
	rs.env.commit = NULL;
	probe(path, codec, 12.0);

	struct cat_txn *t;
	CHECK_EQ(cat_begin(rs.cat, 0, &t), 0);
	struct cat_recording rec = {0};
	CHECK_EQ(cat_each_recording(t, first_rec, &rec), 1);
	CHECK_EQ(rec.start_ms, wall0);
	CHECK_EQ(rec.end_ms, wall0 + 12000);
	CHECK_EQ(rec.fragments, nkf);
	CHECK_EQ(rec.open, 0);
	struct stat st;
	CHECK_EQ(stat(path, &st), 0);
	CHECK_EQ(rec.bytes, st.st_size);
	struct frags fl = {0};
	CHECK_EQ(cat_each_fragment(t, rec.id, add_frag, &fl), 0);
	CHECK_EQ(fl.n, nkf);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	for (unsigned i = 0; i < fl.n; i++) {
		const struct cat_fragment *f = &fl.f[i];
		CHECK_EQ(f->start_ms, wall0 + 40 * kf[i]);
		CHECK_EQ(f->end_ms, wall0 + 40 * kf[i + 1]);
		CHECK(f->keyframe_length > 0);
		/* The keyframe range holds exactly the camera's keyframe, length-prefixed. */
		const struct fixture_au *a = &fx.au[kf[i] % fx.n];
		CHECK(a->key);
		struct h26x_nal nals[64];
		int nn = h26x_split(a->data, a->len, nals, 64);
		CHECK(nn > 0);
		size_t want_len = h26x_sample_size(nals, (unsigned)nn);
		CHECK_EQ(f->keyframe_length, want_len);
		uint8_t *want = malloc(want_len), *got = malloc(want_len);
		h26x_to_sample(nals, (unsigned)nn, want);
		CHECK_EQ(pread(fd, got, want_len, (off_t)f->keyframe_offset), (ssize_t)want_len);
		CHECK(!memcmp(want, got, want_len));
		free(want);
		free(got);
		int64_t kms;
		struct cat_keyframe kfr;
		CHECK_EQ(cat_keyframe_at(t, rec.stream_id, f->end_ms - 1, &kms, &kfr), 0);
		CHECK_EQ(kms, f->start_ms);
		CHECK_EQ(kfr.offset, f->keyframe_offset);
	}
	close(fd);
	struct rec_cov cov;
	CHECK_EQ(cat_coverage(t, rec.stream_id, &cov), 0);
	CHECK_EQ(cov.n, 1);
	CHECK_EQ(cov.r[0].start_ms, wall0);
	CHECK_EQ(cov.r[0].end_ms, wall0 + 12000);
	cat_abort(t);
	rec_setup_close(&rs);
	fixture_free(&fx);
}

static void test_h264_main(void)
{
	record_fixture("main.h264", "h264");
}

static void test_h264_sub(void)
{
	record_fixture("sub.h264", "h264");
}

static void test_h265_main(void)
{
	record_fixture("main.h265", "hevc");
}

static void test_h265_sub(void)
{
	record_fixture("sub.h265", "hevc");
}

/* A stream's duration as ffprobe reads it from the file. */
static double stream_duration(const char *path, const char *type)
{
	char cmd[1200], out[256];
	snprintf(cmd, sizeof cmd,
		 "ffprobe -v error -select_streams %c -show_entries stream=duration -of default=nw=1:nk=1 '%s' 2>&1",
		 type[0], path);
	CHECK_EQ(run(cmd, out, sizeof out), 0);
	return atof(out);
}

static void test_audio_ends_with_video(void)
{
	struct fixture fx;
	if (fixture_load("main.h264", &fx) < 0) {
		CHECK(0);
		return;
	}
	struct kp_audio_format fmt;
	const uint8_t asc[] = {0x14, 0x08}; /* AAC LC, 16 kHz, mono: 1024 samples, 5760 at 90 kHz */
	CHECK_EQ(kp_aac_config_parse(asc, sizeof asc, &fmt), 0);
	uint8_t frame[16] = {0x21, 0x10, 0x04, 0x60, 0x8c, 0x1c};
	struct rec_setup rs;
	CHECK_EQ(rec_setup_open(&rs, "cam-1"), 0);
	struct rec_stream s;
	rec_stream_init(&s, &rs.env, "cam-1", 0, rs.camera_id);
	int64_t wall0 = 1700000000000, apts = 1000000;
	for (unsigned i = 0; i < fx.n; i++) {
		int64_t dts = 1000000 + (int64_t)i * 3600;
		/* The audio that arrived with this frame: up to its end. */
		for (; apts < dts + 3600; apts += 5760)
			rec_stream_audio(&s, &fmt, apts, 1024, frame, sizeof frame);
		rec_stream_frame(&s, fx.codec, fx.au[i].key, dts, dts, (wall0 + (int64_t)i * 40) * 1000, fx.width,
				 fx.height, i + 1, fx.au[i].data, fx.au[i].len);
	}
	/* 300 ms of audio after the last frame, then the stream stops. */
	for (int64_t end = apts + 27000; apts < end; apts += 5760)
		rec_stream_audio(&s, &fmt, apts, 1024, frame, sizeof frame);
	char path[600];
	snprintf(path, sizeof path, "%s/%s", rs.dir, s.rec.path);
	rec_stream_close(&s);
	rec_commit_free(rs.env.commit);
	rs.env.commit = NULL;
	double v = stream_duration(path, "video"), a = stream_duration(path, "audio");
	CHECK(v > 3.99 && v < 4.01);
	if (!(a >= v && a < v + 1024.0 / 16000))
		fprintf(stderr, "audio %.3f s, video %.3f s\n", a, v);
	CHECK(a >= v && a < v + 1024.0 / 16000);
	rec_setup_close(&rs);
	fixture_free(&fx);
}

int main(void)
{
	RUN(test_h264_main);
	RUN(test_h264_sub);
	RUN(test_h265_main);
	RUN(test_h265_sub);
	RUN(test_audio_ends_with_video);
	return TEST_EXIT();
}
