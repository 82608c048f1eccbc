/* The test camera's Baichuan session driven by a client written with the bc_proto
 * library over an in-memory transport: modern login in every mode, legacy login, wrong
 * password, requests before login, keep-alive, snapshot chunks, refused streams, and
 * replay mode sending the same bytes as the live session in every mode. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bc_docs.h"
#include "bc_media.h"
#include "bc_msg.h"
#include "bc_xml.h"
#include "camera.h"
#include "kp_build_config.h"
#include "test.h"

struct cam_stats cam_stats;

uint32_t cam_utc_s(void)
{
	return 1764633600;
}

/* The camera's output, cut into messages by the client's reader. */
struct wire {
	struct bc_reader reader;
	struct bc_cipher c;
	int n;
	struct bc_header h[16];
	char xml[16][BC_DOC_MAX];
	size_t bin_len;
	bool closed;
	uint8_t *raw; /* everything written, when capturing */
	size_t raw_len, raw_cap;
	bool capture;
};

static int on_msg(void *arg, const struct bc_header *h, uint8_t *body, const char **ret_reason)
{
	struct wire *w = arg;
	struct bc_msg_in in;
	int err = bc_msg_decode(h, body, &w->c, false, &in, ret_reason);
	if (err < 0)
		return err;
	if (w->n < 16) {
		w->h[w->n] = *h;
		size_t n = in.binary ? 0 : in.payload_len < BC_DOC_MAX - 1 ? in.payload_len : BC_DOC_MAX - 1;
		memcpy(w->xml[w->n], in.payload, n);
		w->xml[w->n][n] = '\0';
	}
	if (in.binary)
		w->bin_len += in.payload_len;
	w->n++;
	return 0;
}

static int wire_write(void *t, const uint8_t *data, size_t len)
{
	struct wire *w = t;
	const char *why;
	if (w->capture) {
		if (w->raw_len + len > w->raw_cap) {
			w->raw_cap = (w->raw_len + len) * 2;
			w->raw = realloc(w->raw, w->raw_cap);
			CHECK(w->raw != NULL);
		}
		memcpy(w->raw + w->raw_len, data, len);
		w->raw_len += len;
		return 0; /* media: cut by cut_frames */
	}
	CHECK_EQ(bc_reader_feed(&w->reader, data, len, on_msg, w, &why), 0);
	return 0;
}

static void wire_close(void *t)
{
	((struct wire *)t)->closed = true;
}

static void client_send(struct cam_bc_session *s, const struct bc_msg *m, const struct bc_cipher *c)
{
	uint8_t *buf;
	size_t len;
	CHECK_EQ(bc_msg_encode(m, c, &buf, &len), 0);
	cam_bc_session_input(s, buf, len);
	free(buf);
}

static struct cam_config cfg = {.user = "admin", .password = "secret"};

/* Runs the modern login; returns the session with w->c set to the negotiated cipher. */
static struct cam_bc_session *login(uv_loop_t *loop, struct wire *w, enum cam_encryption enc, const char *password)
{
	static struct cam_stream_stats stats[2];
	const char *why;
	cfg.encryption = enc;
	*w = (struct wire){.c = {.mode = BC_ENC_BC}};
	struct cam_bc_session *s =
	    cam_bc_session_new(loop, &cfg, stats, (struct cam_bc_transport){wire_write, wire_close, w});
	struct bc_msg up = {.h = {.msg_id = 1, .status = 0xdc12, .cls = BC_CLASS_LEGACY}};
	client_send(s, &up, &w->c);
	CHECK_EQ(w->n, 1);
	CHECK_EQ(w->h[0].cls, BC_CLASS_NONCE);
	enum bc_enc mode = BC_ENC_NONE;
	CHECK_EQ(bc_enc_from_reply(w->h[0].status, &mode, &why), 0);
	CHECK_EQ(mode, (int)enc);
	char nonce[64], uh[32], ph[32], doc[BC_DOC_MAX];
	CHECK_EQ(bc_xml_text(w->xml[0], strlen(w->xml[0]), "body/Encryption/nonce", 0, nonce, sizeof nonce, &why), 0);
	bc_md5_hex31("admin", nonce, uh);
	bc_md5_hex31(password, nonce, ph);
	bc_doc_login_user(doc, sizeof doc, uh, ph);
	struct bc_cipher login_c = {.mode = mode >= BC_ENC_BC ? BC_ENC_BC : BC_ENC_NONE};
	struct bc_msg lm = {.h = {.msg_id = 1, .msg_num = 1, .cls = BC_CLASS_MODERN},
			    .payload = (const uint8_t *)doc,
			    .payload_len = strlen(doc),
			    .payload_xml = true};
	w->c = login_c;
	client_send(s, &lm, &login_c);
	w->c.mode = mode;
	if (mode >= BC_ENC_AES)
		bc_aes_key(nonce, password, w->c.key);
	return s;
}

