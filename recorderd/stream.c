/* A camera stream's recording state machine and file writer (see stream.h). */
#include "stream.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "catalog_keys.h"
#include "kp_checked.h"
#include "log.h"

#define DEFAULT_FRAME_90K 3600 /* 25 fps, when a last frame has no successor */

static const char *stream_name(uint32_t stream)
{
	return stream ? "sub" : "main";
}

const char *rec_stream_state_name(enum rec_stream_state st)
{
	static const char *const names[] = {"idle", "recording", "waiting-keyframe", "disk-full", "failed"};
	return names[st];
}

void rec_stream_init(struct rec_stream *s, struct rec_env *env, const char *camera, uint32_t stream, uint32_t camera_id)
{
	memset(s, 0, sizeof *s);
	s->env = env;
	snprintf(s->camera, sizeof s->camera, "%s", camera);
	s->stream = stream;
	s->stream_id = cat_stream_id(camera_id, stream);
	s->fd = -1;
	s->state = REC_IDLE;
}

static void fail(struct rec_stream *s, enum rec_stream_state st, const char *what, int err)
{
	if (s->state != st)
		kp_err("%s/%s: %s: %s; %s", s->camera, stream_name(s->stream), what, strerror(-err),
		       st == REC_DISK_FULL ? "recording stopped until space returns" : "waiting for the next keyframe");
	snprintf(s->last_error, sizeof s->last_error, "%s: %s", what, strerror(-err));
	s->state = st;
}

static int write_all(int fd, const uint8_t *p, size_t n, uint64_t off)
{
	while (n) {
		ssize_t w = pwrite(fd, p, n, (off_t)off);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (w == 0)
			return -EIO;
		p += w;
		n -= (size_t)w;
		off += (uint64_t)w;
	}
	return 0;
}

static int64_t floor_div90(int64_t v)
{
	return v >= 0 ? v / 90 : -((-v + 89) / 90);
}

static int open_file(struct rec_stream *s, int64_t dts, const uint8_t *init, size_t init_len);
static void close_file(struct rec_stream *s);
static void write_fragment(struct rec_stream *s, unsigned n, size_t len, const struct rec_audio_take *at);

/* Whether the buffered GOP is kept (record = events: an event armed it); a kept GOP
 * without a file opens the file its keyframe prepared, with the audio track known now. */
static int keep_gop(struct rec_stream *s, unsigned n)
{
	if (!n)
		return 1;
	if (s->events_only && s->armed_until_ms < s->gop_wall_ms) {
		s->gops_skipped++;
		s->deferred = 0;
		close_file(s);
		return 0;
	}
	if (s->fd >= 0 || !s->deferred)
		return 1;
	s->deferred = 0;
	static uint8_t init[FMP4_INIT_MAX];
	size_t init_len;
	int r = fmp4_write_init_av(&s->track, rec_audio_file_start(&s->audio), init, sizeof init, &init_len);
	if (r == 0)
		r = open_file(s, s->held_dts, init, init_len);
	if (r < 0) {
		s->frames_dropped += n;
		s->retry_at_ms = s->gop_wall_ms + REC_DISK_RETRY_MS;
		fail(s, r == -ENOSPC || r == -EDQUOT ? REC_DISK_FULL : REC_FAILED, "starting a recording file failed",
		     r);
		return 0;
	}
	return 1;
}

/* Writes the buffered GOP as one fragment, with the audio queued before limit (90 kHz),
 * and queues it for the catalog. */
static void write_gop(struct rec_stream *s, int64_t limit)
{
	unsigned n = s->n;
	s->n = 0;
	size_t len = s->gop_len;
	s->gop_len = 0;
	struct rec_audio_take at = {0};
	if (keep_gop(s, n) && n && s->fd >= 0)
		rec_audio_take(&s->audio, limit, s->file_dts0, s->audio_samples, &at);
	else
		rec_audio_take(&s->audio, limit, INT64_MAX, s->audio_samples, &at); /* nothing kept */
	write_fragment(s, n, len, &at);
	rec_audio_release(&s->audio, &at);
}

