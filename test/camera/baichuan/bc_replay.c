/* Replay mode (bc_replay.h). When a stream starts, one loop of its fixture is encoded
 * once as the exact messages the live session writes for each frame (the BcMedia record
 * of bc_server.c's on_frame cut by bc_chunks.c with the session's cipher, number,
 * channel and stream), and each frame is then sent from that image: only its two
 * timestamps change from loop to loop, the µs decode time and, on keyframes, the UTC
 * second of the additional header (BAICHUAN.md section 5), patched in place. With full
 * AES those fields lie in the chunk's encrypted leading bytes (section 2, encryptLen),
 * which are encrypted again from their plaintext: 256 bytes of AES-CFB per frame. Frame
 * indices, the keyframe start and the timestamps follow media.c's live pacing; each
 * stream keeps its camera's clock origin, so cameras sharing this process's one timer
 * (set for the next frame due, at least 2 ms ahead) are not in phase. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "bc_media.h"
#include "bc_replay.h"

#define CAM_REPLAY_TICK_MS   2
#define CAM_REPLAY_PAUSED_MS 100 /* after SIGUSR1 nothing is sent: look now and then */
#define REC_TS_OFF           16  /* BcMedia frame: u32 µs timestamp */
#define REC_UTC_OFF          24  /* first u32 of the additional header: UTC seconds */

struct rp_frame {
	size_t off, len; /* the frame's messages in img */
	size_t pl;       /* its first chunk's payload in img */
	uint32_t enc;    /* full AES: leading payload bytes encrypted */
	uint8_t *head;   /* ... and their plaintext */
	bool keyframe;
};

struct cam_replay {
	struct cam_replay *next;
	const struct cam_source *src;
	struct bc_cipher c;
	uint8_t *img;
	size_t img_len, img_cap;
	struct rp_frame *f;
	size_t n;
	uint64_t epoch_us, index;
	bool started, dead;
	cam_replay_send_fn send;
	void *arg;
	struct rp_frame *building; /* the frame being encoded (append's state) */
};

static struct {
	uv_timer_t timer;
	bool timer_init, ticking;
	struct cam_replay *head;
} rp;

static void rp_free(struct cam_replay *r)
{
	for (size_t i = 0; r->f && i < r->n; i++)
		free(r->f[i].head);
	free(r->f);
	free(r->img);
	free(r);
}

static int append(void *arg, uint8_t *msg, size_t len, size_t payload_off, uint32_t enc)
{
	struct cam_replay *r = arg;
	struct rp_frame *fr = r->building;
	if (r->img_len + len > r->img_cap) {
		size_t cap = r->img_cap ? r->img_cap * 2 : 1u << 20;
		while (cap < r->img_len + len)
			cap *= 2;
		uint8_t *p = realloc(r->img, cap);
		if (!p) {
			free(msg);
			return -ENOMEM;
		}
		r->img = p;
		r->img_cap = cap;
	}
	if (fr->len == 0) { /* the frame's first chunk holds the record's header */
		fr->off = r->img_len;
		fr->pl = r->img_len + payload_off;
		fr->enc = enc;
	}
	memcpy(r->img + r->img_len, msg, len);
	r->img_len += len;
	fr->len += len;
	free(msg);
	return 0;
}

/* The record on_frame (bc_server.c) builds for frame i of the loop, encoded into img. */
static int encode_frame(struct cam_replay *r, size_t i, const struct cam_bc_chunks *h)
{
	const uint8_t *data;
	size_t len;
	bool key;
	cam_source_loop_frame(r->src, i, &data, &len, &key);
	if (len > BC_MEDIA_MAX_RECORD - BC_MEDIA_FRAME_HEADER_MAX - 8)
		return -EMSGSIZE;
	uint8_t hdr[BC_MEDIA_FRAME_HEADER_MAX];
	size_t hl = bc_media_write_frame_header(hdr, key, cam_source_codec(r->src), (uint32_t)len,
						(uint32_t)cam_source_dts_us(r->src, i), key ? cam_utc_s() : 0);
	size_t pad = bc_media_pad(len), total = hl + len + pad;
	uint8_t *rec = malloc(total);
	if (!rec)
		return -ENOMEM;
	memcpy(rec, hdr, hl);
	memcpy(rec + hl, data, len);
	memset(rec + hl + len, 0, pad);
	struct rp_frame *fr = &r->f[i];
	*fr = (struct rp_frame){.keyframe = key};
	r->building = fr;
	int err = cam_bc_chunks_encode(&r->c, h, rec, total, append, r);
	if (!err && fr->enc) {
		fr->head = malloc(fr->enc);
		if (fr->head)
			memcpy(fr->head, rec, fr->enc);
		else
			err = -ENOMEM;
	}
	free(rec);
	return err;
}

/* Writes v at offset off of the frame's record: in the image, or in the plaintext of the
 * encrypted head (encrypted again by the caller). */
