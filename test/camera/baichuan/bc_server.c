/* The test camera's Baichuan session over any byte transport (camera.h): modern and
 * legacy login in every encryption mode, main/sub streams by handle as BcMedia, keep-
 * alive replies, msg 234 keep-alives over BCUDP with their replies checked, motion
 * alarms, JPEG snapshots in chunks, and the fault switches. With --audio the main stream
 * carries AAC (one "05wb" record per ADTS frame) or ADPCM (one "01wb" record per block),
 * as BAICHUAN.md section 5 and neolink's bcmedia/ser.rs frame them, without a timestamp,
 * sent in time order with the video from the first audio frame at or after the first
 * video frame. G.711 and Opus are RTSP only. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bc_chunks.h"
#include "bc_docs.h"
#include "bc_media.h"
#include "bc_msg.h"
#include "bc_replay.h"
#include "bc_xml.h"
#include "camera.h"
#include "kp_limits.h"

#define CAM_BC_TICK_MS     250
#define CAM_BC_GARBAGE_LEN 512
/* BCUDP: msg 234 from the camera every second ([G] sends one every 500 ms over UDP,
 * BAICHUAN.md section 3). Channel and stream are non-zero on purpose: the client must
 * echo what it received (neolink crates/core/src/bc_protocol/keepalive.rs), so a reply
 * of zeros is counted as a mismatch. */
#define BC_MSG_UDP_KEEPALIVE         234
#define CAM_BC_UDP_KEEPALIVE_MS      1000
#define CAM_BC_UDP_KEEPALIVE_CHANNEL 7
#define CAM_BC_UDP_KEEPALIVE_STREAM  1
#define CAM_BC_UDP_KEEPALIVE_WINDOW  8 /* replies accepted for the last N sent */

struct cam_bc_stream {
	struct cam_bc_session *s;
	unsigned index; /* 0 main, 1 sub */
	bool active;
	uint16_t msg_num;
	uint32_t handle;
	uint8_t channel;
	struct cam_sub *sub;
	struct cam_replay *replay;  /* --replay: sent from a precomputed loop instead of sub */
	struct cam_audio_sub *asub; /* main stream with --audio */
	uint64_t v0_us, audio_sent;
};

struct cam_bc_session {
	uv_loop_t *loop;
	const struct cam_config *cfg;
	struct cam_stream_stats *stats;
	struct cam_bc_transport tr;
	struct bc_reader reader;
	enum { CAM_BC_NEW, CAM_BC_NONCE_SENT, CAM_BC_READY } state;
	struct bc_cipher cipher, login_cipher;
	char nonce[33];
	struct cam_bc_stream streams[2];
	uint16_t push_num;
	uv_timer_t tick, motion, hangup, keepalive;
	unsigned open_handles;
	uint64_t start_ms;
	bool stalled, garbage_sent, oversize_sent, dead;
	unsigned motion_count;
	uint16_t keepalive_num; /* msg_num of the next msg 234 */
	unsigned keepalives_out;
};

static void hang_up(struct cam_bc_session *s);

static void on_hangup(uv_timer_t *t)
{
	struct cam_bc_session *s = t->data;
	s->tr.close(s->tr.t);
}

static void stop_stream(struct cam_bc_stream *st)
{
	if (st->active && st->sub)
		cam_source_unsubscribe(st->sub);
	st->sub = NULL;
	cam_replay_stop(st->replay);
	st->replay = NULL;
	cam_audio_unsubscribe(st->asub);
	st->asub = NULL;
	st->active = false;
}

static void hang_up(struct cam_bc_session *s)
{
	if (s->dead)
		return;
	s->dead = true;
	for (int i = 0; i < 2; i++)
		stop_stream(&s->streams[i]);
	uv_timer_stop(&s->motion);
	uv_timer_stop(&s->tick);
	uv_timer_stop(&s->keepalive);
	/* Deferred: the transport may free us from inside close. */
	uv_timer_start(&s->hangup, on_hangup, 0, 0);
}

static int write_raw(struct cam_bc_session *s, const uint8_t *data, size_t len)
{
	if (s->dead)
		return -EPIPE;
	if (s->stalled)
		return 0;
	int err = s->tr.write(s->tr.t, data, len);
	if (err < 0)
		hang_up(s);
	return err;
}

