/* Stored playback cursors (see media.h): the server-wide cursor table, MediaOpen
 * requests to recorderd and their MediaPiece answers, reading fragments through the
 * descriptors recorderd sends (pread on libuv's thread pool, one fragment ahead), and
 * handing out access units paced by a uv_timer (playback_pace.c decides when). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fmp4.h"
#include "kp_limits.h"
#include "log.h"
#include "media.h"
#include "playback_pace.h"
#include "playback_table.h"

/* Request ids: top bit set (rtcd's own id space for MediaOpen), then a generation, then
 * the table slot. */
#define ID_TOP          0x80000000u
#define SLOT_BITS       RTC_CURSOR_SLOT_BITS
#define SLOT_MASK       ((1u << SLOT_BITS) - 1)
#define PIECES_MAX      32                 /* queued byte ranges per cursor; beyond, asked for again later */
#define REC_FDS_MAX     3                  /* recording files open per cursor */
#define SPAN_MS         60000              /* a continuation asks for this much, then to the end */
#define STATE_EVERY_US  250000             /* position reports while playing */
#define ANSWER_MS       10000              /* recorderd answers a MediaOpen within this, or the cursor fails */
#define RTC_PB_FRAG_MAX (32 * 1024 * 1024) /* one fragment (one GOP) read whole */

struct piece {
	uint64_t recording_id;
	bool init;
	uint64_t offset, length;
	int64_t start_ms;
	unsigned fd_slot;
};

struct rec_fd {
	uint64_t recording_id;
	int fd;
	unsigned refs;
};

struct load {
	uv_work_t work;
	struct rtc_cursor *c;
	uint32_t gen;
	int fd;
	struct piece p;
	struct rtc_pb_frag *frag; /* a fragment; NULL for an init segment */
	struct fmp4_init *track;
	int err;
};

struct rtc_cursor {
	struct kp_worker *w;
	unsigned slot;
	uint32_t gen, req_id;
	char camera[65];
	unsigned stream;
	rtc_au_cb au;
	rtc_audio_cb audio;
	rtc_cursor_state_cb state;
	void *arg;

	struct rtc_pace pace;
	bool playing, ended, closing;
	const char *error;
	char why[96];
	int64_t position_ms, reported_us, reported_ms; /* reported_ms: the position last said */

	struct piece q[PIECES_MAX];
	unsigned qhead, qlen;
	struct rec_fd fds[REC_FDS_MAX];
	bool answer_done, answer_bounded, answer_truncated, span_had_fragments, no_more;
	int64_t next_from_ms;
	uint64_t last_rec, last_offset;

	struct fmp4_init *ltrack; /* track of the pieces being loaded */
	uint64_t ltrack_rec;
	struct load *loading;
	struct rtc_pb_frag *cur, *next;
	uint8_t *out;
	size_t out_cap;

	uv_timer_t timer;        /* pacing */
	uv_timer_t answer_timer; /* the deadline of recorderd's answer */
	unsigned handles;        /* open libuv handles: freed once none is left and no read runs */
};

static int64_t now_us(void)
{
	return (int64_t)(uv_hrtime() / 1000);
}

static void report(struct rtc_cursor *c)
{
	struct rtc_cursor_state st = {
	    .position_ms = c->position_ms,
	    .playing = c->playing,
	    .rate = c->pace.rate,
	    .ended = c->ended,
	    .error = c->error,
	};
	c->reported_us = now_us();
	c->reported_ms = c->position_ms;
	if (c->state)
		c->state(c->arg, &st);
}

static void fail(struct rtc_cursor *c, const char *why)
{
	kp_warn("playback of %s stream %u: %s", c->camera, c->stream, why);
	c->error = why;
	c->playing = false;
	uv_timer_stop(&c->timer);
	report(c);
}

