/* Unit tests for ingestd's RTSP client's pure parts: replies (pipelined, incomplete,
 * malformed, one past each ceiling), Transport and Session headers, URLs and control
 * URL resolution, Digest auth against RFC 2617 3.5's example and RFC 2069's form, SDP
 * (H.264, H.265, AAC, Opus, PCMU), the RFC 3640 AAC depacketizer, and a video track:
 * PTS from RTP timestamps across the 32-bit wrap, DTS from decode order for B-frames,
 * losses counted and dropped up to a keyframe, the cut access unit. */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>

#include "rtp_aac.h"
#include "rtsp_auth.h"
#include "rtsp_msg.h"
#include "rtsp_sdp_read.h"
#include "rtsp_track.h"
#include "test.h"

static struct rtsp_reply r;

static int parse(const char *t, size_t *used)
{
	const char *why = "";
	return rtsp_reply_parse((const uint8_t *)t, strlen(t), &r, used, &why);
}

static void test_reply(void)
{
	const char *t = "RTSP/1.0 200 OK\r\nCSeq: 3\r\nContent-Base: rtsp://h/s/\r\nContent-Length: 4\r\n\r\nv=0\n"
			"RTSP/1.0 401 Unauthorized\nCSeq: 4\n\n";
	size_t used;
	CHECK_EQ(parse(t, &used), 0);
	CHECK_EQ(r.status, 200);
	CHECK_EQ(r.cseq, 3);
	CHECK_EQ(r.body_len, 4);
	CHECK(rtsp_span_eq(*rtsp_reply_header(&r, "content-base", 0), "rtsp://h/s/"));
	CHECK_EQ(parse(t + used, &used), 0);
	CHECK_EQ(r.status, 401);
	for (size_t n = 0; n < 30; n++) {
		char b[64];
		memcpy(b, t, n);
		b[n] = 0;
		CHECK_EQ(parse(b, &used), -EAGAIN);
	}
	CHECK_EQ(parse("HTTP/1.1 200 OK\r\n\r\n", &used), -EBADMSG);
	CHECK_EQ(parse("RTSP/1.0 2x0 OK\r\n\r\n", &used), -EBADMSG);
	CHECK_EQ(parse("RTSP/1.0 200 OK\r\nNoColon\r\n\r\n", &used), -EBADMSG);
	CHECK_EQ(parse("RTSP/1.0 200 OK\r\nContent-Length: 65537\r\n\r\n", &used), -EMSGSIZE);
	CHECK_EQ(parse("RTSP/1.0 200 OK\r\nContent-Length: 65536\r\n\r\n", &used), -EAGAIN);
	char many[RTSP_MAX_HEADERS * 8 + 64];
	size_t o = (size_t)snprintf(many, sizeof many, "RTSP/1.0 200 OK\r\n");
	for (int i = 0; i < RTSP_MAX_HEADERS; i++)
		o += (size_t)snprintf(many + o, sizeof many - o, "A: %d\r\n", i % 10);
	snprintf(many + o, sizeof many - o, "\r\n");
	CHECK_EQ(parse(many, &used), 0);
	snprintf(many + o, sizeof many - o, "B: 1\r\n\r\n");
	CHECK_EQ(parse(many, &used), -EMSGSIZE);
	static char big[RTSP_MAX_HEAD + 64];
	memset(big, 'a', sizeof big - 1);
	memcpy(big, "RTSP/1.0 200 OK\r\nX: ", 20);
	CHECK_EQ(parse(big, &used), -EMSGSIZE);
}

/* Requests from the camera are answered: 200 to OPTIONS, GET_PARAMETER, SET_PARAMETER,
 * 501 to the rest, the CSeq echoed. */
static void test_server_requests(void)
{
	const char *q = "GET_PARAMETER rtsp://h/s RTSP/1.0\r\nCSeq: 17\r\nContent-Length: 2\r\n\r\nabANNOUNCE";
	size_t used;
	const char *why;
	char a[128];
	CHECK_EQ(rtsp_request_answer((const uint8_t *)q, strlen(q), &used, a, sizeof a, &why), 0);
	CHECK_EQ(used, strlen(q) - strlen("ANNOUNCE"));
	CHECK_STR_EQ(a, "RTSP/1.0 200 OK\r\nCSeq: 17\r\nUser-Agent: KeepPeek\r\n\r\n");
	q = "ANNOUNCE rtsp://h/s RTSP/1.0\r\nCSeq: 4\r\n\r\n";
	CHECK_EQ(rtsp_request_answer((const uint8_t *)q, strlen(q), &used, a, sizeof a, &why), 0);
	CHECK_STR_EQ(a, "RTSP/1.0 501 Not Implemented\r\nCSeq: 4\r\nUser-Agent: KeepPeek\r\n\r\n");
	q = "OPTIONS * RTSP/1.0\r\n\r\n";
	CHECK_EQ(rtsp_request_answer((const uint8_t *)q, strlen(q), &used, a, sizeof a, &why), 0);
	CHECK_STR_EQ(a, "");
}

