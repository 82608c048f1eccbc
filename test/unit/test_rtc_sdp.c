/* rtcd's SDP: parsing a browser offer (Chromium's shape), choosing the payload type,
 * writing the answer, and refusing malformed offers with a sentence, never crashing. */
#include <errno.h>
#include <stdint.h>

#include "sdp.h"
#include "test.h"

static const char chrome_offer[] =
    "v=0\r\n"
    "o=- 4611731400430051336 2 IN IP4 127.0.0.1\r\n"
    "s=-\r\n"
    "t=0 0\r\n"
    "a=group:BUNDLE 0\r\n"
    "a=extmap-allow-mixed\r\n"
    "a=msid-semantic: WMS\r\n"
    "m=video 9 UDP/TLS/RTP/SAVPF 96 97 102 103 104 105 106 107 108 109 127 125 39 40 45 46 98 99 100 101 112 113\r\n"
    "c=IN IP4 0.0.0.0\r\n"
    "a=rtcp:9 IN IP4 0.0.0.0\r\n"
    "a=ice-ufrag:Ab1c\r\n"
    "a=ice-pwd:abcdefghijklmnopqrstuvwx\r\n"
    "a=ice-options:trickle\r\n"
    "a=fingerprint:sha-256 "
    "01:23:45:67:89:AB:CD:EF:01:23:45:67:89:AB:CD:EF:01:23:45:67:89:AB:CD:EF:01:23:45:67:89:AB:CD:EF\r\n"
    "a=setup:actpass\r\n"
    "a=mid:0\r\n"
    "a=recvonly\r\n"
    "a=rtcp-mux\r\n"
    "a=rtcp-rsize\r\n"
    "a=rtpmap:96 VP8/90000\r\n"
    "a=rtcp-fb:96 nack\r\n"
    "a=rtpmap:97 rtx/90000\r\n"
    "a=fmtp:97 apt=96\r\n"
    "a=rtpmap:102 H264/90000\r\n"
    "a=fmtp:102 level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=42001f\r\n"
    "a=rtpmap:104 H264/90000\r\n"
    "a=fmtp:104 level-asymmetry-allowed=1;packetization-mode=0;profile-level-id=42001f\r\n"
    "a=rtpmap:106 H264/90000\r\n"
    "a=rtcp-fb:106 goog-remb\r\n"
    "a=rtcp-fb:106 transport-cc\r\n"
    "a=rtcp-fb:106 nack\r\n"
    "a=rtcp-fb:106 nack pli\r\n"
    "a=fmtp:106 level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=42e01f\r\n"
    "a=rtpmap:108 H264/90000\r\n"
    "a=fmtp:108 level-asymmetry-allowed=1;packetization-mode=0;profile-level-id=42e01f\r\n"
    "a=rtpmap:112 H264/90000\r\n"
    "a=fmtp:112 level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=64001f\r\n"
    "a=candidate:1 1 udp 2122260223 127.0.0.1 50000 typ host generation 0\r\n";

static const char h265_offer[] =
    "v=0\r\n"
    "o=- 1 2 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\n"
    "a=ice-ufrag:u\r\na=ice-pwd:pppppppppppppppppppppp\r\n"
    "a=fingerprint:sha-256 "
    "01:23:45:67:89:AB:CD:EF:01:23:45:67:89:AB:CD:EF:01:23:45:67:89:AB:CD:EF:01:23:45:67:89:AB:"
    "CD:EF\r\n"
    "m=audio 9 UDP/TLS/RTP/SAVPF 111\r\na=mid:a\r\na=rtpmap:111 opus/48000/2\r\n"
    "m=video 9 UDP/TLS/RTP/SAVPF 96 98\r\na=mid:v\r\na=setup:actpass\r\na=rtcp-mux\r\n"
    "a=rtpmap:96 H264/90000\r\na=fmtp:96 packetization-mode=1;profile-level-id=4d001f\r\n"
    "a=rtpmap:98 H265/90000\r\n";