static void test_modern_login_all_modes(void)
{
	uv_loop_t *loop = uv_default_loop();
	for (int e = CAM_ENC_NONE; e <= CAM_ENC_FULL_AES; e++) {
		struct wire w;
		struct cam_bc_session *s = login(loop, &w, (enum cam_encryption)e, "secret");
		CHECK_EQ(w.n, 2);
		CHECK_EQ(w.h[1].status, BC_STATUS_OK);
		CHECK_STR_CONTAINS(w.xml[1], "<DeviceInfo");
		/* Keep-alive in the negotiated cipher. */
		struct bc_msg ping = {.h = {.msg_id = 93, .msg_num = 7, .cls = BC_CLASS_MODERN}};
		client_send(s, &ping, &w.c);
		CHECK_EQ(w.n, 3);
		CHECK_EQ(w.h[2].msg_num, 7);
		CHECK_STR_CONTAINS(w.xml[2], "<LinkType");
		/* No fixture source configured: a stream start is refused. */
		char doc[BC_DOC_MAX];
		bc_doc_preview(doc, sizeof doc, 0, 0, "mainStream");
		struct bc_msg pv = {.h = {.msg_id = 3, .msg_num = 8, .cls = BC_CLASS_MODERN},
				    .payload = (const uint8_t *)doc,
				    .payload_len = strlen(doc),
				    .payload_xml = true};
		client_send(s, &pv, &w.c);
		CHECK_EQ(w.n, 4);
		CHECK_EQ(w.h[3].status, BC_STATUS_BAD_REQUEST);
		CHECK(!w.closed);
		cam_bc_session_free(s);
		bc_reader_free(&w.reader);
	}
	uv_run(loop, UV_RUN_NOWAIT);
}

static void test_wrong_password(void)
{
	uv_loop_t *loop = uv_default_loop();
	struct wire w;
	uint64_t refused = cam_stats.logins_refused;
	struct cam_bc_session *s = login(loop, &w, CAM_ENC_AES, "wrong");
	CHECK_EQ(w.n, 2);
	CHECK_EQ(w.h[1].status, BC_STATUS_UNAUTHORIZED);
	CHECK_EQ(cam_stats.logins_refused, refused + 1);
	cam_bc_session_free(s);
	bc_reader_free(&w.reader);
	cfg.faults.wrong_password = true;
	s = login(loop, &w, CAM_ENC_BC, "secret");
	CHECK_EQ(w.h[1].status, BC_STATUS_UNAUTHORIZED);
	cfg.faults.wrong_password = false;
	cam_bc_session_free(s);
	bc_reader_free(&w.reader);
	uv_run(loop, UV_RUN_NOWAIT);
}