static void test_headers(void)
{
	struct rtsp_transport tr;
	const char *why;
	const char *t = "RTP/AVP/TCP;unicast;interleaved=2-3;ssrc=1A2b3C4d;mode=\"PLAY\"";
	CHECK_EQ(rtsp_transport_parse((struct rtsp_span){t, strlen(t)}, &tr, &why), 0);
	CHECK(tr.tcp && tr.have_interleaved && tr.interleaved[0] == 2 && tr.interleaved[1] == 3);
	CHECK(tr.have_ssrc && tr.ssrc == 0x1a2b3c4d);
	t = "RTP/AVP;unicast;client_port=5000-5001;server_port=6970-6971";
	CHECK_EQ(rtsp_transport_parse((struct rtsp_span){t, strlen(t)}, &tr, &why), 0);
	CHECK(!tr.tcp && tr.have_server_port && tr.server_port[0] == 6970 && tr.server_port[1] == 6971);
	t = "RTP/AVP;server_port=65536-65537";
	CHECK_EQ(rtsp_transport_parse((struct rtsp_span){t, strlen(t)}, &tr, &why), -EBADMSG);
	t = "RTP/AVP/TCP;interleaved=255-256";
	CHECK_EQ(rtsp_transport_parse((struct rtsp_span){t, strlen(t)}, &tr, &why), -EBADMSG);
	/* Hikvision (retina src/client/testdata/hikvision_setup_ssrc_space.txt, MIT/Apache-2.0;
	 * retina 85b30bf): a space after "ssrc=". */
	t = "RTP/AVP/TCP;unicast;interleaved=0-1;ssrc= d6d6627";
	CHECK_EQ(rtsp_transport_parse((struct rtsp_span){t, strlen(t)}, &tr, &why), 0);
	CHECK(tr.have_interleaved && tr.interleaved[0] == 0 && tr.have_ssrc && tr.ssrc == 0xd6d6627);
	/* an ssrc that is no number is ignored, as gortsplib does (the SSRC locks at the first
	 * packet anyway); one of 9 digits too */
	t = "RTP/AVP/TCP;interleaved=0-1;ssrc=zz";
	CHECK_EQ(rtsp_transport_parse((struct rtsp_span){t, strlen(t)}, &tr, &why), 0);
	CHECK(tr.have_interleaved && !tr.have_ssrc);
	t = "RTP/AVP/TCP;interleaved=0-1;ssrc=123456789";
	CHECK_EQ(rtsp_transport_parse((struct rtsp_span){t, strlen(t)}, &tr, &why), 0);
	CHECK(!tr.have_ssrc);
	/* server_port=0-1 from old cameras (mediamtx#407): accepted as no port */
	t = "RTP/AVP;unicast;client_port=5000-5001;server_port=0-1";
	CHECK_EQ(rtsp_transport_parse((struct rtsp_span){t, strlen(t)}, &tr, &why), 0);
	CHECK(!tr.tcp && !tr.have_server_port);
	t = "RTP/AVP;unicast;server_port=x-1";
	CHECK_EQ(rtsp_transport_parse((struct rtsp_span){t, strlen(t)}, &tr, &why), -EBADMSG);
	t = "RAW/RAW/UDP;unicast";
	CHECK_EQ(rtsp_transport_parse((struct rtsp_span){t, strlen(t)}, &tr, &why), -EBADMSG);
	char id[RTSP_MAX_SESSION];
	unsigned to;
	t = "12345678;timeout=30";
	CHECK_EQ(rtsp_session_parse((struct rtsp_span){t, strlen(t)}, id, sizeof id, &to, &why), 0);
	CHECK(!strcmp(id, "12345678") && to == 30);
	t = "abc;timeout=1";
	CHECK_EQ(rtsp_session_parse((struct rtsp_span){t, strlen(t)}, id, sizeof id, &to, &why), 0);
	CHECK_EQ(to, RTSP_TIMEOUT_MIN_S);
	t = "abc;timeout=99999999999";
	CHECK_EQ(rtsp_session_parse((struct rtsp_span){t, strlen(t)}, id, sizeof id, &to, &why), 0);
	CHECK_EQ(to, RTSP_TIMEOUT_MAX_S);
	char longid[RTSP_MAX_SESSION + 2];
	memset(longid, 'x', sizeof longid - 1);
	longid[sizeof longid - 1] = 0;
	CHECK_EQ(rtsp_session_parse((struct rtsp_span){longid, RTSP_MAX_SESSION - 1}, id, sizeof id, &to, &why), 0);
	CHECK_EQ(rtsp_session_parse((struct rtsp_span){longid, RTSP_MAX_SESSION}, id, sizeof id, &to, &why), -EMSGSIZE);
}