static int send_msg(struct cam_bc_session *s, const struct bc_msg *m, const struct bc_cipher *c, size_t *ret_len)
{
	uint8_t *buf;
	size_t len;
	int err = bc_msg_encode(m, c, &buf, &len);
	if (err < 0) {
		hang_up(s);
		return err;
	}
	err = write_raw(s, buf, len);
	free(buf);
	if (ret_len)
		*ret_len = len;
	return err;
}

/* A reply to h: same id, number and channel; class 0x0000. */
static int reply(struct cam_bc_session *s, const struct bc_header *h, uint16_t status, const char *xml,
		 const struct bc_cipher *c)
{
	struct bc_msg m = {
	    .h = {.msg_id = h->msg_id,
		  .channel = h->channel,
		  .stream_type = h->stream_type,
		  .msg_num = h->msg_num,
		  .status = status,
		  .cls = BC_CLASS_REPLY},
	    .payload = (const uint8_t *)xml,
	    .payload_len = xml ? strlen(xml) : 0,
	    .payload_xml = true,
	};
	return send_msg(s, &m, c, NULL);
}

struct send_ctx {
	struct cam_bc_session *s;
	size_t wire;
};

static int send_chunk(void *arg, uint8_t *msg, size_t len, size_t payload_off, uint32_t encrypt_len)
{
	struct send_ctx *x = arg;
	(void)payload_off;
	(void)encrypt_len;
	int err = write_raw(x->s, msg, len);
	free(msg);
	x->wire += len;
	return err;
}

/* Binary payload in chunks under msg_id/msg_num; the last chunk may carry last_status. */
static int send_binary(struct cam_bc_session *s, uint32_t msg_id, uint16_t msg_num, uint8_t channel,
		       uint8_t stream_type, const uint8_t *data, size_t len, uint16_t last_status, size_t *ret_wire)
{
	struct cam_bc_chunks h = {.msg_id = msg_id,
				  .msg_num = msg_num,
				  .channel = channel,
				  .stream_type = stream_type,
				  .last_status = last_status};
	struct send_ctx x = {.s = s};
	int err = cam_bc_chunks_encode(&s->cipher, &h, data, len, send_chunk, &x);
	if (err < 0 && !s->dead)
		hang_up(s);
	if (ret_wire)
		*ret_wire = x.wire;
	return err;
}

static void on_audio(const struct cam_audio_frame *f, void *arg)
{
	struct cam_bc_stream *st = arg;
	struct cam_bc_session *s = st->s;
	bool adpcm = cam_audio_kind(s->cfg->audio) == CAM_AUDIO_ADPCM;
	const uint8_t *data = adpcm ? f->raw : f->adts;
	size_t len = adpcm ? f->raw_len : f->adts_len;
	if (!st->active || s->dead || s->stalled || len > UINT16_MAX - 8)
		return;
	uint8_t rec[BC_MEDIA_ADPCM_HEADER + UINT16_MAX + 8];
	size_t hl =
	    adpcm ? bc_media_write_adpcm_header(rec, (uint16_t)len) : bc_media_write_aac_header(rec, (uint16_t)len);
	/* The padding follows the record's u16 payload size (BAICHUAN.md section 5). */
	size_t pad = bc_media_pad(adpcm ? len + 4 : len);
	memcpy(rec + hl, data, len);
	memset(rec + hl + len, 0, pad);
	if (send_binary(s, BC_MSG_PREVIEW, st->msg_num, st->channel, (uint8_t)st->index, rec, hl + len + pad,
			BC_STATUS_OK, NULL) < 0)
		return;
	if (!st->audio_sent++)
		cam_stats.audio_baichuan.first_offset_us = (int64_t)(f->pts_us - st->v0_us);
	cam_stats.audio_baichuan.frames_sent++;
}