/* The camera's answer (status, and the XML of a success) to one legacy login body. */
static uint16_t legacy_login_status(struct cam_config *c, const uint8_t *body, bool *ret_device_info)
{
	uv_loop_t *loop = uv_default_loop();
	static struct cam_stream_stats stats[2];
	struct wire w = {.c = {.mode = BC_ENC_BC}};
	struct cam_bc_session *s =
	    cam_bc_session_new(loop, c, stats, (struct cam_bc_transport){wire_write, wire_close, &w});
	struct bc_msg m = {.h = {.msg_id = 1, .status = 0xdc01, .cls = BC_CLASS_LEGACY},
			   .payload = (uint8_t *)body,
			   .payload_len = BC_LEGACY_LOGIN_LEN};
	struct bc_cipher none = {.mode = BC_ENC_NONE};
	client_send(s, &m, &none);
	CHECK_EQ(w.n, 1);
	uint16_t status = w.h[0].status;
	*ret_device_info = w.n >= 1 && strstr(w.xml[0], "<DeviceInfo") != NULL;
	cam_bc_session_free(s);
	bc_reader_free(&w.reader);
	uv_run(loop, UV_RUN_NOWAIT);
	return status;
}

static void test_legacy_login(void)
{
	uint8_t body[BC_LEGACY_LOGIN_LEN];
	bool info;
	bc_legacy_login_build("admin", "secret", body);
	CHECK_EQ(legacy_login_status(&cfg, body, &info), BC_STATUS_OK);
	CHECK(info);
	bc_legacy_login_build("admin", "bad", body);
	CHECK_EQ(legacy_login_status(&cfg, body, &info), BC_STATUS_UNAUTHORIZED);
}

/* A camera without a password takes the zero field and refuses the MD5 of "". */
static void test_legacy_login_empty_password(void)
{
	static struct cam_config open_cfg = {.user = "admin", .password = ""};
	uint8_t body[BC_LEGACY_LOGIN_LEN];
	bool info;
	bc_legacy_login_build("admin", "", body);
	CHECK_EQ(legacy_login_status(&open_cfg, body, &info), BC_STATUS_OK);
	bc_md5_hex31("", "", (char *)body + BC_LEGACY_FIELD_LEN); /* what the client sent before */
	CHECK_EQ(legacy_login_status(&open_cfg, body, &info), BC_STATUS_UNAUTHORIZED);
}

static void test_request_before_login(void)
{
	uv_loop_t *loop = uv_default_loop();
	static struct cam_stream_stats stats[2];
	struct wire w = {.c = {.mode = BC_ENC_BC}};
	struct cam_bc_session *s =
	    cam_bc_session_new(loop, &cfg, stats, (struct cam_bc_transport){wire_write, wire_close, &w});
	struct bc_msg ping = {.h = {.msg_id = 93, .cls = BC_CLASS_MODERN}};
	client_send(s, &ping, &w.c);
	CHECK_EQ(w.n, 1);
	CHECK_EQ(w.h[0].status, BC_STATUS_BAD_REQUEST);
	uv_run(loop, UV_RUN_NOWAIT); /* the deferred hang-up */
	CHECK(w.closed);
	cam_bc_session_free(s);
	bc_reader_free(&w.reader);
	uv_run(loop, UV_RUN_NOWAIT);
}

static void test_snapshot(void)
{
	char path[] = "/tmp/kp-test-snap-XXXXXX";
	int fd = mkstemp(path);
	CHECK(fd >= 0);
	static uint8_t jpeg[100000];
	for (size_t i = 0; i < sizeof jpeg; i++)
		jpeg[i] = (uint8_t)(i * 7);
	CHECK_EQ(write(fd, jpeg, sizeof jpeg), (long long)sizeof jpeg);
	close(fd);
	cfg.snapshot_jpeg = path;
	uv_loop_t *loop = uv_default_loop();
	struct wire w;
	struct cam_bc_session *s = login(loop, &w, CAM_ENC_FULL_AES, "secret");
	char doc[BC_DOC_MAX], ext[BC_DOC_MAX];
	const char *why;
	unsigned long long size = 0;
	bc_doc_snap_request(doc, sizeof doc, 0);
	bc_doc_ext_channel(ext, sizeof ext, 0);
	struct bc_msg m = {.h = {.msg_id = 109, .msg_num = 9, .cls = BC_CLASS_MODERN},
			   .ext = ext,
			   .ext_len = strlen(ext),
			   .payload = (const uint8_t *)doc,
			   .payload_len = strlen(doc),
			   .payload_xml = true};
	client_send(s, &m, &w.c);
	CHECK_EQ(w.h[2].status, BC_STATUS_OK);
	CHECK_EQ(bc_xml_uint(w.xml[2], strlen(w.xml[2]), "body/Snap/pictureSize", &size, &why), 0);
	CHECK_EQ(size, sizeof jpeg);
	/* Chunks under another msg_num: 200 while more comes, 201 on the last. */
	CHECK_EQ(w.n, 2 + 1 + 3);
	CHECK(w.h[3].msg_num != 9);
	CHECK_EQ(w.h[3].status, BC_STATUS_OK);
	CHECK_EQ(w.h[5].status, BC_STATUS_OK_LAST);
	CHECK_EQ(w.bin_len, sizeof jpeg);
	cam_bc_session_free(s);
	bc_reader_free(&w.reader);
	unlink(path);
	cfg.snapshot_jpeg = NULL;
	uv_run(loop, UV_RUN_NOWAIT);
}