static void patch(struct cam_replay *r, struct rp_frame *fr, uint8_t *head, size_t off, uint32_t v)
{
	uint8_t le[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
	for (size_t i = 0; i < 4; i++) {
		if (off + i < fr->enc)
			head[off + i] = le[i];
		else
			r->img[fr->pl + off + i] = le[i];
	}
}

static void send_frame(struct cam_replay *r, uint64_t k)
{
	struct rp_frame *fr = &r->f[k % r->n];
	if (!r->started && !fr->keyframe)
		return;
	r->started = true;
	uint8_t head[CAM_BC_ENCRYPT_LEN];
	if (fr->enc)
		memcpy(head, fr->head, fr->enc);
	patch(r, fr, head, REC_TS_OFF, (uint32_t)cam_source_dts_us(r->src, k));
	if (fr->keyframe)
		patch(r, fr, head, REC_UTC_OFF, cam_utc_s());
	if (fr->enc) {
		if (bc_aes(r->c.key, true, head, fr->enc) < 0) {
			r->dead = true;
			return;
		}
		memcpy(r->img + fr->pl, head, fr->enc);
	}
	if (r->send(r->arg, r->img + fr->off, fr->len) < 0)
		r->dead = true;
}

static uint64_t due_index(const struct cam_replay *r, uint64_t now_us)
{
	uint64_t fps = cam_source_fps(r->src);
	return now_us < r->epoch_us ? 0 : (now_us - r->epoch_us) * fps / 1000000 + 1;
}

/* Until the next frame of any stream is due, at least CAM_REPLAY_TICK_MS (frames due
 * meanwhile go out together). */
static uint64_t next_wait_ms(uint64_t now_us)
{
	uint64_t first = UINT64_MAX;
	for (struct cam_replay *r = rp.head; r; r = r->next) {
		uint64_t at = r->epoch_us + r->index * 1000000 / cam_source_fps(r->src);
		if (!r->dead && at < first)
			first = at;
	}
	uint64_t ms = first > now_us ? (first - now_us + 999) / 1000 : 0;
	return ms > CAM_REPLAY_TICK_MS ? ms : CAM_REPLAY_TICK_MS;
}

static void on_tick(uv_timer_t *t)
{
	(void)t;
	uint64_t now_us = uv_hrtime() / 1000;
	for (struct cam_replay *r = rp.head; r; r = r->next) {
		if (r->dead || cam_sources_paused())
			continue;
		/* As media.c: every frame that is due; after a long stall, skip ahead. */
		uint64_t due = due_index(r, now_us);
		if (due > r->index + (uint64_t)cam_source_fps(r->src) * 2)
			r->index = due - 1;
		while (r->index < due && !r->dead)
			send_frame(r, r->index++);
	}
	for (struct cam_replay **p = &rp.head; *p;) {
		struct cam_replay *r = *p;
		if (r->dead && !r->send) {
			*p = r->next;
			rp_free(r);
		} else {
			p = &r->next;
		}
	}
	if (!rp.head) {
		rp.ticking = false;
		return;
	}
	uv_timer_start(&rp.timer, on_tick, cam_sources_paused() ? CAM_REPLAY_PAUSED_MS : next_wait_ms(now_us), 0);
}

int cam_replay_start(uv_loop_t *loop, const struct cam_source *src, const struct bc_cipher *c,
		     const struct cam_bc_chunks *h, uint64_t epoch_us, cam_replay_send_fn send, void *arg,
		     struct cam_replay **ret)
{
	struct cam_replay *r = calloc(1, sizeof *r);
	if (!r)
		return -ENOMEM;
	r->src = src;
	r->c = *c;
	r->n = cam_source_loop_len(src);
	r->epoch_us = epoch_us;
	r->send = send;
	r->arg = arg;
	r->f = calloc(r->n, sizeof *r->f);
	int err = r->f ? 0 : -ENOMEM;
	for (size_t i = 0; !err && i < r->n; i++)
		err = encode_frame(r, i, h);
	if (err < 0) {
		rp_free(r);
		return err;
	}
	if (!rp.timer_init) {
		if ((err = uv_timer_init(loop, &rp.timer)) < 0) {
			rp_free(r);
			return err;
		}
		rp.timer_init = true;
	}
	if (!rp.ticking) {
		uv_timer_start(&rp.timer, on_tick, CAM_REPLAY_TICK_MS, 0);
		rp.ticking = true;
	}
	r->index = due_index(r, uv_hrtime() / 1000);
	r->next = rp.head;
	rp.head = r;
	*ret = r;
	return 0;
}

void cam_replay_stop(struct cam_replay *r)
{
	if (!r)
		return;
	/* Freed by the next tick, so that a stop from inside send is safe. */
	r->dead = true;
	r->send = NULL;
}