static void write_fragment(struct rec_stream *s, unsigned n, size_t len, const struct rec_audio_take *at)
{
	if (!n || s->fd < 0)
		return;
	uint64_t base = (uint64_t)(s->first_dts - s->file_dts0);
	uint64_t dur = 0;
	for (unsigned i = 0; i < n; i++)
		dur += s->samples[i].duration;
	int64_t run_at = (int64_t)(s->rec.anchor_offset + base);
	int64_t wall_us = s->rec.anchor_ms * 1000 + run_at * 100 / 9;
	struct fmp4_frag_desc d = {.seq = s->seq + 1,
				   .base_time = base,
				   .wall_us = wall_us,
				   .samples = s->samples,
				   .nsamples = n,
				   .audio_base_time = at->base,
				   .audio = s->audio_samples,
				   .naudio = at->n};
	static uint8_t hdr[FMP4_FRAG_HEADER_MAX];
	size_t hlen;
	int r = fmp4_write_frag_header(&d, hdr, sizeof hdr, &hlen);
	if (r < 0) {
		fail(s, REC_WAIT_KEYFRAME, "building a fragment header failed", r);
		return;
	}
	r = write_all(s->fd, hdr, hlen, s->off);
	if (r == 0)
		r = write_all(s->fd, s->gop, len, s->off + hlen);
	if (r == 0 && at->len)
		r = write_all(s->fd, s->audio.buf, at->len, s->off + hlen + len);
	len += at->len;
	if (r < 0) {
		if (s->first_fragment) {
			/* Nothing of this file is queued: remove it rather than leave an init segment
			 * that nothing indexes (a retry while the disk is full starts a new file). */
			close(s->fd);
			s->fd = -1;
			if (unlinkat(s->env->data_dirfd, s->rec.path, 0) < 0)
				kp_err("%s: removing after a failed first write failed: %s", s->rec.path,
				       strerror(errno));
		} else if (ftruncate(s->fd, (off_t)s->off) < 0) { /* complete fragments only */
			kp_err("%s: truncating after a failed write failed: %s", s->rec.path, strerror(errno));
		}
		s->frames_dropped += n;
		s->retry_at_ms = wall_us / 1000 + REC_DISK_RETRY_MS;
		fail(s, r == -ENOSPC || r == -EDQUOT ? REC_DISK_FULL : REC_WAIT_KEYFRAME, "writing a fragment failed",
		     r);
		return;
	}
	struct rec_commit_item it = {.kind = REC_ITEM_FRAGMENT, .sync_dirs = s->first_fragment, .rec = s->rec};
	it.frag = (struct cat_fragment){
	    .recording_id = s->rec.id,
	    .seq = d.seq,
	    .samples = n,
	    .start_ms = s->rec.anchor_ms + floor_div90(run_at),
	    .end_ms = s->rec.anchor_ms + floor_div90(run_at + (int64_t)dur),
	    .base_time = base,
	    .duration = dur,
	    .offset = s->off,
	    .length = hlen + len,
	    .keyframe_offset = s->samples[0].keyframe ? s->off + hlen : 0,
	    .keyframe_length = s->samples[0].keyframe ? s->samples[0].size : 0,
	};
	it.fd = fcntl(s->fd, F_DUPFD_CLOEXEC, 0);
	r = it.fd < 0 ? -errno : rec_commit_push(s->env->commit, &it);
	if (r < 0) {
		if (it.fd >= 0)
			close(it.fd);
		if (ftruncate(s->fd, (off_t)s->off) < 0)
			kp_err("%s: truncating an unqueued fragment failed: %s", s->rec.path, strerror(errno));
		s->frames_dropped += n;
		fail(s, REC_WAIT_KEYFRAME, "queueing a fragment for the catalog failed", r);
		return;
	}
	if (s->state == REC_DISK_FULL) {
		kp_notice("%s/%s: recording again (space returned)", s->camera, stream_name(s->stream));
		s->state = REC_RECORDING;
	}
	s->seq = d.seq;
	s->off += hlen + len;
	s->first_fragment = 0;
	s->fragments++;
	s->bytes_written += hlen + len;
}