/* One video frame in a capture: its messages' bytes and its decode time. */
struct cap_frame {
	size_t off, len;
	uint32_t ts;
	unsigned chunks;
	bool keyframe;
};

/* Cuts the msg 3 messages of raw into BcMedia frames (BAICHUAN.md section 5), decrypting
 * a copy of each frame's first chunk to read its record header. Returns the count. */
static size_t cut_frames(const uint8_t *raw, size_t len, const struct bc_cipher *c, struct cap_frame *out, size_t cap)
{
	size_t n = 0, off = 0, left = 0;
	const char *why;
	while (off < len) {
		struct bc_header h;
		CHECK_EQ(bc_header_parse(raw + off, len - off, &h, &why), 0);
		size_t mlen = bc_class_header_len(h.cls) + h.body_len;
		CHECK(off + mlen <= len);
		size_t plen = h.body_len - h.payload_offset;
		if (h.msg_id == BC_MSG_PREVIEW && left) { /* a continuation chunk */
			out[n - 1].len += mlen;
			out[n - 1].chunks++;
			CHECK(plen <= left);
			left -= plen;
		} else if (h.msg_id == BC_MSG_PREVIEW && plen > 32) {
			uint8_t *body = malloc(h.body_len);
			CHECK(body != NULL);
			memcpy(body, raw + off + bc_class_header_len(h.cls), h.body_len);
			struct bc_msg_in in;
			CHECK_EQ(bc_msg_decode(&h, body, c, true, &in, &why), 0);
			CHECK(!memcmp(in.payload + 1, "0dc", 3) || !memcmp(in.payload + 1, "1dc", 3));
			uint32_t size =
			    in.payload[8] | in.payload[9] << 8 | in.payload[10] << 16 | (uint32_t)in.payload[11] << 24;
			uint32_t extra = in.payload[12] | in.payload[13] << 8;
			size_t total = 24 + extra + size + bc_media_pad(size);
			if (n < cap)
				out[n] =
				    (struct cap_frame){.off = off,
						       .len = mlen,
						       .chunks = 1,
						       .keyframe = in.payload[1] == '0',
						       .ts = in.payload[16] | in.payload[17] << 8 |
							     in.payload[18] << 16 | (uint32_t)in.payload[19] << 24};
			n += n < cap;
			CHECK(plen <= total);
			left = total - plen;
			free(body);
		}
		off += mlen;
	}
	return n;
}

static void on_stop_timer(uv_timer_t *t)
{
	uv_stop(t->loop);
}

static void run_for(uv_loop_t *loop, uint64_t ms)
{
	uv_timer_t t;
	uv_timer_init(loop, &t);
	uv_timer_start(&t, on_stop_timer, ms, 0);
	uv_run(loop, UV_RUN_DEFAULT);
	uv_close((uv_handle_t *)&t, NULL);
	uv_run(loop, UV_RUN_NOWAIT);
}