static void unref_fd(struct rtc_cursor *c, unsigned slot)
{
	struct rec_fd *r = &c->fds[slot];
	if (r->refs && --r->refs == 0) {
		if (close(r->fd) < 0)
			kp_warn("playback: closing recording %llu: %s", (unsigned long long)r->recording_id,
				strerror(errno));
		r->fd = -1;
	}
}

static void drop_queue(struct rtc_cursor *c)
{
	while (c->qlen) {
		unref_fd(c, c->q[c->qhead].fd_slot);
		c->qhead = (c->qhead + 1) % PIECES_MAX;
		c->qlen--;
	}
}

static void free_frag(struct rtc_pb_frag *f)
{
	if (f) {
		free(f->buf);
		free(f->frag.audio);
		free(f);
	}
}

static void answer_late(uv_timer_t *t)
{
	struct rtc_cursor *c = t->data;
	c->answer_done = true;
	fail(c, "recorderd did not answer in time");
}

static int send_open(struct rtc_cursor *c, int64_t from_ms, bool bounded)
{
	c->gen = (c->gen + 1) & (0x7fffffffu >> SLOT_BITS);
	c->req_id = ID_TOP | c->gen << SLOT_BITS | c->slot;
	c->answer_done = false;
	c->answer_bounded = bounded;
	c->answer_truncated = false;
	c->span_had_fragments = false;
	kp_Envelope env = kp_Envelope_init_zero;
	env.which_msg = kp_Envelope_media_open_tag;
	kp_MediaOpen *m = &env.msg.media_open;
	m->id = c->req_id;
	snprintf(m->camera, sizeof m->camera, "%s", c->camera);
	m->stream = c->stream;
	m->from_ms = from_ms;
	m->to_ms = bounded ? from_ms + SPAN_MS : 0;
	m->for_export = false;
	int e = kp_worker_send_peer(c->w, kp_Peer_PEER_RECORDERD, &env, NULL, 0);
	if (e == 0)
		e = uv_timer_start(&c->answer_timer, answer_late, ANSWER_MS, 0);
	if (e < 0)
		kp_warn("playback of %s stream %u: asking recorderd for %lld ms on: %s", c->camera, c->stream,
			(long long)from_ms, strerror(-e));
	return e;
}

static void tick(uv_timer_t *t);
static void close_handles(struct rtc_cursor *c);
static void kick_loader(struct rtc_cursor *c);

static void schedule(struct rtc_cursor *c, int64_t wait_us)
{
	uint64_t ms = wait_us <= 0 ? 0 : (uint64_t)((wait_us + 999) / 1000);
	int e = uv_timer_start(&c->timer, tick, ms, 0);
	if (e < 0)
		kp_err("playback: starting the pacing timer: %s", uv_strerror(e));
}

/* Nothing more queued: ask for what follows while the last fragments play, or, once
 * they have played, say the recording ended. */
static void continue_or_end(struct rtc_cursor *c)
{
	if (c->closing || c->qlen || c->loading || !c->answer_done || c->error)
		return;
	if (c->no_more) {
		if (c->cur || c->next)
			return;
		if (!c->ended) {
			c->ended = true;
			report(c);
		}
		return;
	}
	if (send_open(c, c->next_from_ms, true) < 0)
		fail(c, "recorderd cannot be reached");
}

static void emit(struct rtc_cursor *c, const struct rtc_pb_frag *f, const struct rtc_pb_out *o)
{
	const struct fmp4_sample_info *s = o->sample;
	size_t cap = fmp4_annexb_cap(&f->track, s->size);
	if (cap > c->out_cap) {
		uint8_t *p = realloc(c->out, cap);
		if (!p) {
			kp_err("playback of %s stream %u: no memory for a %zu-byte frame", c->camera, c->stream, cap);
			return;
		}
		c->out = p;
		c->out_cap = cap;
	}
	size_t len;
	int e = fmp4_annexb(&f->track, f->buf + s->offset, s->size, s->keyframe, c->out, c->out_cap, &len);
	if (e < 0) {
		kp_warn("playback of %s stream %u: a frame at %lld ms is not a valid sample: %s", c->camera, c->stream,
			(long long)(o->media_us / 1000), strerror(-e));
		return;
	}
	struct rtc_au au = {
	    .data = c->out,
	    .len = len,
	    .codec = (kp_Codec)f->track.track.codec,
	    .keyframe = s->keyframe,
	    .pts_90k = o->pts_us * 9 / 100,
	    .wall_ms = o->media_us / 1000,
	    .width = f->track.track.width,
	    .height = f->track.track.height,
	};
	c->position_ms = au.wall_ms;
	if (c->au)
		c->au(c->arg, &au);
}