static struct sdp_offer offer;
static char err[256];

static void test_parse_chrome(void)
{
	CHECK_EQ(sdp_parse_offer(chrome_offer, sizeof chrome_offer - 1, &offer, err, sizeof err), 0);
	CHECK_EQ(offer.nmedia, 1);
	const struct sdp_media *m = &offer.media[0];
	CHECK(strcmp(m->type, "video") == 0);
	CHECK(strcmp(m->mid, "0") == 0);
	CHECK(strcmp(m->ice_ufrag, "Ab1c") == 0);
	CHECK(strcmp(m->setup, "actpass") == 0);
	CHECK_EQ(m->fp_len, 32);
	CHECK_EQ(m->fp[0], 0x01);
	CHECK_EQ(m->fp[31], 0xef);
	CHECK(m->rtcp_mux);
	CHECK(m->rtcp_rsize);
	CHECK(m->recv);
	CHECK_EQ(m->ncodecs, 5);
	CHECK_EQ(offer.ncandidates, 1);
	CHECK_STR_CONTAINS(offer.candidates[0], "candidate:1 1 udp");
	const struct sdp_codec *c = NULL;
	CHECK_EQ(sdp_choose(&offer, false, &c, err, sizeof err), 0);
	CHECK(c != NULL);
	if (c) {
		CHECK_EQ(c->pt, 106); /* packetization-mode=1, 42e01f */
		CHECK(c->packetization_mode_1);
		CHECK_EQ(c->profile_level_id, 0x42e01f);
	}
	CHECK(!sdp_offers_h265(m));
}

static void test_answer(void)
{
	CHECK_EQ(sdp_parse_offer(chrome_offer, sizeof chrome_offer - 1, &offer, err, sizeof err), 0);
	const struct sdp_codec *c = NULL;
	CHECK_EQ(sdp_choose(&offer, false, &c, err, sizeof err), 0);
	const char *cands[] = {"candidate:1 1 UDP 2015363327 127.0.0.1 40000 typ host",
			       "candidate:2 1 UDP 2015363071 192.0.2.2 40001 typ host"};
	struct sdp_answer a = {
	    .offer = &offer,
	    .media = 0,
	    .codec = c,
	    .ice_ufrag = "uf",
	    .ice_pwd = "pwpwpwpwpwpwpwpwpwpwpwpw",
	    .fingerprint = "AA:BB",
	    .ssrc = 1234,
	    .cname = "keeppeek",
	    .session_id = 42,
	    .candidates = cands,
	    .ncandidates = 2,
	    .audio_media = -1,
	};
	char out[8192];
	int n = sdp_build_answer(&a, out, sizeof out);
	CHECK(n > 0);
	CHECK_EQ((size_t)n, strlen(out));
	CHECK(strncmp(out, "v=0\r\n", 5) == 0);
	CHECK_STR_CONTAINS(out, "a=group:BUNDLE 0\r\n");
	CHECK_STR_CONTAINS(out, "m=video 9 UDP/TLS/RTP/SAVPF 106\r\n");
	CHECK_STR_CONTAINS(out, "a=rtpmap:106 H264/90000\r\n");
	CHECK_STR_CONTAINS(out,
			   "a=fmtp:106 level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=42e01f\r\n");
	CHECK_STR_CONTAINS(out, "a=setup:passive\r\n");
	CHECK_STR_CONTAINS(out, "a=sendonly\r\n");
	CHECK_STR_CONTAINS(out, "a=rtcp-mux\r\n");
	CHECK_STR_CONTAINS(out, "a=rtcp-rsize\r\n");
	CHECK_STR_CONTAINS(out, "a=fingerprint:sha-256 AA:BB\r\n");
	CHECK_STR_CONTAINS(out, "a=ice-ufrag:uf\r\n");
	CHECK_STR_CONTAINS(out, "a=rtcp-fb:106 nack\r\n");
	CHECK_STR_CONTAINS(out, "a=rtcp-fb:106 nack pli\r\n");
	/* Only offered feedback: this offer names no FIR, and no transport-cc is answered. */
	CHECK(strstr(out, "ccm fir") == NULL);
	CHECK(strstr(out, "transport-cc") == NULL);
	CHECK_STR_CONTAINS(out, "a=ssrc:1234 cname:keeppeek\r\n");
	CHECK_STR_CONTAINS(out, "a=candidate:2 1 UDP 2015363071 192.0.2.2 40001 typ host\r\n");
	CHECK_STR_CONTAINS(out, "a=end-of-candidates\r\n");
	CHECK(strstr(out, "a=sendrecv") == NULL);
	/* Too small a buffer: refused, not truncated silently. */
	CHECK_EQ(sdp_build_answer(&a, out, 100), -ENOBUFS);
}

