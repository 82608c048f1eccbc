/* Media spans for MediaOpen (see media.h). */
#include "media.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fmp4.h"
#include "keyframe.h"
#include "kp_checked.h"

static int first_offset(void *arg, const struct cat_fragment *f)
{
	*(uint64_t *)arg = f->offset;
	return 1;
}

static int add_fragment(void *arg, const struct cat_fragment *f)
{
	struct rec_span *s = arg;
	if (f->seq < s->from_seq)
		return 0;
	if (f->start_ms >= s->to_ms)
		return 1;
	struct rec_piece *last = &s->p[s->n - 1];
	if (s->export && !last->init && f->offset != last->off + last->len)
		return 1; /* a hole: the export ends there */
	if (s->export && s->fragments == REC_MEDIA_MAX_EXPORT) {
		s->full = 1;
		return 1;
	}
	if (s->fragments == REC_MEDIA_MAX_PIECES) {
		s->full = 1;
		return 1;
	}
	s->fragments++;
	s->p[s->n++] = (struct rec_piece){
	    .rec = last->rec, .off = f->offset, .len = f->length, .start_ms = f->start_ms, .end_ms = f->end_ms};
	return 0;
}

/* The init piece, then the fragments of recording rec from seq on. */
static int add_recording(struct cat_txn *t, struct rec_span *s, const struct cat_recording *rec, uint32_t from_seq)
{
	if (s->nrecs == REC_MEDIA_MAX_FILES || s->full) {
		s->full = 1;
		return 1;
	}
	uint64_t init_len = 0;
	int r = cat_each_fragment(t, rec->id, first_offset, &init_len);
	if (r < 0 || !init_len)
		return r;
	s->recs[s->nrecs] = *rec;
	s->p[s->n++] = (struct rec_piece){
	    .rec = s->nrecs, .init = 1, .len = init_len, .start_ms = rec->start_ms, .end_ms = rec->start_ms};
	s->nrecs++;
	s->from_seq = from_seq;
	unsigned before = s->n;
	r = cat_each_fragment(t, rec->id, add_fragment, s);
	if (r < 0)
		return r;
	if (s->n == before) { /* nothing of this file in the span: no init either */
		s->n--;
		s->nrecs--;
	}
	return 0;
}

struct next_recs {
	struct cat_txn *t;
	struct rec_span *s;
	uint64_t after_id;
	int64_t after_ms;
};

static int add_next(void *arg, const struct cat_recording *r)
{
	struct next_recs *nr = arg;
	if (r->start_ms == nr->after_ms && r->id <= nr->after_id)
		return 0;
	return add_recording(nr->t, nr->s, r, 0);
}

int rec_media_span(struct cat_txn *t, uint32_t sid, int64_t from_ms, int64_t to_ms, int for_export, struct rec_span *s)
{
	memset(s, 0, sizeof *s);
	struct rec_keyframe k;
	int r = rec_keyframe_find_txn(t, sid, from_ms, &k);
	if (r == -ENOENT) {
		/* from lies in a gap (or before everything): the first keyframe after it. */
		int64_t kms;
		struct cat_keyframe kf;
		r = cat_keyframe_from(t, sid, from_ms, &kms, &kf);
		if (r == 0 && to_ms && kms >= to_ms)
			r = -ENOENT;
		if (r == 0)
			k = (struct rec_keyframe){.ms = kms, .recording_id = kf.recording_id, .seq = kf.seq};
	}
	struct cat_recording rec;
	if (r == 0)
		r = cat_get_recording(t, k.recording_id, &rec);
	if (r < 0)
		return r;
	s->export = for_export;
	s->to_ms = to_ms ? to_ms : INT64_MAX;
	/* An export keeps its length: it starts at the keyframe up to one GOP before from, so
	 * it ends as much before to (at the first fragment boundary at or after that). */
	int64_t lead, end;
	if (s->export && to_ms && k.ms < from_ms && kp_sub_i64(from_ms, k.ms, &lead) == 0 &&
	    kp_sub_i64(to_ms, lead, &end) == 0)
		s->to_ms = end;
	r = add_recording(t, s, &rec, k.seq);
	if (r == 0 && !s->export) {
		struct next_recs nr = {.t = t, .s = s, .after_id = rec.id, .after_ms = rec.start_ms};
		r = cat_each_stream_recording(t, sid, rec.start_ms, s->to_ms, add_next, &nr);
	}
	if (r == 1)
		r = 0;
	return r == 0 && s->n == 0 ? -ENOENT : r;
}

