/* The Baichuan driver of ingestd (baichuan:// over TCP, bcudp:// over BCUDP): connect,
 * modern login with a legacy fallback, encryption negotiation, stream start per
 * configured stream (a stream the camera refuses fails alone and is requested again when
 * the core says so), keep-alive, the camera's UDP keep-alive echoed, alarms, and the
 * failure reasons the core shows, all reported through the sink the core hands over at
 * start (ingestd/camera.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bc_docs.h"
#include "bc_msg.h"
#include "bc_stream.h"
#include "bc_transport.h"
#include "bc_url.h"
#include "bc_xml.h"
#include "camera.h"
#include "config.h"
#include "kp_limits.h"
#include "kp_time.h"
#include "log.h"

#define BC_CONNECT_TIMEOUT_MS 5000
#define BC_LOGIN_TIMEOUT_MS   10000
#define BC_PING_INTERVAL_MS   5000
#define BC_PING_MAX_MISSED    3
#define BC_MEDIA_TIMEOUT_MS   20000
#define BC_TICK_MS            1000
#define BC_MAX_ALARM_EVENTS   16
#define BC_MSG_UDP_KEEPALIVE  234

enum bc_phase { PHASE_CONNECTING, PHASE_UPGRADE, PHASE_LOGIN, PHASE_LEGACY, PHASE_READY };

struct ing_driver {
	const struct ing_camera_info *info;
	const struct ing_sink *sink;
	uv_loop_t *loop;
	struct bc_url url;
	struct bc_transport *tr;
	struct bc_reader reader;
	struct bc_cipher login_cipher, cipher;
	enum bc_phase phase;
	uint16_t next_num;
	struct bc_stream streams[2];
	uv_timer_t tick;
	uint64_t phase_start_ms, last_ping_ms;
	bool ping_outstanding;
	unsigned missed_pings;
	bool failed;
};

static const char *const stream_names[2] = {"mainStream", "subStream"};

static void fail(struct ing_driver *d, bool auth, const char *reason)
{
	if (d->failed)
		return;
	d->failed = true;
	uv_timer_stop(&d->tick);
	d->sink->failed(d->sink->ctx, auth, reason);
}

static int send_msg(struct ing_driver *d, const struct bc_msg *m, const struct bc_cipher *c)
{
	uint8_t *buf;
	size_t len;
	int err = bc_msg_encode(m, c, &buf, &len);
	if (err < 0) {
		fail(d, false, "cannot encode a request");
		return err;
	}
	err = d->tr->ops->write(d->tr, buf, len);
	free(buf);
	if (err < 0)
		fail(d, false, err == -ENOBUFS ? "send queue to the camera is full" : "connection lost while sending");
	return err;
}

/* A modern request with an XML payload (or none) and the session's cipher. */
static int send_request(struct ing_driver *d, uint32_t msg_id, uint16_t msg_num, uint8_t stream_type, const char *xml)
{
	struct bc_msg m = {
	    .h = {.msg_id = msg_id,
		  .channel = d->url.channel,
		  .stream_type = stream_type,
		  .msg_num = msg_num,
		  .cls = BC_CLASS_MODERN},
	    .payload = (const uint8_t *)xml,
	    .payload_len = xml ? strlen(xml) : 0,
	    .payload_xml = true,
	};
	return send_msg(d, &m, &d->cipher);
}

static void send_upgrade(struct ing_driver *d)
{
	struct bc_msg m = {.h = {.msg_id = BC_MSG_LOGIN,
				 .msg_num = d->next_num++,
				 .status = bc_enc_offer_word(BC_ENC_FULL_AES),
				 .cls = BC_CLASS_LEGACY}};
	d->phase = PHASE_UPGRADE;
	send_msg(d, &m, &d->cipher);
}