static void emit_audio(struct rtc_cursor *c, const struct rtc_pb_frag *f, const struct rtc_pb_out *o)
{
	const struct kp_audio_format *fmt = &f->track.audio;
	uint32_t rate = f->track.audio_timescale;
	struct rtc_audio_frame a = {
	    .data = f->buf + o->sample->offset,
	    .len = o->sample->size,
	    .codec = fmt->codec == KP_AUDIO_OPUS ? kp_AudioCodec_AUDIO_OPUS : kp_AudioCodec_AUDIO_AAC,
	    .rate = rate,
	    .channels = fmt->channels,
	    .pts = o->pts_us / 1000000 * (int64_t)rate + o->pts_us % 1000000 * (int64_t)rate / 1000000,
	    .wall_ms = o->media_us / 1000,
	    .config = fmt->config,
	    .config_len = fmt->config_len,
	};
	if (c->audio && (fmt->codec == KP_AUDIO_OPUS || fmt->codec == KP_AUDIO_AAC))
		c->audio(c->arg, &a);
}

static void tick(uv_timer_t *t)
{
	struct rtc_cursor *c = t->data;
	while (c->playing && !c->closing) {
		if (!c->cur) {
			c->cur = c->next;
			c->next = NULL;
			kick_loader(c);
			if (!c->cur) {
				/* Starved (the next piece is being read, or recorderd is fetching it from
				 * the store): the position of the last frame sent is said now. */
				if (c->playing && !c->closing && c->position_ms != c->reported_ms)
					report(c);
				continue_or_end(c);
				return;
			}
		}
		struct rtc_pb_out o;
		int64_t wait = 0, await = 0, now = now_us();
		int ar;
		while ((ar = rtc_pb_audio_step(c->cur, &c->pace, now, &o, &await)) == 1 && !c->closing)
			emit_audio(c, c->cur, &o);
		int r = rtc_pb_step(c->cur, &c->pace, now, &o, &wait);
		if (r < 0 && ar == 0) {
			/* The fragment's last audio frames outlast its last video frame. */
			schedule(c, await);
			return;
		}
		if (r < 0) {
			free_frag(c->cur);
			c->cur = NULL;
			continue;
		}
		if (r == 0) {
			schedule(c, ar == 0 && await < wait ? await : wait);
			return;
		}
		emit(c, c->cur, &o);
		if (!c->closing && c->playing && now - c->reported_us >= STATE_EVERY_US)
			report(c);
	}
}

static void load_work(uv_work_t *req)
{
	struct load *l = req->data;
	if (l->p.length > (l->p.init ? FMP4_READ_INIT_MAX : RTC_PB_FRAG_MAX)) {
		l->err = -EFBIG;
		return;
	}
	size_t len = (size_t)l->p.length;
	uint8_t *buf = malloc(len ? len : 1);
	if (!buf) {
		l->err = -ENOMEM;
		return;
	}
	size_t got = 0;
	while (got < len) {
		ssize_t n = pread(l->fd, buf + got, len - got, (off_t)(l->p.offset + got));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			l->err = n < 0 ? -errno : -ENODATA;
			free(buf);
			return;
		}
		got += (size_t)n;
	}
	if (l->p.init) {
		l->err = fmp4_read_init(buf, len, l->track);
		free(buf);
		return;
	}
	l->frag->buf = buf;
	l->frag->len = len;
	/* The audio track's sample table only for a recording that has one. */
	if (l->frag->track.audio_track_id) {
		l->frag->frag.audio = calloc(FMP4_AUDIO_MAX_SAMPLES, sizeof *l->frag->frag.audio);
		if (!l->frag->frag.audio) {
			l->err = -ENOMEM;
			return;
		}
	}
	l->err = fmp4_read_frag(&l->frag->track, buf, len, &l->frag->frag);
	if (l->err == 0 && l->frag->frag.total_len > len)
		l->err = -EBADMSG; /* the catalogued range ends inside the fragment */
}