static void test_h265_and_rejected_media(void)
{
	CHECK_EQ(sdp_parse_offer(h265_offer, sizeof h265_offer - 1, &offer, err, sizeof err), 0);
	CHECK_EQ(offer.nmedia, 2);
	/* Session-level ICE and fingerprint are inherited. */
	CHECK(strcmp(offer.media[1].ice_ufrag, "u") == 0);
	CHECK_EQ(offer.media[1].fp_len, 32);
	CHECK(sdp_offers_h265(&offer.media[1]));
	const struct sdp_codec *c = NULL;
	CHECK_EQ(sdp_choose(&offer, true, &c, err, sizeof err), 1);
	CHECK(c && c->kind == KP_CODEC_H265 && c->pt == 98);
	CHECK_EQ(sdp_choose(&offer, false, &c, err, sizeof err), 1);
	CHECK(c && c->kind == KP_CODEC_H264 && c->pt == 96);
	const char *cands[] = {"candidate:1 1 UDP 1 127.0.0.1 40000 typ host"};
	struct sdp_answer a = {.offer = &offer,
			       .media = 1,
			       .codec = c,
			       .ice_ufrag = "u",
			       .ice_pwd = "p",
			       .fingerprint = "AA",
			       .ssrc = 1,
			       .cname = "k",
			       .candidates = cands,
			       .ncandidates = 1,
			       .audio_media = -1};
	char out[8192];
	CHECK(sdp_build_answer(&a, out, sizeof out) > 0);
	/* No audio chosen: the m-line is rejected. */
	CHECK_STR_CONTAINS(out, "m=audio 0 UDP/TLS/RTP/SAVPF 111\r\n");
	CHECK_STR_CONTAINS(out, "a=group:BUNDLE v\r\n");
	CHECK_STR_CONTAINS(out, "m=video 9 UDP/TLS/RTP/SAVPF 96\r\n");
}

/* An audio + video offer as aiortc and GStreamer's webrtcbin write it: BUNDLE of both,
 * Opus and G.711 offered, FIR offered on the H.264 payload type, a wildcard NACK. */