static void on_frame(const struct cam_frame *f, void *arg)
{
	struct cam_bc_stream *st = arg;
	struct cam_bc_session *s = st->s;
	if (!st->active || s->dead || s->stalled)
		return;
	if (f->len > BC_MEDIA_MAX_RECORD - BC_MEDIA_FRAME_HEADER_MAX - 8)
		return;
	uint8_t hdr[BC_MEDIA_FRAME_HEADER_MAX];
	/* One µs time per frame, frames in decode order (BAICHUAN.md section 5; neolink takes
	 * it as both PTS and DTS, src/rtsp/factory.rs): the decode time. Without B-frames it
	 * is the presentation time too. */
	size_t hl =
	    bc_media_write_frame_header(hdr, f->keyframe, f->codec == KP_CODEC_H264 ? KP_CODEC_H264 : KP_CODEC_H265,
					(uint32_t)f->len, (uint32_t)f->dts_us, f->keyframe ? cam_utc_s() : 0);
	size_t pad = bc_media_pad(f->len), total = hl + f->len + pad;
	uint8_t *rec = malloc(total);
	if (!rec) {
		hang_up(s);
		return;
	}
	memcpy(rec, hdr, hl);
	memcpy(rec + hl, f->data, f->len);
	memset(rec + hl + f->len, 0, pad);
	size_t wire = 0;
	int err = send_binary(s, BC_MSG_PREVIEW, st->msg_num, st->channel, (uint8_t)st->index, rec, total, BC_STATUS_OK,
			      &wire);
	free(rec);
	if (err == 0) {
		s->stats[st->index].frames_sent++;
		s->stats[st->index].bytes_sent += wire;
	}
	if (err == 0 && st->index == 0 && s->cfg->audio &&
	    (cam_audio_kind(s->cfg->audio) == CAM_AUDIO_AAC || cam_audio_kind(s->cfg->audio) == CAM_AUDIO_ADPCM) &&
	    !st->asub) {
		st->v0_us = f->pts_us;
		if (cam_audio_subscribe(s->cfg->audio, f->pts_us, on_audio, st, &st->asub) < 0)
			hang_up(s);
	}
}

/* Replay mode: one frame's messages, as on_frame would have written them. */
static int on_replay_frame(void *arg, const uint8_t *data, size_t len)
{
	struct cam_bc_stream *st = arg;
	struct cam_bc_session *s = st->s;
	if (!st->active || s->dead || s->stalled)
		return 0;
	int err = write_raw(s, data, len);
	if (err == 0) {
		s->stats[st->index].frames_sent++;
		s->stats[st->index].bytes_sent += len;
	}
	return err;
}

static void on_keepalive(uv_timer_t *t)
{
	struct cam_bc_session *s = t->data;
	if (s->dead || s->stalled)
		return;
	struct bc_msg m = {.h = {.msg_id = BC_MSG_UDP_KEEPALIVE,
				 .channel = CAM_BC_UDP_KEEPALIVE_CHANNEL,
				 .stream_type = CAM_BC_UDP_KEEPALIVE_STREAM,
				 .msg_num = s->keepalive_num,
				 .cls = BC_CLASS_REPLY}};
	if (send_msg(s, &m, &s->cipher, NULL) == 0) {
		s->keepalive_num++;
		s->keepalives_out++;
		cam_stats.udp_keepalives_sent++;
	}
}

/* A reply to one of our msg 234: it must carry the channel, stream and a number we sent
 * recently, with status 200. */
static void on_keepalive_reply(struct cam_bc_session *s, const struct bc_header *h)
{
	uint16_t age = (uint16_t)(s->keepalive_num - h->msg_num);
	if (h->channel == CAM_BC_UDP_KEEPALIVE_CHANNEL && h->stream_type == CAM_BC_UDP_KEEPALIVE_STREAM &&
	    h->status == BC_STATUS_OK && age >= 1 && age <= CAM_BC_UDP_KEEPALIVE_WINDOW && s->keepalives_out) {
		cam_stats.udp_keepalives_answered++;
		s->keepalives_out--;
		return;
	}
	cam_stats.udp_keepalive_mismatches++;
	fprintf(stderr,
		"test camera: msg 234 reply mismatch: channel %u stream %u num %u status %u (sent channel %u stream "
		"%u, next num %u)\n",
		h->channel, h->stream_type, h->msg_num, h->status, CAM_BC_UDP_KEEPALIVE_CHANNEL,
		CAM_BC_UDP_KEEPALIVE_STREAM, s->keepalive_num);
}