static void cursor_free(struct rtc_cursor *c)
{
	free(c->ltrack);
	free_frag(c->cur);
	free_frag(c->next);
	free(c->out);
	free(c);
}

static void load_done(uv_work_t *req, int status)
{
	struct load *l = req->data;
	struct rtc_cursor *c = l->c;
	c->loading = NULL;
	unref_fd(c, l->p.fd_slot);
	bool current = !c->closing && l->gen == c->gen && status == 0;
	if (current && l->err < 0)
		kp_warn("playback of %s stream %u: %s of recording %llu at %llu (%llu bytes) unreadable: %s", c->camera,
			c->stream, l->p.init ? "init segment" : "fragment", (unsigned long long)l->p.recording_id,
			(unsigned long long)l->p.offset, (unsigned long long)l->p.length, strerror(-l->err));
	if (current && l->err == 0 && l->p.init) {
		free(c->ltrack);
		c->ltrack = l->track;
		c->ltrack_rec = l->p.recording_id;
		l->track = NULL;
	} else if (current && l->err == 0) {
		c->next = l->frag;
		l->frag = NULL;
	}
	free(l->track);
	free_frag(l->frag);
	free(l);
	if (c->closing) {
		if (!c->handles)
			cursor_free(c);
		return;
	}
	kick_loader(c);
	if (c->playing && !c->cur && !c->closing)
		tick(&c->timer);
	continue_or_end(c);
}

static void kick_loader(struct rtc_cursor *c)
{
	while (!c->loading && !c->next && c->qlen && !c->closing) {
		struct piece p = c->q[c->qhead];
		c->qhead = (c->qhead + 1) % PIECES_MAX;
		c->qlen--;
		struct load *l = calloc(1, sizeof *l);
		if (l && p.init)
			l->track = malloc(sizeof *l->track);
		else if (l && c->ltrack && c->ltrack_rec == p.recording_id)
			l->frag = calloc(1, sizeof *l->frag);
		if (!l || (!l->track && !l->frag)) {
			if (l && !p.init)
				kp_warn("playback of %s stream %u: fragment of recording %llu without its init segment",
					c->camera, c->stream, (unsigned long long)p.recording_id);
			else
				kp_err("playback of %s stream %u: no memory to load a piece", c->camera, c->stream);
			free(l);
			unref_fd(c, p.fd_slot);
			continue;
		}
		if (l->frag) {
			l->frag->track = *c->ltrack;
			l->frag->start_ms = p.start_ms;
		}
		l->c = c;
		l->gen = c->gen;
		l->fd = c->fds[p.fd_slot].fd;
		l->p = p;
		l->work.data = l;
		int e = uv_queue_work(kp_worker_loop(c->w), &l->work, load_work, load_done);
		if (e < 0) {
			kp_err("playback of %s stream %u: queueing a read: %s", c->camera, c->stream, uv_strerror(e));
			unref_fd(c, p.fd_slot);
			free(l->track);
			free_frag(l->frag);
			free(l);
			continue;
		}
		c->loading = l;
	}
}

/* Drops what is queued or loaded: a seek or a restart follows. */
static void reset(struct rtc_cursor *c, int64_t from_ms)
{
	drop_queue(c);
	free_frag(c->cur);
	free_frag(c->next);
	c->cur = c->next = NULL;
	c->no_more = c->ended = false;
	c->error = NULL;
	c->next_from_ms = from_ms;
	c->last_rec = 0;
	c->last_offset = 0;
	rtc_pace_unanchor(&c->pace);
	uv_timer_stop(&c->timer);
}