static const char av_offer[] =
    "v=0\r\n"
    "o=- 3 0 IN IP4 0.0.0.0\r\ns=-\r\nt=0 0\r\n"
    "a=group:BUNDLE 0 1\r\n"
    "a=msid-semantic:WMS *\r\n"
    "m=audio 9 UDP/TLS/RTP/SAVPF 111 0 8\r\n"
    "c=IN IP4 0.0.0.0\r\n"
    "a=recvonly\r\na=mid:0\r\na=rtcp-mux\r\n"
    "a=rtpmap:111 opus/48000/2\r\n"
    "a=fmtp:111 minptime=10;useinbandfec=1\r\n"
    "a=rtpmap:0 PCMU/8000\r\na=rtpmap:8 PCMA/8000\r\n"
    "a=ice-ufrag:Xy\r\na=ice-pwd:pppppppppppppppppppppp\r\n"
    "a=fingerprint:sha-256 "
    "01:23:45:67:89:AB:CD:EF:01:23:45:67:89:AB:CD:EF:01:23:45:67:89:AB:CD:EF:01:23:45:67:89:AB:CD:EF\r\n"
    "a=setup:actpass\r\n"
    "a=candidate:1 1 udp 2130706431 127.0.0.1 41000 typ host\r\n"
    "m=video 9 UDP/TLS/RTP/SAVPF 97 98\r\n"
    "c=IN IP4 0.0.0.0\r\n"
    "a=recvonly\r\na=mid:1\r\na=rtcp-mux\r\n"
    "a=rtcp-fb:* nack\r\n"
    "a=rtpmap:97 H264/90000\r\n"
    "a=rtcp-fb:97 nack pli\r\n"
    "a=rtcp-fb:97 ccm fir\r\n"
    "a=fmtp:97 level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=42e01f\r\n"
    "a=rtpmap:98 rtx/90000\r\n"
    "a=ice-ufrag:Xy\r\na=ice-pwd:pppppppppppppppppppppp\r\n"
    "a=fingerprint:sha-256 "
    "01:23:45:67:89:AB:CD:EF:01:23:45:67:89:AB:CD:EF:01:23:45:67:89:AB:CD:EF:01:23:45:67:89:AB:CD:EF\r\n"
    "a=setup:actpass\r\n";

static int answer_av(bool send, uint32_t profile_level_id, char *out, size_t cap)
{
	const struct sdp_codec *c = NULL, *opus = NULL;
	CHECK_EQ(sdp_parse_offer(av_offer, sizeof av_offer - 1, &offer, err, sizeof err), 0);
	CHECK_EQ(sdp_choose(&offer, false, &c, err, sizeof err), 1);
	CHECK_EQ(sdp_choose_audio(&offer, &opus), 0);
	CHECK(opus && opus->pt == 111 && opus->audio == SDP_AUDIO_OPUS);
	CHECK_EQ(offer.media[0].codecs[1].audio, SDP_AUDIO_PCMU);
	CHECK_EQ(offer.media[0].codecs[2].audio, SDP_AUDIO_PCMA);
	const char *cands[] = {"candidate:1 1 UDP 1 127.0.0.1 40000 typ host"};
	struct sdp_answer a = {.offer = &offer,
			       .media = 1,
			       .codec = c,
			       .profile_level_id = profile_level_id,
			       .audio_media = 0,
			       .audio_codec = opus,
			       .audio_send = send,
			       .audio_ssrc = 777,
			       .ice_ufrag = "u",
			       .ice_pwd = "p",
			       .fingerprint = "AA",
			       .ssrc = 1,
			       .cname = "k",
			       .candidates = cands,
			       .ncandidates = 1};
	return sdp_build_answer(&a, out, cap);
}