static void login_ok(struct cam_bc_session *s, const struct bc_header *h, const struct bc_cipher *reply_cipher)
{
	char doc[BC_DOC_MAX];
	uint32_t w = 0, ht = 0;
	if (s->cfg->main)
		cam_source_size(s->cfg->main, &w, &ht);
	bc_doc_device_info(doc, sizeof doc, w, ht);
	cam_stats.logins_ok++;
	s->state = CAM_BC_READY;
	reply(s, h, BC_STATUS_OK, doc, reply_cipher);
	if (s->tr.bcudp && !s->dead)
		uv_timer_start(&s->keepalive, on_keepalive, CAM_BC_UDP_KEEPALIVE_MS, CAM_BC_UDP_KEEPALIVE_MS);
	if (s->cfg->faults.oversize_body && !s->oversize_sent && !s->dead) {
		/* A header declaring one byte more than the 16 MiB ceiling, and a little body. */
		uint8_t buf[BC_HEADER_LONG + 16] = {0};
		struct bc_header o = {.msg_id = BC_MSG_PREVIEW,
				      .body_len = KP_BAICHUAN_MAX_BODY + 1,
				      .status = BC_STATUS_OK,
				      .cls = BC_CLASS_REPLY};
		bc_header_write(&o, buf, sizeof buf);
		s->oversize_sent = true;
		write_raw(s, buf, sizeof buf);
	}
}

static void login_refused(struct cam_bc_session *s, const struct bc_header *h)
{
	cam_stats.logins_refused++;
	reply(s, h, BC_STATUS_UNAUTHORIZED, NULL, &s->login_cipher);
}

static void on_login(struct cam_bc_session *s, const struct bc_header *h, uint8_t *body)
{
	const char *why;
	char want_u[BC_MD5_HEX_LEN + 1], want_p[BC_MD5_HEX_LEN + 1];
	if (h->cls == BC_CLASS_LEGACY && h->body_len == 0) {
		/* The login upgrade: answer with a nonce and the mode. */
		enum bc_enc offer = BC_ENC_BC, mode = (enum bc_enc)s->cfg->encryption;
		bc_enc_from_offer(h->status, &offer, &why);
		if (mode > offer)
			mode = offer;
		uint8_t rnd[8];
		if (uv_random(NULL, NULL, rnd, sizeof rnd, 0, NULL) < 0) {
			hang_up(s);
			return;
		}
		for (int i = 0; i < 8; i++)
			snprintf(s->nonce + 2 * i, 3, "%02X", rnd[i]);
		s->cipher.mode = mode;
		if (mode >= BC_ENC_AES)
			bc_aes_key(s->nonce, s->cfg->password, s->cipher.key);
		s->login_cipher.mode = mode >= BC_ENC_BC ? BC_ENC_BC : BC_ENC_NONE;
		char doc[BC_DOC_MAX];
		bc_doc_nonce(doc, sizeof doc, s->nonce);
		struct bc_msg m = {.h = {.msg_id = BC_MSG_LOGIN,
					 .channel = h->channel,
					 .msg_num = h->msg_num,
					 .status = bc_enc_reply_word(mode),
					 .cls = BC_CLASS_NONCE},
				   .payload = (const uint8_t *)doc,
				   .payload_len = strlen(doc),
				   .payload_xml = true};
		s->state = CAM_BC_NONCE_SENT;
		send_msg(s, &m, &s->login_cipher, NULL);
		return;
	}
	if (h->cls == BC_CLASS_LEGACY) {
		char u[BC_LEGACY_FIELD_LEN], p[BC_LEGACY_FIELD_LEN];
		s->login_cipher.mode = BC_ENC_BC;
		s->cipher.mode = BC_ENC_BC;
		if (bc_legacy_login_parse(body, h->body_len, u, p, &why) < 0) {
			reply(s, h, BC_STATUS_BAD_REQUEST, NULL, &s->login_cipher);
			return;
		}
		bc_md5_hex31(s->cfg->user, "", want_u);
		/* A camera without a password expects 32 zero bytes and refuses the MD5 of "". */
		if (s->cfg->password[0])
			bc_md5_hex31(s->cfg->password, "", want_p);
		else
			want_p[0] = '\0';
		if (s->cfg->faults.wrong_password || strcmp(u, want_u) || strcmp(p, want_p))
			login_refused(s, h);
		else
			login_ok(s, h, &s->login_cipher);
		return;
	}
	if (s->state != CAM_BC_NONCE_SENT) {
		reply(s, h, BC_STATUS_BAD_REQUEST, NULL, &s->login_cipher);
		return;
	}
	struct bc_msg_in in;
	char user[64], pass[64];
	if (bc_msg_decode(h, body, &s->login_cipher, false, &in, &why) < 0 ||
	    bc_xml_text((const char *)in.payload, in.payload_len, "body/LoginUser/userName", 0, user, sizeof user,
			&why) < 0 ||
	    bc_xml_text((const char *)in.payload, in.payload_len, "body/LoginUser/password", 0, pass, sizeof pass,
			&why) < 0) {
		reply(s, h, BC_STATUS_BAD_REQUEST, NULL, &s->login_cipher);
		return;
	}
	bc_md5_hex31(s->cfg->user, s->nonce, want_u);
	bc_md5_hex31(s->cfg->password, s->nonce, want_p);
	if (s->cfg->faults.wrong_password || strcmp(user, want_u) || strcmp(pass, want_p))
		login_refused(s, h);
	else
		login_ok(s, h, &s->login_cipher);
}