/* Gives the buffered GOP's last frame, which has no successor, a guessed duration. */
static void guess_last_duration(struct rec_stream *s)
{
	s->samples[s->n - 1].duration = s->n > 1 ? s->samples[s->n - 2].duration : DEFAULT_FRAME_90K;
}

/* Ends the GOP; its audio is what was queued before limit. */
static void end_gop(struct rec_stream *s, int64_t limit)
{
	if (!s->n)
		return;
	guess_last_duration(s);
	write_gop(s, limit);
}

/* Ends the GOP with the audio queued before its last frame's end: the file's last
 * fragment ends its two tracks together (audio timed later has no video). */
static void end_gop_with_video(struct rec_stream *s)
{
	if (!s->n)
		return;
	guess_last_duration(s);
	int64_t end = s->first_dts;
	for (unsigned i = 0; i < s->n; i++) {
		if (kp_add_i64(end, s->samples[i].duration, &end) < 0) {
			end = INT64_MAX;
			break;
		}
	}
	write_gop(s, end);
}

static void close_file(struct rec_stream *s)
{
	if (s->fd < 0)
		return;
	rec_audio_file_end(&s->audio);
	struct rec_commit_item it = {.kind = REC_ITEM_CLOSE, .fd = -1, .rec = s->rec};
	/* Without the close item the recording stays "open" until start-up recovery. */
	if (!s->first_fragment && rec_commit_push(s->env->commit, &it) < 0)
		kp_warn("%s: closing in the catalog deferred to start-up recovery (backlog full)", s->rec.path);
	close(s->fd);
	s->fd = -1;
}

static int mkdir_at(int dirfd, const char *path)
{
	return mkdirat(dirfd, path, 0750) < 0 && errno != EEXIST ? -errno : 0;
}

static int open_file(struct rec_stream *s, int64_t dts, const uint8_t *init, size_t init_len)
{
	int64_t start_ms = s->anchor_ms + floor_div90(dts - s->anchor_dts);
	char dir[CAT_PATH_MAX];
	snprintf(dir, sizeof dir, "recordings/%s/%s", s->camera, stream_name(s->stream));
	int r = mkdir_at(s->env->data_dirfd, "recordings");
	if (r == 0) {
		char cam[CAT_PATH_MAX];
		snprintf(cam, sizeof cam, "recordings/%s", s->camera);
		r = mkdir_at(s->env->data_dirfd, cam);
	}
	if (r == 0)
		r = mkdir_at(s->env->data_dirfd, dir);
	if (r < 0)
		return r;
	int fd = -1;
	/* The name is the start; a clash (same millisecond after a restart) takes the next. */
	for (int i = 0; i < 16 && fd < 0; i++) {
		snprintf(s->rec.path, sizeof s->rec.path, "%s/%lld.mp4", dir, (long long)(start_ms + i));
		fd = openat(s->env->data_dirfd, s->rec.path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0640);
		if (fd < 0 && errno != EEXIST)
			return -errno;
	}
	if (fd < 0)
		return -EEXIST;
	r = write_all(fd, init, init_len, 0);
	if (r < 0) {
		close(fd);
		unlinkat(s->env->data_dirfd, s->rec.path, 0);
		return r;
	}
	s->fd = fd;
	s->off = init_len;
	s->seq = 0;
	s->first_fragment = 1;
	s->file_dts0 = dts;
	s->rec.id = s->env->next_recording_id++;
	s->rec.stream_id = s->stream_id;
	s->rec.codec = s->track.codec;
	s->rec.width = s->track.width;
	s->rec.height = s->track.height;
	s->rec.start_ms = start_ms;
	s->rec.end_ms = start_ms;
	s->rec.bytes = init_len;
	s->rec.anchor_ms = s->anchor_ms;
	s->rec.anchor_offset = (uint64_t)(dts - s->anchor_dts);
	kp_info("%s/%s: recording to %s", s->camera, stream_name(s->stream), s->rec.path);
	return 0;
}