static void test_url(void)
{
	struct rtsp_url u;
	const char *why;
	CHECK_EQ(rtsp_url_parse("rtsp://ad%40min:p@ss:w@[::1]:8554/main?x=1", &u, &why), 0);
	CHECK(!strcmp(u.user, "ad@min") && !strcmp(u.pass, "p@ss:w") && !strcmp(u.host, "::1") && u.port == 8554);
	CHECK(!strcmp(u.uri, "rtsp://[::1]:8554/main?x=1"));
	CHECK_EQ(rtsp_url_parse("rtsps://cam/x", &u, &why), 0);
	CHECK(u.tls && u.port == 322 && !u.have_user);
	CHECK_EQ(rtsp_url_parse("rtsp://cam:0/x", &u, &why), -EINVAL);
	CHECK_EQ(rtsp_url_parse("rtsp://cam:65536/x", &u, &why), -EINVAL);
	CHECK_EQ(rtsp_url_parse("http://cam/x", &u, &why), -EINVAL);
	CHECK_EQ(rtsp_url_parse("rtsp://a:%zz@cam/x", &u, &why), -EINVAL);
	char out[RTSP_MAX_URL];
	CHECK_EQ(rtsp_url_resolve("rtsp://h/s/", "trackID=1", out, sizeof out), 0);
	CHECK_STR_EQ(out, "rtsp://h/s/trackID=1");
	CHECK_EQ(rtsp_url_resolve("rtsp://h/s", "trackID=1", out, sizeof out), 0);
	CHECK_STR_EQ(out, "rtsp://h/s/trackID=1");
	CHECK_EQ(rtsp_url_resolve("rtsp://h/s", "*", out, sizeof out), 0);
	CHECK_STR_EQ(out, "rtsp://h/s");
	CHECK_EQ(rtsp_url_resolve("rtsp://h/s", "rtsp://o/t", out, sizeof out), 0);
	CHECK_STR_EQ(out, "rtsp://o/t");
	CHECK_EQ(rtsp_url_resolve("rtsp://h/s", "t", out, 12), -ENOBUFS);
	CHECK_EQ(rtsp_url_resolve("rtsp://h:554/s/x?a=1", "/track1", out, sizeof out), 0); /* RFC 3986 5.2.2 */
	CHECK_STR_EQ(out, "rtsp://h:554/track1");
	/* Content-Base without a scheme: Anjvision (retina src/client/testdata/
	 * anjvision_describe.txt, MIT/Apache-2.0; retina 6972ac4) */
	CHECK_EQ(rtsp_base_fixup("rtsp://192.168.1.10/stream0", "192.168.1.10:554/stream0/", out, sizeof out), 1);
	CHECK_STR_EQ(out, "rtsp://192.168.1.10:554/stream0/");
	CHECK_EQ(rtsp_base_fixup("rtsps://h:8322/a/b?x", "/c/d/", out, sizeof out), 1);
	CHECK_STR_EQ(out, "rtsps://h:8322/c/d/");
	CHECK_EQ(rtsp_base_fixup("rtsp://h/a", "rtsp://h/a/", out, sizeof out), 0);
	CHECK_STR_EQ(out, "rtsp://h/a/");
	CHECK_EQ(rtsp_base_fixup("rtsp://h/a", "", out, sizeof out), -EINVAL);
	CHECK_STR_EQ(out, "rtsp://h/a");
	CHECK_EQ(rtsp_base_fixup("rtsp://h/a", "http://h/a/", out, sizeof out), -EINVAL);
	CHECK_STR_EQ(out, "rtsp://h/a");
	CHECK_EQ(rtsp_base_fixup("rtsp://h/a", "h/a", out, 8), -ENOBUFS);
}