static void send_legacy_login(struct ing_driver *d)
{
	uint8_t body[BC_LEGACY_LOGIN_LEN];
	if (bc_legacy_login_build(d->url.user, d->url.password, body) < 0) {
		fail(d, false, "cannot hash the credentials");
		return;
	}
	struct bc_msg m = {.h = {.msg_id = BC_MSG_LOGIN,
				 .msg_num = d->next_num++,
				 .status = bc_enc_offer_word(BC_ENC_BC),
				 .cls = BC_CLASS_LEGACY},
			   .payload = body,
			   .payload_len = sizeof body};
	struct bc_cipher none = {.mode = BC_ENC_NONE};
	d->phase = PHASE_LEGACY;
	send_msg(d, &m, &none);
}

static void on_nonce(struct ing_driver *d, const struct bc_header *h, const struct bc_msg_in *in)
{
	enum bc_enc mode;
	const char *why;
	char nonce[128], uh[BC_MD5_HEX_LEN + 1], ph[BC_MD5_HEX_LEN + 1], doc[BC_DOC_MAX], reason[160];
	if (bc_enc_from_reply(h->status, &mode, &why) < 0) {
		snprintf(reason, sizeof reason, "login failed: %s (0x%04x)", why, h->status);
		fail(d, false, reason);
		return;
	}
	if (in->binary || bc_xml_text((const char *)in->payload, in->payload_len, "body/Encryption/nonce", 0, nonce,
				      sizeof nonce, &why) < 0) {
		snprintf(reason, sizeof reason, "login failed: no nonce in the camera's reply: %s", why);
		fail(d, false, reason);
		return;
	}
	d->cipher.mode = mode;
	if (mode >= BC_ENC_AES && bc_aes_key(nonce, d->url.password, d->cipher.key) < 0) {
		fail(d, false, "cannot derive the AES key");
		return;
	}
	/* During login the cipher is at most BC. */
	d->login_cipher.mode = mode >= BC_ENC_BC ? BC_ENC_BC : BC_ENC_NONE;
	if (bc_md5_hex31(d->url.user, nonce, uh) < 0 || bc_md5_hex31(d->url.password, nonce, ph) < 0 ||
	    bc_doc_login_user(doc, sizeof doc, uh, ph) < 0) {
		fail(d, false, "cannot build the login request");
		return;
	}
	struct bc_msg m = {.h = {.msg_id = BC_MSG_LOGIN, .msg_num = d->next_num++, .cls = BC_CLASS_MODERN},
			   .payload = (const uint8_t *)doc,
			   .payload_len = strlen(doc),
			   .payload_xml = true};
	d->phase = PHASE_LOGIN;
	send_msg(d, &m, &d->login_cipher);
}

static uint64_t now_ms(struct ing_driver *d)
{
	return uv_now(d->loop);
}

/* msg 3 for stream i under a new message number, so that anything late for an earlier
 * request of the same stream is ignored. */
static int request_stream(struct ing_driver *d, int i)
{
	char doc[BC_DOC_MAX];
	struct bc_stream *s = &d->streams[i];
	s->msg_num = d->next_num++;
	s->requested = true;
	s->start_ms = now_ms(d);
	if (bc_doc_preview(doc, sizeof doc, d->url.channel, s->handle, stream_names[i]) < 0) {
		fail(d, false, "cannot build the stream request");
		return -ENOBUFS;
	}
	return send_request(d, BC_MSG_PREVIEW, s->msg_num, (uint8_t)i, doc);
}

static void start_streams(struct ing_driver *d)
{
	for (int i = 0; i < 2 && !d->failed; i++)
		if (d->info->streams & (i == 0 ? KP_STREAM_MAIN : KP_STREAM_SUB))
			request_stream(d, i);
}

static void on_logged_in(struct ing_driver *d)
{
	static const char *const modes[] = {"none", "BC", "AES", "full AES"};
	kp_info("camera %s (%s): logged in, encryption %s", d->info->name, d->info->url_redacted,
		modes[d->cipher.mode]);
	d->phase = PHASE_READY;
	d->last_ping_ms = now_ms(d);
	start_streams(d);
	if (d->info->motion_events && !d->failed)
		send_request(d, BC_MSG_ALARM_START, d->next_num++, 0, NULL);
}