static int same_ps(const struct h26x_ps *a, const struct h26x_ps *b)
{
	return a->len == b->len && !memcmp(a->data, b->data, a->len);
}

/* Starts a new file at this keyframe when needed; 0 when a file is ready. */
static int ensure_file(struct rec_stream *s, enum kp_codec codec, int64_t dts, int64_t wall_us, uint32_t width,
		       uint32_t height, const struct h26x_nal *nals, unsigned nn)
{
	struct h26x_param_sets ps = s->ps;
	if (s->track.codec != codec)
		memset(&ps, 0, sizeof ps);
	int r = h26x_param_sets(codec, nals, nn, &ps);
	if (r < 0)
		return r;
	int64_t wall_ms = wall_us / 1000;
	int changed = s->track.codec != codec || s->track.width != width || s->track.height != height ||
		      !same_ps(&ps.sps, &s->ps.sps) || !same_ps(&ps.pps, &s->ps.pps) || !same_ps(&ps.vps, &s->ps.vps) ||
		      (s->fd >= 0 && rec_audio_changed(&s->audio));
	int64_t derived_ms = s->anchor_ms + floor_div90(dts - s->anchor_dts);
	uint32_t rollover_ms = s->rollover_ms ? s->rollover_ms : s->env->rollover_ms;
	int rollover = s->fd >= 0 && wall_ms - s->rec.start_ms >= (int64_t)rollover_ms;
	if (s->fd >= 0 && !changed && !rollover)
		return 0;
	s->deferred = 0;
	close_file(s);
	if (!s->anchored || llabs(derived_ms - wall_ms) > REC_REANCHOR_MS) {
		s->anchored = 1;
		s->anchor_ms = wall_ms;
		s->anchor_dts = dts;
	}
	if (width == 0 || height == 0 || width > UINT16_MAX || height > UINT16_MAX)
		return -EINVAL;
	struct fmp4_track t = {.codec = codec, .width = (uint16_t)width, .height = (uint16_t)height};
	r = h26x_config_write(codec, &ps, t.config, sizeof t.config, &t.config_len);
	if (r < 0)
		return r;
	s->track = t;
	s->ps = ps;
	s->held_dts = dts; /* the file waits for the first GOP that is kept */
	s->deferred = 1;
	return 0;
}

static int append(struct rec_stream *s, const struct h26x_nal *nals, unsigned nn, int keyframe, int64_t dts,
		  int32_t cto)
{
	size_t size = h26x_sample_size(nals, nn);
	if (s->gop_len + size > REC_GOP_MAX_BYTES || s->n == FMP4_FRAG_MAX_SAMPLES)
		return -E2BIG;
	if (s->gop_len + size > s->gop_cap) {
		size_t cap = s->gop_cap ? s->gop_cap : 256 * KP_KIB;
		while (cap < s->gop_len + size)
			cap *= 2;
		uint8_t *g = realloc(s->gop, cap);
		if (!g)
			return -ENOMEM;
		s->gop = g;
		s->gop_cap = cap;
	}
	h26x_to_sample(nals, nn, s->gop + s->gop_len);
	s->gop_len += size;
	if (s->n == 0)
		s->first_dts = dts;
	s->samples[s->n++] = (struct fmp4_sample){.size = (uint32_t)size, .cto = cto, .keyframe = (uint8_t)keyframe};
	return 0;
}