static void test_digest(void)
{
	/* RFC 2617 3.5: Mufasa, Circle Of Life, qop=auth, nc=00000001, cnonce 0a4f113b:
	 * response 6629fae49393a05397450978507c4ef1. */
	struct rtsp_auth a = {.kind = RTSP_AUTH_NONE};
	memcpy(a.cnonce, "0a4f113b", 9);
	const char *c = "Digest realm=\"testrealm@host.com\", qop=\"auth,auth-int\", "
			"nonce=\"dcd98b7102dd2f0e8b11d0f600bfb0c093\", opaque=\"5ccc069c403ebaf9f0171e9517f40e41\"";
	const char *why;
	CHECK_EQ(rtsp_auth_challenge(&a, (struct rtsp_span){c, strlen(c)}, &why), 0);
	char h[RTSP_AUTH_MAX_HEADER];
	CHECK_EQ(rtsp_auth_header(&a, "Mufasa", "Circle Of Life", "GET", "/dir/index.html", h, sizeof h), 0);
	CHECK_STR_CONTAINS(h, "response=\"6629fae49393a05397450978507c4ef1\"");
	/* a token without a value is skipped, not fatal */
	const char *tok = "Digest realm=\"r\", stale, nonce=\"n1\" , x";
	struct rtsp_auth st = {.kind = RTSP_AUTH_NONE};
	CHECK_EQ(rtsp_auth_challenge(&st, (struct rtsp_span){tok, strlen(tok)}, &why), 0);
	CHECK_STR_EQ(st.nonce, "n1");
	CHECK_STR_CONTAINS(h, "nc=00000001, cnonce=\"0a4f113b\"");
	CHECK_STR_CONTAINS(h, "opaque=\"5ccc069c403ebaf9f0171e9517f40e41\"");
	/* Without qop (RFC 2069), as cameras ask: MD5(HA1:nonce:HA2). */
	struct rtsp_auth b = {.kind = RTSP_AUTH_NONE};
	c = "Digest realm=\"r\", nonce=\"n\"";
	CHECK_EQ(rtsp_auth_challenge(&b, (struct rtsp_span){c, strlen(c)}, &why), 0);
	CHECK_EQ(rtsp_auth_header(&b, "u", "p", "DESCRIBE", "rtsp://h/", h, sizeof h), 0);
	char ha1[33], ha2[33], want[33], buf[200];
	rtsp_md5_hex("u:r:p", 5, ha1);
	rtsp_md5_hex("DESCRIBE:rtsp://h/", 18, ha2);
	snprintf(buf, sizeof buf, "%s:n:%s", ha1, ha2);
	rtsp_md5_hex(buf, strlen(buf), want);
	CHECK_STR_CONTAINS(h, want);
	/* Basic is kept only while no Digest came; other schemes and algorithms refused. */
	struct rtsp_auth k = {.kind = RTSP_AUTH_NONE};
	CHECK_EQ(rtsp_auth_challenge(&k, (struct rtsp_span){"Basic realm=\"x\"", 15}, &why), 0);
	CHECK_EQ(k.kind, RTSP_AUTH_BASIC);
	CHECK_EQ(rtsp_auth_header(&k, "Aladdin", "open sesame", "GET", "/", h, sizeof h), 0);
	CHECK_STR_EQ(h, "Authorization: Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==\r\n");
	c = "Digest realm=\"r\", nonce=\"n\", algorithm=SHA-256";
	CHECK_EQ(rtsp_auth_challenge(&k, (struct rtsp_span){c, strlen(c)}, &why), -ENOTSUP);
	c = "Digest realm=\"r\"";
	CHECK_EQ(rtsp_auth_challenge(&k, (struct rtsp_span){c, strlen(c)}, &why), -EBADMSG);
	c = "Digest realm=\"r, nonce=n";
	CHECK_EQ(rtsp_auth_challenge(&k, (struct rtsp_span){c, strlen(c)}, &why), -EBADMSG);
	char longc[RTSP_AUTH_MAX_FIELD + 64];
	int n = snprintf(longc, sizeof longc, "Digest nonce=\"");
	memset(longc + n, 'a', RTSP_AUTH_MAX_FIELD);
	snprintf(longc + n + RTSP_AUTH_MAX_FIELD, sizeof longc - (size_t)n - RTSP_AUTH_MAX_FIELD, "\"");
	CHECK_EQ(rtsp_auth_challenge(&k, (struct rtsp_span){longc, strlen(longc)}, &why), -EMSGSIZE);
	CHECK_EQ(k.kind, RTSP_AUTH_BASIC);
}

/* Digest challenges parsed on several stream threads at once: the qop list of each is
 * its own (strtok's process-wide state mixed them up). */
static void *digest_thread(void *arg)
{
	bool want = arg != NULL;
	const char *c = want ? "Digest realm=\"r\", nonce=\"n\", qop=\"auth-int,x,y,z,auth\""
			     : "Digest realm=\"r\", nonce=\"n\", qop=\"auth-int,a,b,c,d,e,f\"";
	for (int i = 0; i < 20000; i++) {
		struct rtsp_auth a = {.kind = RTSP_AUTH_NONE};
		const char *why;
		if (rtsp_auth_challenge(&a, (struct rtsp_span){c, strlen(c)}, &why) != 0 || a.qop_auth != want)
			return (void *)1;
	}
	return NULL;
}

static void test_digest_threads(void)
{
	pthread_t th[4];
	for (intptr_t i = 0; i < 4; i++)
		CHECK_EQ(pthread_create(&th[i], NULL, digest_thread, (void *)(i & 1)), 0);
	for (int i = 0; i < 4; i++) {
		void *ret;
		pthread_join(th[i], &ret);
		CHECK(ret == NULL);
	}
}