struct rtc_cursor *rtc_cursor_open(struct kp_worker *w, const char *camera, unsigned stream, int64_t at_ms,
				   rtc_au_cb au, rtc_cursor_state_cb state, void *arg)
{
	if (rtc_cursor_table_count() >= KP_RTC_CURSORS_PER_SERVER) {
		errno = EMFILE;
		return NULL;
	}
	if (strlen(camera) >= sizeof((struct rtc_cursor *)0)->camera) {
		errno = EINVAL;
		return NULL;
	}
	struct rtc_cursor *c = calloc(1, sizeof *c);
	if (!c)
		return NULL;
	int e = uv_timer_init(kp_worker_loop(w), &c->timer);
	if (e == 0) {
		c->handles++;
		e = uv_timer_init(kp_worker_loop(w), &c->answer_timer);
	}
	if (e == 0) {
		c->handles++;
		e = rtc_cursor_table_add(c, &c->slot);
	}
	c->timer.data = c->answer_timer.data = c;
	if (e < 0) {
		close_handles(c);
		errno = -e;
		return NULL;
	}
	c->w = w;
	snprintf(c->camera, sizeof c->camera, "%s", camera);
	c->stream = stream;
	c->au = au;
	c->state = state;
	c->arg = arg;
	for (unsigned i = 0; i < REC_FDS_MAX; i++)
		c->fds[i].fd = -1;
	rtc_pace_init(&c->pace);
	c->playing = true;
	c->position_ms = at_ms;
	reset(c, at_ms);
	e = send_open(c, at_ms, true);
	if (e < 0) {
		rtc_cursor_close(c);
		errno = -e;
		return NULL;
	}
	return c;
}

void rtc_cursor_set_audio(struct rtc_cursor *c, rtc_audio_cb audio)
{
	c->audio = audio;
}

void rtc_cursor_play(struct rtc_cursor *c)
{
	if (c->playing && !c->ended)
		return;
	c->playing = true;
	rtc_pace_unanchor(&c->pace);
	if (c->error) {
		/* After a failure (recorderd restarted, say): open again where it stopped. */
		rtc_cursor_seek(c, c->position_ms);
		return;
	}
	if (c->ended) {
		/* More may have been recorded since: ask again from where it ended. */
		c->ended = c->no_more = false;
		continue_or_end(c);
	}
	report(c);
	tick(&c->timer);
}

void rtc_cursor_pause(struct rtc_cursor *c)
{
	if (!c->playing)
		return;
	c->playing = false;
	uv_timer_stop(&c->timer);
	report(c);
}

void rtc_cursor_seek(struct rtc_cursor *c, int64_t at_ms)
{
	reset(c, at_ms);
	c->position_ms = at_ms;
	if (send_open(c, at_ms, true) < 0) {
		fail(c, "recorderd cannot be reached");
		return;
	}
	report(c);
}

int rtc_cursor_rate(struct rtc_cursor *c, unsigned rate)
{
	if (rate != 1 && rate != 2 && rate != 4 && rate != 8)
		return -EINVAL;
	if (rate == c->pace.rate)
		return 0;
	rtc_pace_set_rate(&c->pace, rate, now_us());
	report(c);
	if (c->playing)
		tick(&c->timer);
	return 0;
}

static void handle_closed(uv_handle_t *h)
{
	struct rtc_cursor *c = h->data;
	if (--c->handles == 0 && !c->loading)
		cursor_free(c);
}

static void close_handles(struct rtc_cursor *c)
{
	unsigned n = c->handles;
	if (n == 0)
		cursor_free(c);
	if (n >= 1)
		uv_close((uv_handle_t *)&c->timer, handle_closed);
	if (n >= 2)
		uv_close((uv_handle_t *)&c->answer_timer, handle_closed);
}