/* Audio answered with Opus (RFC 7587) in the BUNDLE group, never with port 0. */
static void test_audio_answer(void)
{
	char out[8192];
	CHECK(answer_av(true, 0, out, sizeof out) > 0);
	CHECK_STR_CONTAINS(out, "a=group:BUNDLE 0 1\r\n");
	CHECK_STR_CONTAINS(out, "m=audio 9 UDP/TLS/RTP/SAVPF 111\r\n");
	CHECK_STR_CONTAINS(out, "a=rtpmap:111 opus/48000/2\r\n");
	CHECK_STR_CONTAINS(out, "a=fmtp:111 minptime=10;useinbandfec=1\r\n");
	CHECK_STR_CONTAINS(out, "a=ssrc:777 cname:k\r\n");
	CHECK_STR_CONTAINS(out, "a=msid:keeppeek audio\r\n");
	CHECK(strstr(out, " 0 UDP/TLS") == NULL);
	/* The audio section is sendonly, the video's too. */
	const char *am = strstr(out, "m=audio"), *vm = strstr(out, "m=video");
	CHECK(am && vm && am < vm);
	if (am && vm) {
		CHECK(strstr(am, "a=sendonly") < vm);
		CHECK(strstr(am, "a=mid:0") < vm);
	}
	/* Candidates once, in the first bundled m-line. */
	CHECK(am && strstr(am, "a=candidate:") && strstr(am, "a=candidate:") < vm);
	CHECK(vm && strstr(vm, "a=candidate:") == NULL);
	/* Without audio to send: inactive, with Opus still listed. */
	CHECK(answer_av(false, 0, out, sizeof out) > 0);
	CHECK_STR_CONTAINS(out, "m=audio 9 UDP/TLS/RTP/SAVPF 111\r\n");
	CHECK_STR_CONTAINS(out, "a=inactive\r\n");
	CHECK_STR_CONTAINS(out, "a=rtpmap:111 opus/48000/2\r\n");
	CHECK(strstr(out, "a=ssrc:777") == NULL);
	CHECK(strstr(out, " 0 UDP/TLS") == NULL);
}

/* The profile-level-id is the stream's (a 1080p level-4.0 High stream), not the offer's;
 * only offered feedback (the wildcard NACK, PLI and FIR here). */
static void test_profile_and_feedback(void)
{
	char out[8192];
	CHECK(answer_av(true, 0x640028, out, sizeof out) > 0);
	CHECK_STR_CONTAINS(out, "a=fmtp:97 level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=640028\r\n");
	CHECK(strstr(out, "42e01f") == NULL);
	CHECK_STR_CONTAINS(out, "a=rtcp-fb:97 nack\r\n");
	CHECK_STR_CONTAINS(out, "a=rtcp-fb:97 nack pli\r\n");
	CHECK_STR_CONTAINS(out, "a=rtcp-fb:97 ccm fir\r\n");
	/* Unknown profile: the offer's fmtp stands. */
	CHECK(answer_av(true, 0, out, sizeof out) > 0);
	CHECK_STR_CONTAINS(out, "profile-level-id=42e01f\r\n");
}

static void test_h264_profile_from_sps(void)
{
	/* An SPS NAL (type 7) of High profile (100), constraint flags 0, level 4.0 (40). */
	static const uint8_t au[] = {0, 0, 0, 1, 0x67, 0x64, 0x00, 0x28, 0xac, 0, 0, 0, 1, 0x68, 0xee, 0x3c, 0x80};
	CHECK_EQ(h264_annexb_profile_level_id(au, sizeof au), 0x640028u);
	CHECK_EQ(h264_annexb_profile_level_id(au + 9, sizeof au - 9), 0u); /* a PPS only */
	static const uint8_t short_sps[] = {0, 0, 1, 0x67, 0x42};
	CHECK_EQ(h264_annexb_profile_level_id(short_sps, sizeof short_sps), 0u);
}

static void expect_bad(const char *sdp, const char *why)
{
	err[0] = '\0';
	int r = sdp_parse_offer(sdp, strlen(sdp), &offer, err, sizeof err);
	CHECK_EQ(r, -EBADMSG);
	CHECK(err[0] != '\0');
	CHECK_STR_CONTAINS(err, why);
}