static void on_login_reply(struct ing_driver *d, const struct bc_header *h)
{
	char reason[96];
	if (h->status == BC_STATUS_OK) {
		if (d->phase == PHASE_LEGACY)
			d->cipher.mode = BC_ENC_BC;
		on_logged_in(d);
		return;
	}
	snprintf(reason, sizeof reason, "login refused by camera: status %u", h->status);
	fail(d, true, reason);
}

static void on_alarm(struct ing_driver *d, const struct bc_msg_in *in)
{
	const char *doc = (const char *)in->payload, *why;
	struct bc_xml_span ev;
	if (in->binary)
		return;
	int64_t wall = kp_wall_ms();
	for (unsigned i = 0; i < BC_MAX_ALARM_EVENTS &&
			     bc_xml_find(doc, in->payload_len, "body/AlarmEventList/AlarmEvent", i, &ev, &why) == 0;
	     i++) {
		char status[64] = "", ai[128] = "", labels[128] = "";
		unsigned long long ch;
		if (bc_xml_uint(ev.p, ev.len, "channelId", &ch, &why) == 0 && ch != d->url.channel)
			continue;
		bc_xml_text(ev.p, ev.len, "status", 0, status, sizeof status, &why);
		bc_xml_text(ev.p, ev.len, "AItype", 0, ai, sizeof ai, &why);
		/* AI models report status "none" with AItype "people": either one is an event;
		 * a doorbell's press is a status holding "visitor" (BAICHUAN.md section 4). */
		bool visitor = strstr(status, "visitor") != NULL;
		size_t o = 0;
		for (char *save = NULL, *tok = strtok_r(ai, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
			if (!strcmp(tok, "none") || !*tok)
				continue;
			int n = snprintf(labels + o, sizeof labels - o, "%s%s", o ? "," : "", tok);
			if (n < 0 || (size_t)n >= sizeof labels - o)
				break;
			o += (size_t)n;
		}
		if (visitor && !strstr(labels, "visitor")) {
			int n = snprintf(labels + o, sizeof labels - o, "%svisitor", o ? "," : "");
			if (n > 0 && (size_t)n < sizeof labels - o)
				o += (size_t)n;
		}
		if (strstr(status, "MD") || visitor || o)
			d->sink->event(d->sink->ctx, visitor ? "visitor" : "motion", labels, wall);
	}
}

static void on_media(struct ing_driver *d, const struct bc_header *h, uint8_t *body)
{
	struct bc_stream *s = NULL;
	const char *why;
	char reason[160];
	for (int i = 0; i < 2; i++)
		if (d->streams[i].requested && d->streams[i].msg_num == h->msg_num)
			s = &d->streams[i];
	if (!s)
		return; /* not ours: a stopped stream, or a stray number */
	d->sink->bytes(d->sink->ctx, s->index, h->header_len + h->body_len);
	if (!s->binary && h->status != BC_STATUS_OK) {
		/* The session is fine: this stream alone is retried (a camera that serves one
		 * stream, or a busy or waking one, answers 400; BAICHUAN.md sections 1 and 8). */
		snprintf(reason, sizeof reason, "camera refused the %s stream: status %u", stream_names[s->index],
			 h->status);
		s->requested = false;
		d->sink->stream_failed(d->sink->ctx, s->index, reason);
		return;
	}
	struct bc_msg_in in;
	if (bc_msg_decode(h, body, &d->cipher, s->binary, &in, &why) < 0) {
		snprintf(reason, sizeof reason, "bad media message: %s", why);
		fail(d, false, reason);
		return;
	}
	if (!in.binary)
		return; /* an XML answer without media yet */
	s->binary = true;
	if (bc_stream_payload(s, in.payload, in.payload_len, now_ms(d), &why) < 0) {
		snprintf(reason, sizeof reason, "%s stream: %s", stream_names[s->index], why);
		fail(d, false, reason);
	}
}

static int on_message(void *arg, const struct bc_header *h, uint8_t *body, const char **ret_reason)
{
	struct ing_driver *d = arg;
	struct bc_msg_in in;
	const char *why;
	char reason[192];
	if (d->failed)
		goto out_stop;
	if (d->phase == PHASE_READY && h->msg_id == BC_MSG_PREVIEW) {
		on_media(d, h, body);
		goto out;
	}
	if (bc_msg_decode(h, body, d->phase == PHASE_READY ? &d->cipher : &d->login_cipher, false, &in, &why) < 0) {
		snprintf(reason, sizeof reason, "bad message %u from the camera: %s", h->msg_id, why);
		fail(d, false, reason);
		goto out_stop;
	}
	switch (d->phase) {
	case PHASE_CONNECTING:
		break;
	case PHASE_UPGRADE:
		if (h->msg_id != BC_MSG_LOGIN)
			break;
		if (h->cls == BC_CLASS_NONCE)
			on_nonce(d, h, &in);
		else
			send_legacy_login(d); /* the camera does not know the upgrade */
		break;
	case PHASE_LOGIN:
	case PHASE_LEGACY:
		if (h->msg_id == BC_MSG_LOGIN)
			on_login_reply(d, h);
		break;
	case PHASE_READY:
		switch (h->msg_id) {
		case BC_MSG_LINK_TYPE:
			d->ping_outstanding = false;
			d->missed_pings = 0;
			break;
		case BC_MSG_ALARM_EVENT:
			on_alarm(d, &in);
			break;
		case BC_MSG_ALARM_START:
			if (h->status != BC_STATUS_OK)
				kp_warn("camera %s: alarm reporting refused: status %u", d->info->name, h->status);
			break;
		case BC_MSG_UDP_KEEPALIVE: {
			/* Echo the camera's channel, stream and number with status 200, as neolink
			 * does (crates/core/src/bc_protocol/keepalive.rs). */
			struct bc_msg m = {.h = {.msg_id = h->msg_id,
						 .channel = h->channel,
						 .stream_type = h->stream_type,
						 .msg_num = h->msg_num,
						 .status = BC_STATUS_OK,
						 .cls = BC_CLASS_MODERN}};
			send_msg(d, &m, &d->cipher);
			break;
		}
		default:
			break; /* replies and pushes nobody waits for are dropped */
		}
		break;
	}
out:
	if (!d->failed)
		return 0;
out_stop:
	*ret_reason = "session failed";
	return -ECANCELED;
}

static void on_connected(void *arg)
{
	struct ing_driver *d = arg;
	d->phase_start_ms = now_ms(d);
	send_upgrade(d);
}

static void on_data(void *arg, const uint8_t *data, size_t len)
{
	struct ing_driver *d = arg;
	const char *why = NULL;
	char reason[160];
	if (d->failed)
		return;
	int err = bc_reader_feed(&d->reader, data, len, on_message, d, &why);
	if (err == 0 || d->failed)
		return;
	if (err == -EMSGSIZE) {
		unsigned body = d->reader.len >= 12 ? bc_header_raw_body_len(d->reader.buf) : 0;
		snprintf(reason, sizeof reason, "message body of %u bytes exceeds the 16 MiB ceiling", body);
	} else {
		snprintf(reason, sizeof reason, "protocol error: %s", why);
	}
	kp_warn("camera %s (%s): closing the connection: %s", d->info->name, d->info->url_redacted, reason);
	fail(d, false, reason);
}

static void on_transport_error(void *arg, int err, const char *why)
{
	struct ing_driver *d = arg;
	char reason[160];
	(void)err;
	snprintf(reason, sizeof reason, "%s: %s", d->phase == PHASE_CONNECTING ? "connect failed" : "connection lost",
		 why);
	fail(d, false, reason);
}

static void on_tick(uv_timer_t *t)
{
	struct ing_driver *d = t->data;
	uint64_t now = now_ms(d);
	char reason[96];
	if (d->failed)
		return;
	if (d->phase != PHASE_READY) {
		if (d->phase != PHASE_CONNECTING && now - d->phase_start_ms > BC_LOGIN_TIMEOUT_MS)
			fail(d, false, "login timed out");
		return;
	}
	if (now - d->last_ping_ms >= BC_PING_INTERVAL_MS) {
		if (d->ping_outstanding && ++d->missed_pings >= BC_PING_MAX_MISSED) {
			fail(d, false, "camera did not answer 3 keep-alives");
			return;
		}
		d->last_ping_ms = now;
		d->ping_outstanding = true;
		send_request(d, BC_MSG_LINK_TYPE, d->next_num++, 0, NULL);
	}
	for (int i = 0; i < 2 && !d->failed; i++) {
		struct bc_stream *s = &d->streams[i];
		uint64_t since = s->streaming ? s->last_frame_ms : s->start_ms;
		if (s->requested && now - since > BC_MEDIA_TIMEOUT_MS) {
			snprintf(reason, sizeof reason, "no video on the %s stream for %u s", stream_names[i],
				 BC_MEDIA_TIMEOUT_MS / 1000);
			fail(d, false, reason);
		}
	}
}

static void on_tick_closed(uv_handle_t *h)
{
	struct ing_driver *d = h->data;
	free(d);
}

static int bc_start(const struct ing_camera_info *info, const struct ing_sink *sink, uv_loop_t *loop,
		    struct ing_driver **ret)
{
	const char *why;
	struct ing_driver *d = calloc(1, sizeof *d);
	if (!d)
		return -ENOMEM;
	int err = bc_url_parse(info->url, &d->url, &why);
	if (err < 0) {
		kp_err("camera %s (%s): %s", info->name, info->url_redacted, why);
		free(d);
		return err;
	}
	d->info = info;
	d->sink = sink;
	d->loop = loop;
	for (int i = 0; i < 2; i++)
		bc_stream_init(&d->streams[i], info, sink, (enum kp_stream_index)i);
	static const struct bc_transport_cbs cbs = {
	    .on_connected = on_connected, .on_data = on_data, .on_error = on_transport_error};
	if (d->url.udp) {
		struct bcudp_target target = {
		    .host = d->url.host, .port = d->url.port, .port_given = d->url.port_given, .uid = d->url.uid};
		err = bcudp_connect(loop, &target, BC_CONNECT_TIMEOUT_MS, &cbs, d, &d->tr);
	} else {
		err = bc_tcp_connect(loop, d->url.host, d->url.port, BC_CONNECT_TIMEOUT_MS, &cbs, d, &d->tr);
	}
	if (err < 0) {
		free(d);
		return err;
	}
	uv_timer_init(loop, &d->tick);
	d->tick.data = d;
	uv_timer_start(&d->tick, on_tick, BC_TICK_MS, BC_TICK_MS);
	for (int i = 0; i < 2; i++)
		if (info->streams & (i == 0 ? KP_STREAM_MAIN : KP_STREAM_SUB))
			sink->stream_state(sink->ctx, (enum kp_stream_index)i, ING_CONNECTING, "connecting");
	*ret = d;
	return 0;
}

static void bc_stop(struct ing_driver *d)
{
	if (!d)
		return;
	d->failed = true; /* no core calls from here on */
	d->tr->ops->close(d->tr);
	bc_reader_free(&d->reader);
	for (int i = 0; i < 2; i++)
		bc_stream_free(&d->streams[i]);
	uv_close((uv_handle_t *)&d->tick, on_tick_closed);
}

/* After sink->stream_failed: the stream starts over (media buffer, timestamps, state)
 * under a new request on the same session. */
static int bc_retry_stream(struct ing_driver *d, enum kp_stream_index idx)
{
	if (d->failed || d->phase != PHASE_READY || (unsigned)idx > 1)
		return -EAGAIN;
	bc_stream_free(&d->streams[idx]);
	bc_stream_init(&d->streams[idx], d->info, d->sink, idx);
	return request_stream(d, (int)idx);
}

const struct ing_driver_ops ing_baichuan_driver = {
    .scheme = "baichuan", .start = bc_start, .stop = bc_stop, .retry_stream = bc_retry_stream};