static void test_sdp(void)
{
	const char *t =
	    "v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\ns=x\r\na=control:*\r\n"
	    "m=video 0 RTP/AVP 96\r\na=rtpmap:96 H264/90000\r\n"
	    "a=fmtp:96 packetization-mode=1; sprop-parameter-sets=Z0IAHpWoKA9k,aM48gA==\r\n"
	    "a=framerate:25\r\na=control:trackID=0\r\n"
	    "m=audio 0 RTP/AVP 97\r\na=rtpmap:97 mpeg4-generic/16000/1\r\n"
	    "a=fmtp:97 streamtype=5;mode=AAC-hbr;config=1408;SizeLength=13;IndexLength=3;IndexDeltaLength=3\r\n"
	    "a=control:trackID=1\nm=audio 0 RTP/AVP 0\n";
	static struct sdp_session s;
	const char *why;
	CHECK_EQ(sdp_read(t, strlen(t), &s, &why), 0);
	CHECK_EQ(s.n_media, 3);
	CHECK_STR_EQ(s.control, "*");
	CHECK_STR_EQ(s.media[0].encoding, "H264");
	CHECK_EQ(s.media[0].clock, 90000);
	CHECK_EQ(s.media[0].fps, 25);
	CHECK_STR_EQ(s.media[0].control, "trackID=0");
	char v[128];
	CHECK_EQ(sdp_fmtp_get(s.media[0].fmtp, "SPROP-PARAMETER-SETS", v, sizeof v), 0);
	CHECK_STR_EQ(v, "Z0IAHpWoKA9k,aM48gA==");
	uint8_t b[32];
	CHECK_EQ(sdp_base64_decode("aM48gA==", 8, b, sizeof b), 4);
	CHECK(b[0] == 0x68 && b[3] == 0x80);
	CHECK_EQ(sdp_base64_decode("a", 1, b, sizeof b), -EBADMSG);
	CHECK_EQ(sdp_base64_decode("aM48gA==", 8, b, 3), -ENOBUFS);
	CHECK_STR_EQ(s.media[1].encoding, "mpeg4-generic");
	CHECK_EQ(s.media[1].clock, 16000);
	CHECK_EQ(sdp_fmtp_get(s.media[1].fmtp, "sizelength", v, sizeof v), 0);
	CHECK_STR_EQ(v, "13");
	CHECK_EQ(sdp_hex_decode("1408", b, sizeof b), 2);
	CHECK_EQ(sdp_hex_decode("14g8", b, sizeof b), -EBADMSG);
	CHECK_STR_EQ(s.media[2].encoding, "PCMU");
	CHECK_EQ(s.media[2].clock, 8000);
	CHECK_EQ(sdp_fmtp_get(s.media[0].fmtp, "nothere", v, sizeof v), -ENOENT);
	CHECK_EQ(sdp_read("v=0\r\n", 5, &s, &why), -EBADMSG);
	CHECK_EQ(sdp_read("m=video 0 RTP/AVP 200\r\n", 23, &s, &why), -EBADMSG);
	CHECK_EQ(sdp_read("m=audio 0 RTP/AVP 96\r\na=rtpmap:96 opus/48000/9\r\n", 48, &s, &why), -EBADMSG);
	char many[(SDP_MAX_MEDIA + 1) * 24 + 1] = "";
	for (int i = 0; i < SDP_MAX_MEDIA; i++)
		strcat(many, "m=video 0 RTP/AVP 96\r\n");
	CHECK_EQ(sdp_read(many, strlen(many), &s, &why), 0);
	strcat(many, "m=video 0 RTP/AVP 96\r\n");
	CHECK_EQ(sdp_read(many, strlen(many), &s, &why), -EMSGSIZE);
}

static uint8_t aus[8][64];
static size_t au_len[8];
static unsigned n_aus, au_k[8], au_n[8];

static void on_au(void *arg, const uint8_t *au, size_t len, unsigned k, unsigned n)
{
	(void)arg;
	if (n_aus < 8 && len <= sizeof aus[0]) {
		memcpy(aus[n_aus], au, len);
		au_k[n_aus] = k;
		au_n[n_aus] = n;
		au_len[n_aus++] = len;
	}
}

static void test_aac(void)
{
	static struct rtp_aac a;
	CHECK_EQ(rtp_aac_init(&a, 13, 3, 3), 0);
	CHECK_EQ(rtp_aac_init(&a, 17, 3, 3), -EINVAL);
	CHECK_EQ(rtp_aac_init(&a, 13, 3, 3), 0);
	/* two AUs of 3 and 2 bytes: AU-headers-length 32 bits, sizes << 3 */
	uint8_t p[] = {0, 32, 0, 3 << 3, 0, 2 << 3, 1, 2, 3, 4, 5};
	const char *why;
	n_aus = 0;
	CHECK_EQ(rtp_aac_push(&a, p, sizeof p, true, 0, on_au, NULL, &why), 0);
	CHECK_EQ(n_aus, 2);
	CHECK(au_len[0] == 3 && au_len[1] == 2 && aus[1][0] == 4);
	CHECK(au_k[0] == 0 && au_k[1] == 1 && au_n[0] == 2 && au_n[1] == 2);
	uint8_t bad[] = {0, 16, 0, 9 << 3, 1, 2};
	/* a fragment of 2 of its 9 bytes, with the marker: refused */
	CHECK_EQ(rtp_aac_push(&a, bad, sizeof bad, true, 0, on_au, NULL, &why), -EBADMSG);
	uint8_t frag1[] = {0, 16, 0, 5 << 3, 1, 2, 3}, frag2[] = {0, 16, 0, 5 << 3, 4, 5};
	n_aus = 0;
	CHECK_EQ(rtp_aac_push(&a, frag1, sizeof frag1, false, 7, on_au, NULL, &why), 0);
	CHECK_EQ(rtp_aac_push(&a, frag2, sizeof frag2, true, 7, on_au, NULL, &why), 0);
	CHECK(n_aus == 1 && au_len[0] == 5 && aus[0][4] == 5 && au_k[0] == 0 && au_n[0] == 1);
	/* a complete AU while a fragment is pending (its tail lost): the fragment goes, the
	 * complete AU comes through; so does a new fragmented one */
	n_aus = 0;
	CHECK_EQ(rtp_aac_push(&a, frag1, sizeof frag1, false, 8, on_au, NULL, &why), 0);
	CHECK_EQ(rtp_aac_push(&a, p, sizeof p, true, 9, on_au, NULL, &why), 0);
	CHECK_EQ(n_aus, 2);
	CHECK_EQ(rtp_aac_push(&a, frag1, sizeof frag1, false, 10, on_au, NULL, &why), 0);
	CHECK_EQ(rtp_aac_push(&a, frag1, sizeof frag1, false, 11, on_au, NULL, &why), 0);
	CHECK_EQ(rtp_aac_push(&a, frag2, sizeof frag2, true, 11, on_au, NULL, &why), 0);
	CHECK(n_aus == 3 && au_len[2] == 5);
	uint8_t over[] = {0, 255, 0};
	CHECK_EQ(rtp_aac_push(&a, over, sizeof over, true, 0, on_au, NULL, &why), -EBADMSG);
}