static void preview(struct cam_bc_session *s, struct wire *w, uint32_t msg_id, const char *stream)
{
	char doc[BC_DOC_MAX];
	bc_doc_preview(doc, sizeof doc, 0, 0, stream);
	struct bc_msg pv = {.h = {.msg_id = msg_id, .msg_num = 10, .cls = BC_CLASS_MODERN},
			    .payload = (const uint8_t *)doc,
			    .payload_len = strlen(doc),
			    .payload_xml = true};
	client_send(s, &pv, &w->c);
}

/* Replay mode sends what the live session sends: in one session (one key), the main
 * stream live for 1.8 s, stopped, then in replay mode from the same frame index on; every
 * frame both sent (more than one loop of the fixture, paced at 100 fps so that the loop
 * takes a second) is the same bytes, keyframes of several chunks included. */
static void test_replay_same_bytes(void)
{
	enum { FPS = 100, CAP = 512 };
	uv_loop_t *loop = uv_default_loop();
	char path[4096];
	snprintf(path, sizeof path, "%s/test/fixtures/main.h264", KP_TEST_BUILD_ROOT);
	struct cam_source *src;
	int r = cam_source_open(loop, path, KP_CODEC_H264, FPS, &src);
	CHECK_EQ(r, 0);
	if (r < 0)
		return;
	size_t loop_len = cam_source_loop_len(src);
	static struct cap_frame live[CAP], rep[CAP];
	for (int e = CAM_ENC_NONE; e <= CAM_ENC_FULL_AES; e++) {
		struct wire w;
		cfg.main = src;
		cfg.replay = false;
		struct cam_bc_session *s = login(loop, &w, (enum cam_encryption)e, "secret");
		w.capture = true;
		preview(s, &w, BC_MSG_PREVIEW, "mainStream");
		run_for(loop, 1800);
		preview(s, &w, BC_MSG_PREVIEW_STOP, "mainStream");
		size_t nl = cut_frames(w.raw, w.raw_len, &w.c, live, CAP);
		CHECK(nl > loop_len);
		uint8_t *live_raw = w.raw;
		w.raw = NULL;
		w.raw_len = w.raw_cap = 0;
		/* Frame k0 (the live stream's first, a keyframe) due half a frame from now. */
		uint64_t k0 = (uint64_t)live[0].ts * FPS / 1000000;
		cfg.replay = true;
		cfg.replay_epoch_us = uv_hrtime() / 1000 - (k0 - 1) * (1000000 / FPS) - 1000000 / FPS / 2;
		preview(s, &w, BC_MSG_PREVIEW, "mainStream");
		run_for(loop, 1800);
		preview(s, &w, BC_MSG_PREVIEW_STOP, "mainStream");
		size_t nr = cut_frames(w.raw, w.raw_len, &w.c, rep, CAP);
		size_t same = 0, multi = 0, keys = 0;
		for (size_t i = 0; i < nr; i++) {
			if (i)
				CHECK_EQ(rep[i].ts, rep[i - 1].ts + 1000000 / FPS);
			for (size_t j = 0; j < nl; j++) {
				if (live[j].ts != rep[i].ts)
					continue;
				CHECK_EQ(rep[i].len, live[j].len);
				CHECK(!memcmp(w.raw + rep[i].off, live_raw + live[j].off, live[j].len));
				same++;
				multi += rep[i].chunks > 1;
				keys += rep[i].keyframe;
			}
		}
		CHECK(rep[0].keyframe);
		CHECK(same > loop_len);
		CHECK(multi > 0);
		CHECK(keys > 2);
		CHECK(!w.closed);
		free(live_raw);
		free(w.raw);
		cam_bc_session_free(s);
		bc_reader_free(&w.reader);
		uv_run(loop, UV_RUN_NOWAIT);
	}
	cfg.main = NULL;
	cfg.replay = false;
}

int main(void)
{
	RUN(test_modern_login_all_modes);
	RUN(test_wrong_password);
	RUN(test_legacy_login);
	RUN(test_legacy_login_empty_password);
	RUN(test_request_before_login);
	RUN(test_snapshot);
	RUN(test_replay_same_bytes);
	return TEST_EXIT();
}
