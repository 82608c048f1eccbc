/* The audio queue of a camera stream (see audio_queue.h). */
#include "audio_queue.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "kp_checked.h"

static void drop_front(struct rec_audio_queue *q, unsigned n, size_t bytes)
{
	if (!n)
		return; /* nothing taken (and maybe no buffer yet) */
	memmove(q->q, q->q + n, (q->n - n) * sizeof q->q[0]);
	q->n -= n;
	memmove(q->buf, q->buf + bytes, q->len - bytes);
	q->len -= bytes;
}

int rec_audio_push(struct rec_audio_queue *q, const struct kp_audio_format *fmt, int64_t pts, uint32_t samples,
		   const uint8_t *data, size_t len)
{
	if (len == 0 || len > REC_AUDIO_MAX_BYTES || samples == 0 || samples > fmt->rate)
		return -EINVAL;
	while (q->n && (q->n == FMP4_AUDIO_MAX_SAMPLES || q->len + len > REC_AUDIO_MAX_BYTES)) {
		drop_front(q, 1, q->q[0].size);
		q->dropped++;
	}
	if (q->len + len > q->cap) {
		size_t cap = q->cap ? q->cap : 16 * KP_KIB;
		while (cap < q->len + len)
			cap *= 2;
		uint8_t *b = realloc(q->buf, cap);
		if (!b)
			return -ENOMEM;
		q->buf = b;
		q->cap = cap;
	}
	memcpy(q->buf + q->len, data, len);
	q->len += len;
	q->q[q->n++] = (struct rec_audio_frame){.pts = pts, .size = (uint32_t)len, .samples = samples};
	q->fmt = *fmt;
	q->have_fmt = true;
	return 0;
}

const struct kp_audio_format *rec_audio_file_start(struct rec_audio_queue *q)
{
	q->file_audio = q->have_fmt;
	q->file_fmt = q->fmt;
	q->started = false;
	return q->file_audio ? &q->file_fmt : NULL;
}

void rec_audio_file_end(struct rec_audio_queue *q)
{
	q->file_audio = false;
}

bool rec_audio_changed(const struct rec_audio_queue *q)
{
	return q->have_fmt && (!q->file_audio || !kp_audio_format_same(&q->fmt, &q->file_fmt));
}

/* A frame's time on the file's audio track: (pts - file_pts0) in the track's rate. */
static int track_time(const struct rec_audio_queue *q, int64_t pts, int64_t file_pts0, int64_t *ret)
{
	int64_t d, t;
	if (kp_sub_i64(pts, file_pts0, &d) < 0 || d < 0 || kp_mul_i64(d, q->file_fmt.rate, &t) < 0 ||
	    kp_add_i64(t, 45000, &t) < 0)
		return -ERANGE;
	*ret = t / 90000;
	return 0;
}

void rec_audio_take(struct rec_audio_queue *q, int64_t limit, int64_t file_pts0, struct fmp4_sample *out,
		    struct rec_audio_take *ret)
{
	memset(ret, 0, sizeof *ret);
	size_t at = 0;
	for (unsigned i = 0; i < q->n && q->q[i].pts < limit; i++) {
		const struct rec_audio_frame *f = &q->q[i];
		uint32_t frame = f->samples;
		size_t from = at;
		at += f->size;
		ret->consumed++;
		int64_t t;
		/* Another format than the file's, before the file, or too late: not this file's. */
		if (!q->file_audio || !kp_audio_format_same(&q->fmt, &q->file_fmt) ||
		    track_time(q, f->pts, file_pts0, &t) < 0 ||
		    (q->started &&
		     (t < q->next - (int64_t)q->file_fmt.rate || t > q->next + 10 * (int64_t)q->file_fmt.rate))) {
			q->dropped++;
			continue;
		}
		if (!q->started) {
			q->next = t;
			q->started = true;
		}
		int64_t off = t - q->next;
		if (off > (int64_t)frame / 2 || off < -(int64_t)frame / 2) {
			/* Off the run by more than half a frame (frames lost, the camera's clock
			 * corrected): follow the camera, through the previous sample's duration. */
			if (ret->n && (int64_t)out[ret->n - 1].duration + off < 1) {
				q->dropped++;
				continue;
			}
			if (ret->n)
				out[ret->n - 1].duration = (uint32_t)((int64_t)out[ret->n - 1].duration + off);
			q->next = t;
		}
		if (ret->n == 0)
			ret->base = (uint64_t)q->next;
		memmove(q->buf + ret->len, q->buf + from, f->size);
		out[ret->n++] = (struct fmp4_sample){.size = f->size, .duration = frame, .keyframe = 1};
		ret->len += f->size;
		q->next += frame;
		q->frames++;
	}
	ret->consumed_bytes = at;
}

void rec_audio_release(struct rec_audio_queue *q, const struct rec_audio_take *t)
{
	drop_front(q, t->consumed, t->consumed_bytes);
}

void rec_audio_free(struct rec_audio_queue *q)
{
	free(q->buf);
	q->buf = NULL;
	q->len = q->cap = 0;
	q->n = 0;
}