/* ---- a video track ---- */

static struct kp_access_unit got[64];
static unsigned n_got;

static void on_video(void *arg, const struct kp_access_unit *au)
{
	(void)arg;
	if (n_got < 64)
		got[n_got++] = *au;
}

static struct kp_audio_unit got_audio[8];
static unsigned n_got_audio;

static void on_audio(void *arg, const struct kp_audio_unit *au)
{
	(void)arg;
	if (n_got_audio < 8)
		got_audio[n_got_audio++] = *au;
}

static const struct rtsp_track_sink sink = {.video = on_video, .audio = on_audio};

/* One single-NAL RTP packet: an IDR (type 5) or a non-IDR slice (type 1). */
static size_t packet(uint8_t *p, uint16_t seq, uint32_t ts, bool idr)
{
	p[0] = 0x80;
	p[1] = 0x80 | 96; /* marker */
	p[2] = (uint8_t)(seq >> 8);
	p[3] = (uint8_t)seq;
	p[4] = (uint8_t)(ts >> 24);
	p[5] = (uint8_t)(ts >> 16);
	p[6] = (uint8_t)(ts >> 8);
	p[7] = (uint8_t)ts;
	memset(p + 8, 0, 4);
	p[12] = idr ? 0x65 : 0x41;
	p[13] = 0x88;
	p[14] = 0x84;
	return 15;
}

static void test_track_pts_wrap_and_loss(void)
{
	static struct rtsp_track t;
	CHECK_EQ(rtsp_track_video_init(&t, &sink, KP_CODEC_H264, NULL, 0, 25, 90000), 0);
	uint8_t p[32];
	const char *why;
	n_got = 0;
	uint32_t ts0 = 0xffffffffu - 3600 * 2 + 1;
	for (unsigned i = 0; i < 6; i++)
		CHECK_EQ(rtsp_track_rtp(&t, p, packet(p, (uint16_t)(65533 + i), ts0 + i * 3600, i == 0), 0, &why), 0);
	CHECK_EQ(n_got, 6);
	for (unsigned i = 0; i < n_got; i++) {
		CHECK_EQ(got[i].pts_90k, (int64_t)i * 3600); /* across the 32-bit wrap */
		CHECK_EQ(got[i].dts_90k, got[i].pts_90k);
	}
	/* seq 3 missing: lost counted; 4 and 5 dropped up to the keyframe at 6 */
	n_got = 0;
	CHECK_EQ(rtsp_track_rtp(&t, p, packet(p, 4, ts0 + 7 * 3600, false), 0, &why), 0);
	CHECK_EQ(t.lost_packets, 1);
	CHECK_EQ(rtsp_track_rtp(&t, p, packet(p, 5, ts0 + 8 * 3600, false), 0, &why), 0);
	CHECK_EQ(rtsp_track_rtp(&t, p, packet(p, 6, ts0 + 9 * 3600, true), 0, &why), 0);
	CHECK_EQ(n_got, 1);
	CHECK(got[0].keyframe);
	CHECK_EQ(t.loss_dropped, 2);
	/* not RTP */
	CHECK_EQ(rtsp_track_rtp(&t, p, 5, 0, &why), -EBADMSG);
	CHECK_EQ(t.malformed, 1);
	/* a cut access unit: FU-A start without its end */
	uint8_t fu[] = {0x80, 96, 0, 7, 0, 0, 0, 1, 0, 0, 0, 0, 0x7c, 0x85, 0x88, 0x84};
	CHECK_EQ(rtsp_track_rtp(&t, fu, sizeof fu, 0, &why), 0);
	CHECK_EQ(rtsp_track_end(&t), 7); /* start code, NAL header, 2 bytes */
	CHECK_EQ(rtsp_track_end(&t), 0);
	rtsp_track_free(&t);
}

/* B-frames: with a reorder depth of 2 (from the SPS, max_num_ref_frames here), decode
 * order I0 P3 B1 B2 P6 B4 B5 gets DTS strictly increasing and at or before each PTS. */