void rtc_cursor_close(struct rtc_cursor *c)
{
	if (!c || c->closing)
		return;
	c->closing = true;
	c->playing = false;
	rtc_cursor_table_del(c->slot);
	drop_queue(c);
	if (c->loading)
		uv_cancel((uv_req_t *)&c->loading->work);
	close_handles(c);
}

unsigned rtc_cursors_open_count(void)
{
	return rtc_cursor_table_count();
}

static unsigned take_fd(struct rtc_cursor *c, uint64_t recording_id, struct kp_ipc_frame *f)
{
	for (unsigned i = 0; i < REC_FDS_MAX; i++)
		if (c->fds[i].refs && c->fds[i].recording_id == recording_id) {
			c->fds[i].refs++;
			return i;
		}
	for (unsigned i = 0; i < REC_FDS_MAX; i++)
		if (!c->fds[i].refs) {
			c->fds[i] = (struct rec_fd){.recording_id = recording_id, .fd = f->fds[0], .refs = 1};
			f->fds[0] = -1; /* kept */
			return i;
		}
	return REC_FDS_MAX;
}

static void add_piece(struct rtc_cursor *c, const kp_MediaPiece *m, struct kp_ipc_frame *f)
{
	if (!m->init) {
		int64_t end = m->start_ms + m->duration_ms;
		bool repeat = m->recording_id == c->last_rec ? m->offset <= c->last_offset : end <= c->next_from_ms;
		if (repeat && c->last_rec)
			return; /* already queued: a continuation starts at the keyframe at or before */
	}
	/* Beyond the queue, the rest of this answer is dropped and asked for again from
	 * next_from_ms once the queue drains. */
	unsigned slot = c->answer_truncated || c->qlen == PIECES_MAX ? REC_FDS_MAX : take_fd(c, m->recording_id, f);
	if (slot == REC_FDS_MAX) {
		c->answer_truncated = true;
		return;
	}
	c->q[(c->qhead + c->qlen++) % PIECES_MAX] = (struct piece){
	    .recording_id = m->recording_id,
	    .init = m->init,
	    .offset = m->offset,
	    .length = m->length,
	    .start_ms = m->start_ms,
	    .fd_slot = slot,
	};
	if (!m->init) {
		c->last_rec = m->recording_id;
		c->last_offset = m->offset;
		c->next_from_ms = m->start_ms + m->duration_ms;
		c->span_had_fragments = true;
	}
}

void rtc_playback_on_piece(struct kp_ipc_frame *f)
{
	const kp_MediaPiece *m = &f->env->msg.media_piece;
	if (!(m->id & ID_TOP))
		return;
	struct rtc_cursor *c = rtc_cursor_table_get(m->id & SLOT_MASK);
	if (!c || c->req_id != m->id || c->answer_done || c->closing)
		return; /* an answer to a request replaced by a seek or a close: fds are closed */
	bool none = m->result == kp_CatalogResult_CATALOG_NOT_FOUND;
	if (m->result != kp_CatalogResult_CATALOG_OK) {
		if (!none) {
			snprintf(c->why, sizeof c->why, "recorderd refused the recording (%s)",
				 m->error_code[0] ? m->error_code : "error");
			c->answer_done = true;
			uv_timer_stop(&c->answer_timer);
			fail(c, c->why);
			return;
		}
	} else if (f->nfds >= 1 && m->length > 0) {
		add_piece(c, m, f);
	}
	if (!m->done && !none) {
		kick_loader(c);
		return;
	}
	c->answer_done = true;
	uv_timer_stop(&c->answer_timer);
	if (!c->span_had_fragments) {
		if (c->answer_bounded) {
			/* A gap longer than a span: ask for everything after it. */
			if (send_open(c, c->next_from_ms, false) < 0)
				fail(c, "recorderd cannot be reached");
			return;
		}
		c->no_more = true;
	}
	kick_loader(c);
	if (c->playing && !c->cur && !c->closing)
		tick(&c->timer);
	continue_or_end(c);
}