/* The audio track's timescale in the init piece (0: none), for rebasing its tfdt. */
static int init_audio_rate(int fd, const struct rec_piece *init, uint32_t *ret)
{
	size_t len = init->len < FMP4_READ_INIT_MAX ? (size_t)init->len : FMP4_READ_INIT_MAX;
	uint8_t *buf = malloc(len);
	struct fmp4_init *in = malloc(sizeof *in);
	int r = buf && in ? 0 : -ENOMEM;
	ssize_t got = r == 0 ? pread(fd, buf, len, (off_t)init->off) : 0;
	if (r == 0 && got < 0)
		r = -errno;
	else if (r == 0 && (size_t)got != len)
		r = -ENODATA;
	if (r == 0)
		r = fmp4_read_init(buf, len, in);
	if (r == 0)
		*ret = in->audio_track_id ? in->audio_timescale : 0;
	free(buf);
	free(in);
	return r;
}

int rec_media_export_headers(int data_dirfd, struct rec_span *s, uint8_t **ret_buf, size_t *ret_len)
{
	if (!s->export || s->n < 2 || s->nrecs != 1)
		return -EINVAL;
	unsigned nfrag = s->n - 1;
	uint8_t *buf = malloc((size_t)nfrag * FMP4_FRAG_HEADER_MAX);
	if (!buf)
		return -ENOMEM;
	int fd = openat(data_dirfd, s->recs[0].path, O_RDONLY | O_CLOEXEC);
	int r = fd < 0 ? -errno : 0;
	size_t used = 0;
	uint64_t base0 = 0;
	uint32_t audio_rate = 0;
	if (r == 0)
		r = init_audio_rate(fd, &s->p[0], &audio_rate);
	/* From the last piece backwards, each fragment piece becomes header + samples. */
	struct rec_piece frag[REC_MEDIA_MAX_EXPORT];
	memcpy(frag, s->p + 1, nfrag * sizeof *frag);
	s->n = 1;
	for (unsigned i = 0; r == 0 && i < nfrag; i++) {
		size_t want = frag[i].len < FMP4_FRAG_HEADER_MAX ? frag[i].len : FMP4_FRAG_HEADER_MAX;
		ssize_t got = pread(fd, buf + used, want, (off_t)frag[i].off);
		struct fmp4_frag fi;
		if (got < 0)
			r = -errno;
		else if ((size_t)got != want)
			r = -ENODATA;
		else
			r = fmp4_read_frag(NULL, buf + used, want, &fi);
		if (r == 0 && i == 0)
			base0 = fi.base_time;
		if (r == 0)
			r = fmp4_frag_rebase(buf + used, fi.header_len, base0, audio_rate);
		if (r < 0)
			break;
		s->p[s->n++] = (struct rec_piece){.rec = 0,
						  .hdr = 1,
						  .off = used,
						  .len = fi.header_len,
						  .start_ms = frag[i].start_ms,
						  .end_ms = frag[i].end_ms};
		s->p[s->n++] = (struct rec_piece){.rec = 0,
						  .off = frag[i].off + fi.header_len,
						  .len = frag[i].len - fi.header_len,
						  .start_ms = frag[i].start_ms,
						  .end_ms = frag[i].end_ms};
		used += fi.header_len;
	}
	if (fd >= 0)
		close(fd);
	if (r < 0) {
		free(buf);
		return r;
	}
	*ret_buf = buf;
	*ret_len = used;
	return 0;
}