/* The refuse fault: a camera that serves one stream, or is busy or still waking, answers
 * the stream start with a header-only 400 (BAICHUAN.md sections 1 and 8, item 3; neolink
 * crates/core/src/bc_protocol/stream.rs fails the stream on any start reply but 200;
 * reolink_aio baichuan/baichuan.py send() retries a 400 after 1.5 s). */
static bool refused(const struct cam_bc_session *s, unsigned idx)
{
	const struct cam_faults *f = &s->cfg->faults;
	if (!(f->refuse_streams & (1u << idx)))
		return false;
	return !f->refuse_for_s || uv_now(s->loop) - s->cfg->started_ms < f->refuse_for_s * 1000ull;
}

static void on_preview(struct cam_bc_session *s, const struct bc_header *h, const struct bc_msg_in *in)
{
	const char *doc = (const char *)in->payload, *why;
	char type[32];
	unsigned long long handle;
	if (bc_xml_uint(doc, in->payload_len, "body/Preview/handle", &handle, &why) < 0) {
		reply(s, h, BC_STATUS_BAD_REQUEST, NULL, &s->cipher);
		return;
	}
	if (h->msg_id == BC_MSG_PREVIEW_STOP) {
		for (int i = 0; i < 2; i++)
			if (s->streams[i].active && s->streams[i].handle == handle)
				stop_stream(&s->streams[i]);
		reply(s, h, BC_STATUS_OK, NULL, &s->cipher);
		return;
	}
	if (bc_xml_text(doc, in->payload_len, "body/Preview/streamType", 0, type, sizeof type, &why) < 0) {
		reply(s, h, BC_STATUS_BAD_REQUEST, NULL, &s->cipher);
		return;
	}
	int idx = !strcmp(type, "mainStream") ? 0 : !strcmp(type, "subStream") ? 1 : -1;
	if (idx >= 0 && refused(s, (unsigned)idx)) {
		struct cam_stream_stats *st = &s->stats[idx];
		if (st->refused < CAM_REFUSED_TIMES)
			st->refused_at_ms[st->refused] = uv_now(s->loop) - s->cfg->started_ms;
		st->refused++;
		reply(s, h, BC_STATUS_BAD_REQUEST, NULL, &s->cipher);
		return;
	}
	struct cam_source *src = idx == 0 ? s->cfg->main : idx == 1 ? s->cfg->sub : NULL;
	bool handle_used = false;
	for (int i = 0; i < 2; i++)
		handle_used = handle_used || (s->streams[i].active && s->streams[i].handle == handle);
	if (!src || s->streams[idx].active || handle_used) {
		reply(s, h, BC_STATUS_BAD_REQUEST, NULL, &s->cipher);
		return;
	}
	struct cam_bc_stream *st = &s->streams[idx];
	uint32_t w, ht;
	cam_source_size(src, &w, &ht);
	uint8_t info[BC_MEDIA_INFO_SIZE];
	bc_media_write_info(info, w, ht, (uint8_t)cam_source_fps(src));
	char ext[BC_DOC_MAX];
	bool full = s->cipher.mode == BC_ENC_FULL_AES;
	bc_doc_ext_binary(ext, sizeof ext, full ? BC_MEDIA_INFO_SIZE : 0);
	struct bc_msg m = {
	    .h = {.msg_id = BC_MSG_PREVIEW,
		  .channel = h->channel,
		  .stream_type = h->stream_type,
		  .msg_num = h->msg_num,
		  .status = BC_STATUS_OK,
		  .cls = BC_CLASS_REPLY},
	    .ext = ext,
	    .ext_len = strlen(ext),
	    .payload = info,
	    .payload_len = sizeof info,
	    .encrypt_len = full ? BC_MEDIA_INFO_SIZE : 0,
	};
	if (send_msg(s, &m, &s->cipher, NULL) < 0)
		return;
	*st = (struct cam_bc_stream){
	    .s = s, .index = (unsigned)idx, .msg_num = h->msg_num, .handle = (uint32_t)handle, .channel = h->channel};
	struct cam_bc_chunks ch = {.msg_id = BC_MSG_PREVIEW,
				   .msg_num = st->msg_num,
				   .channel = st->channel,
				   .stream_type = (uint8_t)st->index,
				   .last_status = BC_STATUS_OK};
	if (s->cfg->replay ? cam_replay_start(s->loop, src, &s->cipher, &ch, s->cfg->replay_epoch_us, on_replay_frame,
					      st, &st->replay) < 0
			   : cam_source_subscribe(src, on_frame, st, &st->sub) < 0) {
		hang_up(s);
		return;
	}
	st->active = true;
	s->stats[idx].sessions++;
}