static void test_malformed(void)
{
	expect_bad("", "empty");
	expect_bad("v=1\r\nm=video 9 X 96\r\n", "v=0");
	expect_bad("v=0\r\nnot a line\r\n", "x=value");
	expect_bad("v=0\r\nm=video\r\n", "m-line");
	expect_bad("v=0\r\nm=video abc UDP 96\r\n", "port");
	expect_bad("v=0\r\nm=video 99999 UDP 96\r\n", "port");
	expect_bad("v=0\r\nm=video 9 UDP\r\n", "protocol");
	expect_bad("v=0\r\nm=video 9 UDP 96\r\na=rtpmap:300 H264/90000\r\n", "payload type");
	expect_bad("v=0\r\nm=video 9 UDP 96\r\na=rtpmap:96 H264/90000\r\na=rtpmap:96 H264/90000\r\n", "twice");
	expect_bad("v=0\r\nm=video 9 UDP 96\r\na=fingerprint:sha-256 01:02\r\n", "fingerprint");
	expect_bad("v=0\r\nm=video 9 UDP 96\r\na=fingerprint:md5 01:02\r\n", "fingerprint");
	expect_bad("v=0\r\nm=video 9 UDP 96\r\na=fingerprint:sha-256 zz\r\n", "fingerprint");
	expect_bad("v=0\r\ns=-\r\n", "no m-line");
	expect_bad("v=0\r\nm=video 9 UDP 96\r\na=mid:\r\n", "a=mid");
	char big[SDP_MAX_LINE + 64];
	memset(big, 'a', sizeof big);
	memcpy(big, "v=0\r\na=", 7);
	big[sizeof big - 1] = '\0';
	expect_bad(big, "longer than");
	char many[2048] = "v=0\r\n";
	for (int i = 0; i < SDP_MAX_MEDIA + 1; i++)
		strcat(many, "m=video 9 UDP 96\r\n");
	expect_bad(many, "m-lines");
	const char nul[] = "v=0\r\nm=video 9 UDP 96\r\na=mid:0\0x\r\n";
	CHECK_EQ(sdp_parse_offer(nul, sizeof nul - 1, &offer, err, sizeof err), -EBADMSG);
	CHECK_STR_CONTAINS(err, "NUL");
	/* Parsed, but nothing to send to. */
	const char *noh264 = "v=0\r\nm=video 9 UDP 96\r\na=rtpmap:96 VP8/90000\r\n";
	CHECK_EQ(sdp_parse_offer(noh264, strlen(noh264), &offer, err, sizeof err), 0);
	const struct sdp_codec *c;
	CHECK_EQ(sdp_choose(&offer, false, &c, err, sizeof err), -ENOTSUP);
	CHECK_STR_CONTAINS(err, "H.264");
	const char *pm0 = "v=0\r\nm=video 9 UDP 96\r\na=rtpmap:96 H264/90000\r\na=fmtp:96 packetization-mode=0\r\n";
	CHECK_EQ(sdp_parse_offer(pm0, strlen(pm0), &offer, err, sizeof err), 0);
	CHECK_EQ(sdp_choose(&offer, false, &c, err, sizeof err), -ENOTSUP);
	const char *audio = "v=0\r\nm=audio 9 UDP 111\r\n";
	CHECK_EQ(sdp_parse_offer(audio, strlen(audio), &offer, err, sizeof err), 0);
	CHECK_EQ(sdp_choose(&offer, false, &c, err, sizeof err), -ENOENT);
}

/* Every truncation and a byte flip at every offset of a real offer: no crash. */
static void test_mutations(void)
{
	char buf[sizeof chrome_offer];
	for (size_t n = 0; n < sizeof chrome_offer - 1; n++)
		sdp_parse_offer(chrome_offer, n, &offer, err, sizeof err);
	for (size_t i = 0; i < sizeof chrome_offer - 1; i++) {
		memcpy(buf, chrome_offer, sizeof buf);
		buf[i] ^= 0x5a;
		if (sdp_parse_offer(buf, sizeof buf - 1, &offer, err, sizeof err) == 0) {
			const struct sdp_codec *c;
			sdp_choose(&offer, true, &c, err, sizeof err);
		}
	}
}

int main(void)
{
	RUN(test_parse_chrome);
	RUN(test_answer);
	RUN(test_h265_and_rejected_media);
	RUN(test_audio_answer);
	RUN(test_profile_and_feedback);
	RUN(test_h264_profile_from_sps);
	RUN(test_malformed);
	RUN(test_mutations);
	return TEST_EXIT();
}