static void test_track_bframes(void)
{
	/* Baseline SPS 66, level 30, poc type 0, max_num_ref_frames 2, 320x240, no VUI. */
	static const uint8_t sps_pps[] = {0,    0,    0, 1, 0x67, 0x42, 0x00, 0x1e, 0xf4, 0x0a,
					  0x0f, 0xc8, 0, 0, 0,    1,    0x68, 0xce, 0x38, 0x80};
	static struct rtsp_track t;
	CHECK_EQ(rtsp_track_video_init(&t, &sink, KP_CODEC_H264, sps_pps, sizeof sps_pps, 25, 90000), 0);
	uint32_t reorder = h26x_poc_reorder(&t.poc);
	CHECK(reorder >= 1);
	static const int order[] = {0, 3, 1, 2, 6, 4, 5, 9, 7, 8};
	uint8_t p[32];
	const char *why;
	n_got = 0;
	for (unsigned i = 0; i < 10; i++)
		rtsp_track_rtp(&t, p, packet(p, (uint16_t)i, 1000u + (uint32_t)order[i] * 3600, i == 0), 0, &why);
	CHECK(n_got >= 10 - reorder);
	for (unsigned i = 0; i < n_got; i++) {
		CHECK(got[i].pts_90k >= got[i].dts_90k);
		if (i)
			CHECK(got[i].dts_90k > got[i - 1].dts_90k);
	}
	rtsp_track_free(&t);
}

static size_t packet_from(uint8_t *p, uint16_t seq, uint32_t ts, bool idr, uint32_t ssrc, uint8_t pt)
{
	size_t n = packet(p, seq, ts, idr);
	p[1] = (uint8_t)(0x80 | pt);
	p[8] = (uint8_t)(ssrc >> 24);
	p[9] = (uint8_t)(ssrc >> 16);
	p[10] = (uint8_t)(ssrc >> 8);
	p[11] = (uint8_t)ssrc;
	return n;
}

/* The SSRC locks at the first packet; another's are dropped and counted; two in
 * sequence from a new one (an encoder restart) restart the track at the next keyframe
 * with PTS going on by wall time. The same for a sequence jump past 3000 (Reolink's
 * LIVE555 2013 stale session). Geovision's PT 50 packets reusing the last sequence
 * number are dropped by payload type and cost nothing; a duplicate neither. */
static void test_track_restart(void)
{
	static struct rtsp_track t;
	CHECK_EQ(rtsp_track_video_init(&t, &sink, KP_CODEC_H264, NULL, 0, 25, 90000), 0);
	t.payload_type = 96;
	uint8_t p[32];
	const char *why;
	n_got = 0;
	int64_t now = 1000000;
	uint16_t seq = 100;
	uint32_t ts = 5000;
	for (int i = 0; i < 3; i++, now += 40000, ts += 3600)
		CHECK_EQ(rtsp_track_rtp(&t, p, packet_from(p, seq++, ts, i == 0, 0xaaaa, 96), now, &why), 0);
	CHECK_EQ(n_got, 3);
	/* one stray packet of another source: dropped, the stream goes on */
	CHECK_EQ(rtsp_track_rtp(&t, p, packet_from(p, 7, 99, true, 0xbbbb, 96), now, &why), 0);
	CHECK_EQ(t.foreign_ssrc, 1);
	CHECK_EQ(rtsp_track_rtp(&t, p, packet_from(p, seq++, ts, false, 0xaaaa, 96), now, &why), 0);
	ts += 3600;
	now += 40000;
	CHECK_EQ(n_got, 4);
	CHECK_EQ(t.resyncs, 0);
	/* Geovision: PT 50 reusing the last sequence number, then an exact duplicate */
	CHECK_EQ(rtsp_track_rtp(&t, p, packet_from(p, (uint16_t)(seq - 1), ts, false, 0xaaaa, 50), now, &why), 0);
	CHECK_EQ(t.other_pt, 1);
	CHECK_EQ(rtsp_track_rtp(&t, p, packet_from(p, (uint16_t)(seq - 1), ts - 3600, false, 0xaaaa, 96), now, &why),
		 0);
	CHECK_EQ(t.lost_packets + t.loss_dropped, 0);
	/* an encoder restart: new SSRC, sequence and timestamps */
	int64_t last_pts = got[n_got - 1].pts_90k;
	now += 400000; /* 0.4 s later */
	CHECK_EQ(rtsp_track_rtp(&t, p, packet_from(p, 9000, 77, false, 0xcccc, 96), now, &why), 0);
	CHECK_EQ(rtsp_track_rtp(&t, p, packet_from(p, 9001, 3677, false, 0xcccc, 96), now, &why), 0);
	CHECK_EQ(t.resyncs, 1);
	CHECK_EQ(n_got, 4); /* waiting for a keyframe */
	CHECK_EQ(rtsp_track_rtp(&t, p, packet_from(p, 9002, 7277, true, 0xcccc, 96), now + 40000, &why), 0);
	CHECK_EQ(n_got, 5);
	CHECK(got[4].keyframe);
	int64_t gap = got[4].pts_90k - last_pts;
	CHECK(gap >= 36000 && gap <= 36000 + 2 * 3600 + 10); /* the wall time, about 0.4 s */
	CHECK_EQ(rtsp_track_rtp(&t, p, packet_from(p, 9003, 10877, false, 0xaaaa, 96), now, &why), 0);
	CHECK_EQ(t.foreign_ssrc, 3); /* 0xbbbb, 0xcccc's first, now the old source */
	/* a jump past 3000 in the same source: one alone is dropped, two restart */
	CHECK_EQ(rtsp_track_rtp(&t, p, packet_from(p, 20000, 10877, true, 0xcccc, 96), now, &why), 0);
	CHECK_EQ(t.resyncs, 1);
	CHECK_EQ(rtsp_track_rtp(&t, p, packet_from(p, 9003, 10877, false, 0xcccc, 96), now, &why), 0);
	CHECK_EQ(n_got, 6);
	CHECK_EQ(rtsp_track_rtp(&t, p, packet_from(p, 30000, 500, true, 0xcccc, 96), now, &why), 0);
	CHECK_EQ(rtsp_track_rtp(&t, p, packet_from(p, 30001, 4100, true, 0xcccc, 96), now + 40000, &why), 0);
	CHECK_EQ(t.resyncs, 2);
	CHECK_EQ(n_got, 7);
	CHECK(got[6].pts_90k > got[5].pts_90k);
	/* a jump of the RTP time 20 s forward, 40 ms later by the wall clock: a discontinuity
	 * (retina MAX_FORWARD_TIME_JUMP_SECS), times go on by the wall clock */
	CHECK_EQ(rtsp_track_rtp(&t, p, packet_from(p, 30002, 4100 + 20 * 90000, false, 0xcccc, 96), now + 80000, &why),
		 0);
	CHECK_EQ(n_got, 8);
	CHECK(got[7].pts_90k - got[6].pts_90k > 0 && got[7].pts_90k - got[6].pts_90k <= 3601);
	rtsp_track_free(&t);
}