static void on_motion(uv_timer_t *t)
{
	struct cam_bc_session *s = t->data;
	char doc[BC_DOC_MAX];
	if (s->dead || s->stalled)
		return;
	bc_doc_alarm_event(doc, sizeof doc, 0, s->cfg->alarm_status, s->cfg->alarm_ai, s->motion_count++);
	struct bc_msg m = {.h = {.msg_id = BC_MSG_ALARM_EVENT, .status = BC_STATUS_OK, .cls = BC_CLASS_REPLY},
			   .payload = (const uint8_t *)doc,
			   .payload_len = strlen(doc),
			   .payload_xml = true};
	if (send_msg(s, &m, &s->cipher, NULL) == 0)
		cam_stats.motion_sent++;
}

static void on_snap(struct cam_bc_session *s, const struct bc_header *h)
{
	FILE *f = s->cfg->snapshot_jpeg ? fopen(s->cfg->snapshot_jpeg, "rbe") : NULL;
	uint8_t *jpeg = NULL;
	long size = -1;
	if (f && fseek(f, 0, SEEK_END) == 0 && (size = ftell(f)) > 0 && size <= (long)KP_ANALYSIS_JPEG_MAX &&
	    fseek(f, 0, SEEK_SET) == 0 && (jpeg = malloc((size_t)size)) &&
	    fread(jpeg, 1, (size_t)size, f) != (size_t)size) {
		free(jpeg);
		jpeg = NULL;
	}
	if (f)
		fclose(f);
	if (!jpeg) {
		reply(s, h, BC_STATUS_BAD_REQUEST, NULL, &s->cipher);
		return;
	}
	char doc[BC_DOC_MAX];
	bc_doc_snap_reply(doc, sizeof doc, h->channel, "snapshot.jpg", (uint64_t)size);
	if (reply(s, h, BC_STATUS_OK, doc, &s->cipher) == 0)
		send_binary(s, BC_MSG_SNAP, s->push_num++, h->channel, 0, jpeg, (size_t)size, BC_STATUS_OK_LAST, NULL);
	free(jpeg);
}