void rec_stream_frame(struct rec_stream *s, enum kp_codec codec, int keyframe, int64_t pts, int64_t dts,
		      int64_t wall_us, uint32_t width, uint32_t height, uint64_t seq, const uint8_t *data, size_t len)
{
	static struct h26x_nal nals[H26X_NAL_MAX_PER_AU];
	int nn = h26x_split(data, len, nals, H26X_NAL_MAX_PER_AU);
	int gap = s->last_seq && seq != s->last_seq + 1;
	s->last_seq = seq;
	int64_t step = 0, cto = 0;
	int jump = s->have_dts && (kp_sub_i64(dts, s->last_dts, &step) < 0 || step <= 0 || step > REC_MAX_JUMP_90K);
	if (kp_sub_i64(pts, dts, &cto) < 0 || cto < 0 || cto > REC_MAX_CTO_90K) {
		/* ingestd keeps PTS >= DTS; a frame that breaks it is shown at its decode time. */
		if (s->bad_cto++ % 1000 == 0)
			kp_warn("%s/%s: a frame's PTS lies %s its DTS (%llu such frames): recorded at its DTS",
				s->camera, stream_name(s->stream), cto < 0 ? "before" : "more than 10 s after",
				(unsigned long long)s->bad_cto);
		cto = 0;
	}
	s->have_dts = 1;
	s->last_dts = dts;
	if (nn < 0 || gap || jump) {
		end_gop(s, dts);
		if (jump) { /* a new run: new anchor, new file */
			close_file(s);
			s->anchored = 0;
		}
		if (s->state == REC_RECORDING)
			s->state = REC_WAIT_KEYFRAME;
		if (nn < 0) {
			s->frames_dropped++;
			fail(s, REC_WAIT_KEYFRAME, "splitting the access unit into NAL units failed", nn);
			return;
		}
	} else if (s->n) {
		s->samples[s->n - 1].duration = (uint32_t)step;
	}
	if (!keyframe) {
		/* While the disk is full only a retry's GOP (started at a keyframe) is collected. */
		if (s->state != REC_RECORDING && !(s->state == REC_DISK_FULL && s->n)) {
			s->frames_dropped++;
			return;
		}
		int r = append(s, nals, (unsigned)nn, 0, dts, (int32_t)cto);
		if (r == -E2BIG) { /* a GOP too long for one fragment: cut it here */
			end_gop(s, dts);
			r = append(s, nals, (unsigned)nn, 0, dts, (int32_t)cto);
		}
		if (r < 0) {
			s->frames_dropped++;
			fail(s, REC_WAIT_KEYFRAME, "buffering a frame failed", r);
		}
		return;
	}
	write_gop(s, dts);
	if (s->state == REC_DISK_FULL && wall_us / 1000 < s->retry_at_ms) {
		s->frames_dropped++;
		return;
	}
	int r = ensure_file(s, codec, dts, wall_us, width, height, nals, (unsigned)nn);
	if (r < 0) {
		s->frames_dropped++;
		s->retry_at_ms = wall_us / 1000 + REC_DISK_RETRY_MS;
		fail(s, r == -ENOSPC || r == -EDQUOT ? REC_DISK_FULL : REC_FAILED, "starting a recording file failed",
		     r);
		return;
	}
	r = append(s, nals, (unsigned)nn, 1, dts, (int32_t)cto);
	if (r < 0) {
		s->frames_dropped++;
		fail(s, REC_WAIT_KEYFRAME, "buffering a keyframe failed", r);
		return;
	}
	s->gop_wall_ms = wall_us / 1000;
	/* After a full disk, recording resumes only when this GOP is written (write_gop). */
	if (s->state != REC_RECORDING && s->state != REC_DISK_FULL)
		s->state = REC_RECORDING;
}

void rec_stream_audio(struct rec_stream *s, const struct kp_audio_format *fmt, int64_t pts_90k, uint32_t samples,
		      const uint8_t *data, size_t len)
{
	if (rec_audio_push(&s->audio, fmt, pts_90k, samples, data, len) < 0)
		s->audio.dropped++;
}

void rec_stream_arm(struct rec_stream *s, int64_t until_ms)
{
	if (until_ms > s->armed_until_ms)
		s->armed_until_ms = until_ms;
}

void rec_stream_close(struct rec_stream *s)
{
	end_gop_with_video(s);
	close_file(s);
	rec_audio_free(&s->audio);
	free(s->gop);
	s->gop = NULL;
	s->gop_cap = 0;
	s->deferred = 0;
	s->state = REC_IDLE;
}