/* Before the sender reports, audio goes on the video's clock by arrival: a G.711 packet
 * of 1,024 samples (128 ms at 8 kHz) can only have been sent once its last sample was
 * captured, so its end, not its start, is placed at its
 * arrival. Video at 25 fps from PTS 0; the packet arrives with the sixth frame (200 ms):
 * its samples start at 72 ms. An AAC packet of two frames is placed by its end as well. */
static void test_track_audio_anchor(void)
{
	static struct rtsp_track v, a;
	CHECK_EQ(rtsp_track_video_init(&v, &sink, KP_CODEC_H264, NULL, 0, 25, 90000), 0);
	const struct kp_audio_format pcmu = {.codec = KP_AUDIO_PCMU, .rate = 8000, .channels = 1};
	CHECK_EQ(rtsp_track_audio_init(&a, &sink, &v, &pcmu, 0, 0, 0), 0);
	uint8_t p[32], ap[12 + 1024] = {0x80, 0};
	const char *why;
	n_got = n_got_audio = 0;
	for (unsigned i = 0; i < 6; i++)
		CHECK_EQ(rtsp_track_rtp(&v, p, packet(p, (uint16_t)i, 1000u + i * 3600, i == 0), i * 40000, &why), 0);
	ap[4] = 0x12; /* RTP time 0x12000000 */
	CHECK_EQ(rtsp_track_rtp(&a, ap, sizeof ap, 200000, &why), 0);
	rtsp_track_audio_ready(&a);
	CHECK_EQ(n_got_audio, 1);
	CHECK_EQ(got_audio[0].pts_90k, 18000 - 1024 * 90000 / 8000);
	rtsp_track_free(&a);
	rtsp_track_free(&v);

	const struct kp_audio_format aac = {.codec = KP_AUDIO_AAC, .rate = 16000, .channels = 1, .frame_samples = 1024};
	CHECK_EQ(rtsp_track_video_init(&v, &sink, KP_CODEC_H264, NULL, 0, 25, 90000), 0);
	CHECK_EQ(rtsp_track_audio_init(&a, &sink, &v, &aac, 13, 3, 3), 0);
	n_got = n_got_audio = 0;
	for (unsigned i = 0; i < 6; i++)
		CHECK_EQ(rtsp_track_rtp(&v, p, packet(p, (uint16_t)i, 1000u + i * 3600, i == 0), i * 40000, &why), 0);
	/* two AUs of 3 and 2 bytes (test_aac's payload) */
	uint8_t aacp[] = {0x80, 97, 0, 1, 0, 0, 0x40, 0, 0, 0, 0, 0, 0, 32, 0, 3 << 3, 0, 2 << 3, 1, 2, 3, 4, 5};
	CHECK_EQ(rtsp_track_rtp(&a, aacp, sizeof aacp, 200000, &why), 0);
	rtsp_track_audio_ready(&a);
	CHECK_EQ(n_got_audio, 2);
	CHECK_EQ(got_audio[0].pts_90k, 18000 - 2 * 1024 * 90000 / 16000);
	CHECK_EQ(got_audio[1].pts_90k, 18000 - 1024 * 90000 / 16000);
	rtsp_track_free(&a);
	rtsp_track_free(&v);
}

int main(void)
{
	test_reply();
	test_headers();
	test_server_requests();
	test_url();
	test_digest();
	test_sdp();
	test_aac();
	test_track_pts_wrap_and_loss();
	test_track_bframes();
	test_track_restart();
	test_track_audio_anchor();
	test_digest_threads();
	return test_failures ? 1 : 0;
}