static int on_message(void *arg, const struct bc_header *h, uint8_t *body, const char **ret_reason)
{
	struct cam_bc_session *s = arg;
	const char *why;
	struct bc_msg_in in;
	if (s->dead)
		goto out_stop;
	if (h->msg_id == BC_MSG_LOGIN) {
		on_login(s, h, body);
		goto out;
	}
	if (h->msg_id == BC_MSG_UDP_KEEPALIVE && s->state == CAM_BC_READY) {
		on_keepalive_reply(s, h);
		goto out;
	}
	if (s->state != CAM_BC_READY) {
		reply(s, h, BC_STATUS_BAD_REQUEST, NULL, &s->login_cipher);
		hang_up(s);
		goto out_stop;
	}
	if (bc_msg_decode(h, body, &s->cipher, false, &in, &why) < 0) {
		reply(s, h, BC_STATUS_BAD_REQUEST, NULL, &s->cipher);
		goto out;
	}
	switch (h->msg_id) {
	case BC_MSG_PREVIEW:
	case BC_MSG_PREVIEW_STOP:
		on_preview(s, h, &in);
		break;
	case BC_MSG_LINK_TYPE: {
		char doc[BC_DOC_MAX];
		bc_doc_link_type(doc, sizeof doc);
		reply(s, h, BC_STATUS_OK, doc, &s->cipher);
		break;
	}
	case BC_MSG_ALARM_START:
		reply(s, h, BC_STATUS_OK, NULL, &s->cipher);
		if (s->cfg->motion_interval_s && !uv_is_active((uv_handle_t *)&s->motion))
			uv_timer_start(&s->motion, on_motion, s->cfg->motion_interval_s * 1000ull,
				       s->cfg->motion_interval_s * 1000ull);
		break;
	case BC_MSG_SNAP:
		on_snap(s, h);
		break;
	case BC_MSG_LOGOUT:
		hang_up(s);
		break;
	default:
		reply(s, h, BC_STATUS_BAD_REQUEST, NULL, &s->cipher);
		break;
	}
out:
	if (!s->dead)
		return 0;
out_stop:
	*ret_reason = "session ended";
	return -ECANCELED;
}

static void on_tick(uv_timer_t *t)
{
	struct cam_bc_session *s = t->data;
	const struct cam_faults *f = &s->cfg->faults;
	uint64_t up = uv_now(s->loop) - s->start_ms;
	if (s->dead)
		return;
	if (f->drop_after_s && up >= f->drop_after_s * 1000ull) {
		hang_up(s);
		return;
	}
	if (f->garbage_after_s && !s->garbage_sent && up >= f->garbage_after_s * 1000ull) {
		uint8_t junk[CAM_BC_GARBAGE_LEN];
		for (size_t i = 0; i < sizeof junk; i++)
			junk[i] = (uint8_t)(0x5a ^ i * 37);
		s->garbage_sent = true;
		write_raw(s, junk, sizeof junk);
	}
	if (f->stall_after_s && up >= f->stall_after_s * 1000ull)
		s->stalled = true;
}

struct cam_bc_session *cam_bc_session_new(uv_loop_t *loop, const struct cam_config *cfg,
					  struct cam_stream_stats stats[2], struct cam_bc_transport tr)
{
	struct cam_bc_session *s = calloc(1, sizeof *s);
	if (!s)
		return NULL;
	s->loop = loop;
	s->cfg = cfg;
	s->stats = stats;
	s->tr = tr;
	s->start_ms = uv_now(loop);
	s->login_cipher.mode = BC_ENC_BC;
	s->cipher.mode = BC_ENC_BC;
	uv_timer_t *timers[] = {&s->tick, &s->motion, &s->hangup, &s->keepalive};
	for (int i = 0; i < 4; i++) {
		uv_timer_init(loop, timers[i]);
		timers[i]->data = s;
	}
	s->open_handles = 4;
	uv_timer_start(&s->tick, on_tick, CAM_BC_TICK_MS, CAM_BC_TICK_MS);
	return s;
}

void cam_bc_session_input(struct cam_bc_session *s, const uint8_t *data, size_t len)
{
	const char *why;
	if (s->dead)
		return;
	if (bc_reader_feed(&s->reader, data, len, on_message, s, &why) < 0)
		hang_up(s);
}

static void on_timer_closed(uv_handle_t *h)
{
	struct cam_bc_session *s = h->data;
	if (--s->open_handles == 0)
		free(s);
}

void cam_bc_session_free(struct cam_bc_session *s)
{
	if (!s)
		return;
	for (int i = 0; i < 2; i++)
		stop_stream(&s->streams[i]);
	s->dead = true;
	bc_reader_free(&s->reader);
	uv_close((uv_handle_t *)&s->tick, on_timer_closed);
	uv_close((uv_handle_t *)&s->motion, on_timer_closed);
	uv_close((uv_handle_t *)&s->hangup, on_timer_closed);
	uv_close((uv_handle_t *)&s->keepalive, on_timer_closed);
}
