/* Unit tests for common/rtp_h26x.c: RTP header parsing and every malformed case,
 * H.264/H.265 packetize → depacketize round trips over many NAL and
 * MTU sizes, loss and reordering, and each malformed payload's specific rejection. */
#include <errno.h>
#include <stdint.h>

#include "rtp_h26x.h"
#include "test.h"

/* ---- helpers ---- */

static uint32_t rng = 12345;

static uint8_t rnd_byte(void)
{
	rng = rng * 1103515245u + 12345u;
	return (uint8_t)(1 + (rng >> 16) % 255); /* never 0: no start code emulation */
}

struct au_buf {
	uint8_t *data;
	size_t len;
};

static void au_add_nal(struct au_buf *au, enum kp_codec codec, unsigned type, size_t n)
{
	au->data = realloc(au->data, au->len + 4 + n);
	uint8_t *p = au->data + au->len;
	memcpy(p, "\0\0\0\1", 4);
	p += 4;
	for (size_t i = 0; i < n; i++)
		p[i] = rnd_byte();
	if (codec == KP_CODEC_H264) {
		p[0] = (uint8_t)(0x60 | type);
	} else {
		p[0] = (uint8_t)(type << 1);
		p[1] = 1;
	}
	au->len += 4 + n;
}

struct capture {
	uint8_t *pkts[20000];
	size_t lens[20000];
	size_t n;
	size_t max_len;
};

static int capture_emit(void *arg, const uint8_t *pkt, size_t len)
{
	struct capture *c = arg;
	if (c->n == 20000)
		return -ENOSPC;
	c->pkts[c->n] = malloc(len);
	memcpy(c->pkts[c->n], pkt, len);
	c->lens[c->n++] = len;
	if (len > c->max_len)
		c->max_len = len;
	return 0;
}

static void capture_reset(struct capture *c)
{
	for (size_t i = 0; i < c->n; i++)
		free(c->pkts[i]);
	c->n = 0;
	c->max_len = 0;
}

static struct capture cap;

/* A packet with the given payload, for malformed-payload cases. */
static size_t make_packet(uint8_t *buf, uint16_t seq, uint32_t ts, bool marker, const uint8_t *payload, size_t n)
{
	struct rtp_header h = {.marker = marker, .payload_type = 96, .seq = seq, .timestamp = ts, .ssrc = 7};
	size_t hl;
	rtp_header_write(&h, buf, 64, &hl);
	memcpy(buf + hl, payload, n);
	return hl + n;
}

/* ---- header ---- */

static void test_header_roundtrip(void)
{
	uint8_t buf[128];
	struct rtp_header h = {.marker = true,
			       .payload_type = 96,
			       .seq = 65535,
			       .timestamp = 0xdeadbeef,
			       .ssrc = 0x01020304,
			       .csrc_count = 2,
			       .csrc = {11, 22}};
	size_t n;
	CHECK_EQ(rtp_header_write(&h, buf, sizeof buf, &n), 0);
	CHECK_EQ(n, 20);
	buf[n] = 0x65;
	struct rtp_header p;
	const char *why = NULL;
	CHECK_EQ(rtp_header_parse(buf, n + 1, &p, &why), 0);
	CHECK(p.marker);
	CHECK_EQ(p.payload_type, 96);
	CHECK_EQ(p.seq, 65535);
	CHECK_EQ(p.timestamp, 0xdeadbeef);
	CHECK_EQ(p.ssrc, 0x01020304);
	CHECK_EQ(p.csrc_count, 2);
	CHECK_EQ(p.csrc[1], 22);
	CHECK_EQ(p.payload_len, 1);
	CHECK_EQ(p.payload[0], 0x65);
	CHECK_EQ(rtp_header_write(&h, buf, 19, &n), -ENOBUFS);
	h.payload_type = 128;
	CHECK_EQ(rtp_header_write(&h, buf, sizeof buf, &n), -EINVAL);
}

static void test_header_extension_padding(void)
{
	/* V=2 P=1 X=1 CC=1, ext profile 0xbede with 1 word, payload 3 bytes, padding 4. */
	uint8_t pkt[] = {0xb1, 0x60, 0, 1, 0, 0, 0, 2, 0,    0,    0,    3, 0, 0, 0, 9,
			 0xbe, 0xde, 0, 1, 1, 2, 3, 4, 0xaa, 0xbb, 0xcc, 0, 0, 0, 4};
	struct rtp_header h;
	const char *why;
	CHECK_EQ(rtp_header_parse(pkt, sizeof pkt, &h, &why), 0);
	CHECK(h.extension);
	CHECK_EQ(h.ext_profile, 0xbede);
	CHECK_EQ(h.ext_len, 4);
	CHECK_EQ(h.ext_data[3], 4);
	CHECK_EQ(h.padding_len, 4);
	CHECK_EQ(h.payload_len, 3);
	CHECK_EQ(h.payload[0], 0xaa);
	CHECK_EQ(h.csrc[0], 9);
}

static void expect_header_error(const uint8_t *pkt, size_t len, int err, const char *needle)
{
	struct rtp_header h;
	const char *why = "";
	CHECK_EQ(rtp_header_parse(pkt, len, &h, &why), err);
	CHECK_STR_CONTAINS(why, needle);
}

static void test_header_malformed(void)
{
	uint8_t ok[12] = {0x80, 96, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1};
	expect_header_error(ok, 11, -EBADMSG, "shorter than its 12-byte header");
	expect_header_error(ok, 0, -EBADMSG, "shorter");
	uint8_t v1[12] = {0x40, 96};
	expect_header_error(v1, 12, -EPROTONOSUPPORT, "version is not 2");
	uint8_t v3[12] = {0xc0, 96};
	expect_header_error(v3, 12, -EPROTONOSUPPORT, "version is not 2");
	uint8_t cc[20] = {0x83, 96}; /* 3 CSRC need 24 bytes */
	expect_header_error(cc, sizeof cc, -EBADMSG, "CSRC list truncated");
	uint8_t x1[14] = {0x90, 96};
	expect_header_error(x1, sizeof x1, -EBADMSG, "extension header truncated");
	uint8_t x2[20] = {0x90, 96, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xbe, 0xde, 0, 2, 1, 2, 3, 4};
	expect_header_error(x2, sizeof x2, -EBADMSG, "extension longer than the packet");
	uint8_t p0[14] = {0xa0, 96, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 5, 0};
	expect_header_error(p0, sizeof p0, -EBADMSG, "zero padding length");
	uint8_t p1[14] = {0xa0, 96, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 5, 3};
	expect_header_error(p1, sizeof p1, -EBADMSG, "padding longer than the payload");
	uint8_t p2[12] = {0xa0, 96, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}; /* padding byte inside the header */
	expect_header_error(p2, sizeof p2, -EBADMSG, "padding longer than the payload");
	/* Padding that exactly consumes the payload is fine: an empty payload. */
	uint8_t p3[14] = {0xa0, 96, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 5, 2};
	struct rtp_header h;
	const char *why;
	CHECK_EQ(rtp_header_parse(p3, sizeof p3, &h, &why), 0);
	CHECK_EQ(h.payload_len, 0);
}

/* ---- round trips ---- */

static void packetize(enum kp_codec codec, size_t mtu, const struct au_buf *au, uint32_t ts, uint16_t seq)
{
	struct rtp_packetizer *p = malloc(sizeof *p);
	CHECK_EQ(rtp_packetizer_init(p, codec, 96, 0x1234, seq, mtu), 0);
	CHECK_EQ(rtp_packetize(p, au->data, au->len, ts, capture_emit, &cap), 0);
	CHECK_EQ(p->seq, (uint16_t)(seq + cap.n));
	free(p);
}

static int roundtrip_one(enum kp_codec codec, size_t mtu, size_t frame_size, bool with_params)
{
	struct au_buf au = {0};
	int failures = test_failures;
	if (with_params) {
		if (codec == KP_CODEC_H265)
			au_add_nal(&au, codec, 32, 24);
		au_add_nal(&au, codec, codec == KP_CODEC_H264 ? 7 : 33, 30);
		au_add_nal(&au, codec, codec == KP_CODEC_H264 ? 8 : 34, 6);
	}
	au_add_nal(&au, codec, codec == KP_CODEC_H264 ? 5 : 19, frame_size);
	au_add_nal(&au, codec, codec == KP_CODEC_H264 ? 1 : 1, 3);
	capture_reset(&cap);
	packetize(codec, mtu, &au, 90000, 65530);
	CHECK(cap.max_len <= mtu);
	struct rtp_depack d;
	CHECK_EQ(rtp_depack_init(&d, codec, RTP_MAX_AU), 0);
	int got = 0;
	for (size_t i = 0; i < cap.n; i++) {
		struct rtp_header h;
		const char *why = NULL;
		CHECK_EQ(rtp_header_parse(cap.pkts[i], cap.lens[i], &h, &why), 0);
		CHECK_EQ(h.marker, i == cap.n - 1);
		CHECK_EQ(h.seq, (uint16_t)(65530 + i));
		CHECK_EQ(h.timestamp, 90000);
		struct rtp_au out;
		int r = rtp_depack_push(&d, cap.pkts[i], cap.lens[i], &out, &why);
		if (r < 0)
			fprintf(stderr, "push: %s\n", why);
		CHECK_EQ(r, i == cap.n - 1 ? 1 : 0);
		if (r == 1) {
			got++;
			CHECK_EQ(out.len, au.len);
			CHECK(out.len == au.len && memcmp(out.data, au.data, au.len) == 0);
			CHECK(out.keyframe);
			CHECK_EQ(out.timestamp, 90000);
		}
	}
	CHECK_EQ(got, 1);
	if (with_params && mtu >= 100) {
		/* Parameter sets travel together in one aggregation packet. */
		struct rtp_header h;
		const char *why;
		rtp_header_parse(cap.pkts[0], cap.lens[0], &h, &why);
		CHECK_EQ(h26x_nal_type(codec, h.payload), codec == KP_CODEC_H264 ? 24u : 48u);
	}
	CHECK_EQ(d.stats.aus, 1);
	rtp_depack_free(&d);
	free(au.data);
	if (test_failures != failures)
		fprintf(stderr, "  in roundtrip codec=%d mtu=%zu size=%zu params=%d\n", codec, mtu, frame_size,
			with_params);
	return test_failures == failures;
}

static void test_roundtrips(void)
{
	const size_t mtus[] = {RTP_MIN_MTU, 65, 100, 1200, 1400, 1500, RTP_MAX_PACKET};
	for (int c = KP_CODEC_H264; c <= KP_CODEC_H265; c++) {
		for (size_t m = 0; m < sizeof mtus / sizeof mtus[0]; m++) {
			size_t mtu = mtus[m];
			size_t single = mtu - RTP_HEADER_SIZE;
			const size_t sizes[] = {2,          3,          50,         single - 1, single,
						single + 1, single + 2, 2 * single, 70000,      300000};
			for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
				if (!roundtrip_one((enum kp_codec)c, mtu, sizes[s], true))
					return;
				if (!roundtrip_one((enum kp_codec)c, mtu, sizes[s], false))
					return;
			}
		}
	}
}

static void test_packetizer_limits(void)
{
	struct rtp_packetizer *p = malloc(sizeof *p);
	CHECK_EQ(rtp_packetizer_init(p, KP_CODEC_H264, 96, 1, 0, RTP_MIN_MTU - 1), -EINVAL);
	CHECK_EQ(rtp_packetizer_init(p, KP_CODEC_H264, 96, 1, 0, RTP_MAX_PACKET + 1), -EINVAL);
	CHECK_EQ(rtp_packetizer_init(p, KP_CODEC_H264, 128, 1, 0, 1400), -EINVAL);
	CHECK_EQ(rtp_packetizer_init(p, (enum kp_codec)3, 96, 1, 0, 1400), -EINVAL);
	CHECK_EQ(rtp_packetizer_init(p, KP_CODEC_H265, 96, 1, 0, 1400), 0);
	const uint8_t empty[] = {0, 0, 0, 1, 0, 0};
	CHECK_EQ(rtp_packetize(p, empty, sizeof empty, 0, capture_emit, &cap), -ENODATA);
	const uint8_t short265[] = {0, 0, 1, 0x26};
	CHECK_EQ(rtp_packetize(p, short265, sizeof short265, 0, capture_emit, &cap), -EINVAL);
	free(p);
}

/* Several access units with packet loss and reordering. */
static void test_loss_and_reorder(void)
{
	for (int c = KP_CODEC_H264; c <= KP_CODEC_H265; c++) {
		enum kp_codec codec = (enum kp_codec)c;
		struct au_buf aus[4] = {{0}};
		capture_reset(&cap);
		size_t first_pkt[5];
		struct rtp_packetizer *p = malloc(sizeof *p);
		rtp_packetizer_init(p, codec, 96, 1, 100, 1200);
		for (int i = 0; i < 4; i++) {
			au_add_nal(&aus[i], codec, i == 0 ? (codec == KP_CODEC_H264 ? 5 : 19) : 1, 5000);
			first_pkt[i] = cap.n;
			CHECK_EQ(rtp_packetize(p, aus[i].data, aus[i].len, (uint32_t)(3000 * i), capture_emit, &cap),
				 0);
		}
		first_pkt[4] = cap.n;
		free(p);
		/* Order: AU0 complete; AU1 missing its middle packet; AU2 with two packets swapped;
		 * AU3 complete. */
		size_t order[64], n = 0;
		for (size_t i = first_pkt[0]; i < first_pkt[1]; i++)
			order[n++] = i;
		for (size_t i = first_pkt[1]; i < first_pkt[2]; i++)
			if (i != first_pkt[1] + 2)
				order[n++] = i;
		for (size_t i = first_pkt[2]; i < first_pkt[3]; i++)
			order[n++] = i;
		size_t t = order[n - 2];
		order[n - 2] = order[n - 3];
		order[n - 3] = t;
		for (size_t i = first_pkt[3]; i < first_pkt[4]; i++)
			order[n++] = i;
		struct rtp_depack d;
		rtp_depack_init(&d, codec, RTP_MAX_AU);
		int got = 0;
		uint32_t seen[4];
		for (size_t k = 0; k < n; k++) {
			struct rtp_au out;
			const char *why;
			int r = rtp_depack_push(&d, cap.pkts[order[k]], cap.lens[order[k]], &out, &why);
			CHECK(r >= 0);
			if (r == 1) {
				seen[got++] = out.timestamp;
				int idx = (int)(out.timestamp / 3000);
				CHECK(out.len == aus[idx].len && !memcmp(out.data, aus[idx].data, out.len));
			}
		}
		CHECK_EQ(got, 2);
		CHECK_EQ(seen[0], 0);
		CHECK_EQ(seen[1], 9000);
		CHECK_EQ(d.stats.dropped_gap, 2);
		CHECK_EQ(d.stats.late, 1);
		CHECK_EQ(d.stats.aus, 2);
		/* A duplicate of an old packet is ignored. */
		struct rtp_au out;
		const char *why;
		CHECK_EQ(rtp_depack_push(&d, cap.pkts[0], cap.lens[0], &out, &why), 0);
		CHECK_EQ(d.stats.late, 2);
		rtp_depack_free(&d);
		for (int i = 0; i < 4; i++)
			free(aus[i].data);
	}
}

/* A whole access unit lost between two others: the one after the gap is dropped. */
static void test_gap_between_aus(void)
{
	struct rtp_depack d;
	rtp_depack_init(&d, KP_CODEC_H264, RTP_MAX_AU);
	uint8_t pkt[64];
	const uint8_t nal[] = {0x65, 1, 2, 3};
	struct rtp_au out;
	const char *why;
	size_t n = make_packet(pkt, 1, 0, true, nal, sizeof nal);
	CHECK_EQ(rtp_depack_push(&d, pkt, n, &out, &why), 1);
	n = make_packet(pkt, 3, 6000, true, nal, sizeof nal);
	CHECK_EQ(rtp_depack_push(&d, pkt, n, &out, &why), 0);
	CHECK_EQ(d.stats.dropped_gap, 1);
	n = make_packet(pkt, 4, 9000, true, nal, sizeof nal);
	CHECK_EQ(rtp_depack_push(&d, pkt, n, &out, &why), 1);
	CHECK_EQ(out.len, 8);
	/* A sender restart far behind resynchronises instead of looking late. */
	n = make_packet(pkt, 60000, 12000, true, nal, sizeof nal);
	CHECK_EQ(rtp_depack_push(&d, pkt, n, &out, &why), 0);
	n = make_packet(pkt, 60001, 15000, true, nal, sizeof nal);
	CHECK_EQ(rtp_depack_push(&d, pkt, n, &out, &why), 1);
	rtp_depack_free(&d);
}

/* On a stream that sets the marker, one missing before a timestamp change drops. */
static void test_missing_marker(void)
{
	struct rtp_depack d;
	rtp_depack_init(&d, KP_CODEC_H264, RTP_MAX_AU);
	uint8_t pkt[64];
	const uint8_t nal[] = {0x41, 0x81, 2};
	struct rtp_au out;
	const char *why;
	size_t n = make_packet(pkt, 0, 0, true, nal, sizeof nal);
	CHECK_EQ(rtp_depack_push(&d, pkt, n, &out, &why), 1);
	n = make_packet(pkt, 1, 3000, false, nal, sizeof nal);
	CHECK_EQ(rtp_depack_push(&d, pkt, n, &out, &why), 0);
	n = make_packet(pkt, 2, 6000, true, nal, sizeof nal);
	CHECK_EQ(rtp_depack_push(&d, pkt, n, &out, &why), 1);
	CHECK_EQ(out.timestamp, 6000);
	CHECK(!out.keyframe);
	CHECK_EQ(d.stats.dropped_no_marker, 1);
	CHECK(!d.end_on_ts);
	rtp_depack_free(&d);
}

/* Reolink marks its SPS packet and sends SPS/PPS with the previous frame's timestamp
 * (retina#13, scottlamb/retina issue 13); some cameras mark their SEI (moonfire-nvr#352):
 * neither ends an access unit, both go into the next picture's. */
static void test_marked_params(void)
{
	struct rtp_depack d;
	rtp_depack_init(&d, KP_CODEC_H264, RTP_MAX_AU);
	uint8_t pkt[64];
	const uint8_t p_slice[] = {0x41, 0x9a, 1}, sps[] = {0x67, 0x64, 0, 0x1f}, pps[] = {0x68, 0xee, 0x3c},
		      sei[] = {0x06, 5, 1, 0x80}, idr[] = {0x65, 0x88, 0x84};
	struct rtp_au out;
	const char *why;
	size_t n = make_packet(pkt, 1, 1000, true, p_slice, sizeof p_slice);
	CHECK_EQ(rtp_depack_push(&d, pkt, n, &out, &why), 1);
	n = make_packet(pkt, 2, 1000, true, sps, sizeof sps); /* marked, the last frame's time */
	CHECK_EQ(rtp_depack_push(&d, pkt, n, &out, &why), 0);
	n = make_packet(pkt, 3, 1000, false, pps, sizeof pps);
	CHECK_EQ(rtp_depack_push(&d, pkt, n, &out, &why), 0);
	n = make_packet(pkt, 4, 4000, true, sei, sizeof sei); /* a marked SEI */
	CHECK_EQ(rtp_depack_push(&d, pkt, n, &out, &why), 0);
	n = make_packet(pkt, 5, 4000, true, idr, sizeof idr);
	CHECK_EQ(rtp_depack_push(&d, pkt, n, &out, &why), 1);
	CHECK_EQ(out.timestamp, 4000);
	CHECK(out.keyframe);
	CHECK_EQ(out.len, 4 * 4 + sizeof sps + sizeof pps + sizeof sei + sizeof idr);
	CHECK(out.data[4] == 0x67 && out.data[4 + 4 + sizeof sps] == 0x68);
	CHECK_EQ(d.stats.dropped_no_marker + d.stats.dropped_gap + d.stats.dropped_malformed, 0);
	CHECK(!d.end_on_ts);
	rtp_depack_free(&d);
}

/* A marker on every slice (OpenIPC Majestic): a later slice of the picture just ended
 * comes with its timestamp. That picture is lost, the stream then ends access units at
 * timestamp changes, H.264 and H.265 (first_slice_segment_in_pic_flag). */
static void test_marker_every_slice(void)
{
	for (int c = 0; c < 2; c++) {
		enum kp_codec codec = c ? KP_CODEC_H265 : KP_CODEC_H264;
		struct rtp_depack d;
		rtp_depack_init(&d, codec, RTP_MAX_AU);
		uint8_t pkt[64];
		/* first slice: first_mb_in_slice 0 ("1"), first_slice_segment_in_pic_flag 1;
		 * second: first_mb_in_slice 1 ("010"), the flag 0 */
		const uint8_t first264[] = {0x41, 0x9a, 1}, later264[] = {0x41, 0x40, 1};
		const uint8_t first265[] = {0x02, 0x01, 0xd0, 1}, later265[] = {0x02, 0x01, 0x50, 1};
		const uint8_t *first = c ? first265 : first264, *later = c ? later265 : later264;
		size_t fl = c ? sizeof first265 : sizeof first264;
		struct rtp_au out;
		const char *why;
		size_t n = make_packet(pkt, 1, 0, true, first, fl);
		CHECK_EQ(rtp_depack_push(&d, pkt, n, &out, &why), 1);
		n = make_packet(pkt, 2, 0, true, later, fl);
		CHECK_EQ(rtp_depack_push(&d, pkt, n, &out, &why), 0);
		CHECK(d.end_on_ts);
		uint16_t seq = 3;
		for (uint32_t ts = 3000; ts <= 9000; ts += 3000) {
			n = make_packet(pkt, seq++, ts, true, first, fl);
			int r = rtp_depack_push(&d, pkt, n, &out, &why);
			CHECK_EQ(r, ts == 3000 ? 0 : 1); /* the cut picture is dropped */
			if (r == 1)
				CHECK_EQ(out.timestamp, ts - 3000);
			n = make_packet(pkt, seq++, ts, true, later, fl);
			CHECK_EQ(rtp_depack_push(&d, pkt, n, &out, &why), 0);
		}
		CHECK_EQ(d.stats.dropped_no_marker, 1);
		CHECK_EQ(d.stats.aus, 3);
		rtp_depack_free(&d);
	}
}

/* Never a marker (live555 proxies): access units end at timestamp changes. */
static void test_never_marker(void)
{
	struct rtp_depack d;
	rtp_depack_init(&d, KP_CODEC_H264, RTP_MAX_AU);
	uint8_t pkt[64];
	const uint8_t idr[] = {0x65, 0x88, 1}, p_slice[] = {0x41, 0x9a, 1};
	struct rtp_au out;
	const char *why;
	size_t n = make_packet(pkt, 1, 0, false, idr, sizeof idr);
	CHECK_EQ(rtp_depack_push(&d, pkt, n, &out, &why), 0);
	n = make_packet(pkt, 2, 3000, false, p_slice, sizeof p_slice);
	CHECK_EQ(rtp_depack_push(&d, pkt, n, &out, &why), 1);
	CHECK(out.keyframe && out.timestamp == 0 && out.len == 4 + sizeof idr);
	CHECK(d.end_on_ts);
	n = make_packet(pkt, 3, 6000, false, p_slice, sizeof p_slice);
	CHECK_EQ(rtp_depack_push(&d, pkt, n, &out, &why), 1);
	CHECK(!out.keyframe && out.timestamp == 3000 && out.data[4] == 0x41);
	CHECK_EQ(d.stats.aus, 2);
	CHECK_EQ(d.stats.dropped_no_marker, 0);
	rtp_depack_free(&d);
}

/* A FU-A with both start and end bits is a whole NAL unit (retina 8ff7a0f). */
static void test_fu_start_end(void)
{
	struct rtp_depack d;
	rtp_depack_init(&d, KP_CODEC_H264, RTP_MAX_AU);
	uint8_t pkt[64];
	const uint8_t fu[] = {0x7c, 0xc5, 0x88, 2};
	struct rtp_au out;
	const char *why;
	size_t n = make_packet(pkt, 1, 0, true, fu, sizeof fu);
	CHECK_EQ(rtp_depack_push(&d, pkt, n, &out, &why), 1);
	CHECK(out.keyframe && out.len == 4 + 3 && out.data[4] == 0x65 && out.data[5] == 0x88);
	CHECK_EQ(d.stats.dropped_malformed, 0);
	rtp_depack_free(&d);
}

static void test_oversize(void)
{
	struct rtp_depack d;
	CHECK_EQ(rtp_depack_init(&d, KP_CODEC_H264, RTP_MAX_AU + 1), -EINVAL);
	CHECK_EQ(rtp_depack_init(&d, KP_CODEC_H264, 100), 0);
	uint8_t pkt[200], nal[120];
	memset(nal, 0x11, sizeof nal);
	nal[0] = 0x41;
	struct rtp_au out;
	const char *why = "";
	size_t n = make_packet(pkt, 1, 0, false, nal, 60);
	CHECK_EQ(rtp_depack_push(&d, pkt, n, &out, &why), 0);
	n = make_packet(pkt, 2, 0, true, nal, 60);
	CHECK_EQ(rtp_depack_push(&d, pkt, n, &out, &why), -EMSGSIZE);
	CHECK_STR_CONTAINS(why, "reassembly ceiling");
	CHECK_EQ(d.stats.dropped_oversize, 1);
	CHECK(d.cap <= 100);
	/* The next access unit is fine again. */
	n = make_packet(pkt, 3, 3000, true, nal, 50);
	CHECK_EQ(rtp_depack_push(&d, pkt, n, &out, &why), 1);
	rtp_depack_free(&d);
}

struct bad_payload {
	enum kp_codec codec;
	uint8_t payload[16];
	size_t len;
	bool marker;
	int err;
	const char *reason;
};

static void test_malformed_payloads(void)
{
	static const struct bad_payload cases[] = {
	    {KP_CODEC_H264, {0}, 0, true, -EBADMSG, "without payload"},
	    {KP_CODEC_H264, {0xe1, 1}, 2, true, -EBADMSG, "forbidden_zero_bit"},
	    {KP_CODEC_H264, {0x00, 1}, 2, true, -EPROTONOSUPPORT, "reserved H.264"},
	    {KP_CODEC_H264, {0x1e, 1}, 2, true, -EPROTONOSUPPORT, "reserved H.264"},
	    {KP_CODEC_H264, {0x19, 0, 1, 0x41}, 4, true, -EPROTONOSUPPORT, "packetization-mode 2"},
	    {KP_CODEC_H264, {0x1a, 0, 1, 0x41}, 4, true, -EPROTONOSUPPORT, "packetization-mode 2"},
	    {KP_CODEC_H264, {0x1d, 0x85, 1}, 3, true, -EPROTONOSUPPORT, "packetization-mode 2"},
	    {KP_CODEC_H264, {0x18}, 1, true, -EBADMSG, "empty aggregation"},
	    {KP_CODEC_H264, {0x18, 0, 2, 0x67, 1, 0}, 6, true, -EBADMSG, "NAL size truncated"},
	    {KP_CODEC_H264, {0x18, 0, 5, 0x67, 1}, 5, true, -EBADMSG, "overruns the packet"},
	    {KP_CODEC_H264, {0x18, 0, 0, 0, 1, 0x67}, 6, true, -EBADMSG, "zero-size"},
	    {KP_CODEC_H264, {0x18, 0, 1, 0xe7}, 4, true, -EBADMSG, "forbidden_zero_bit"},
	    {KP_CODEC_H264, {0x1c}, 1, true, -EBADMSG, "FU-A shorter"},
	    {KP_CODEC_H264, {0x1c, 0x45, 1}, 3, true, -EBADMSG, "never started"},
	    {KP_CODEC_H264, {0x1c, 0x05, 1}, 3, false, -EBADMSG, "never started"},
	    {KP_CODEC_H264, {0x1c, 0x85}, 2, false, -EBADMSG, "without data"},
	    {KP_CODEC_H264, {0x1c, 0x98, 1}, 3, false, -EBADMSG, "reserved or aggregation"},
	    {KP_CODEC_H264, {0x1c, 0x85, 1}, 3, true, -EBADMSG, "marker bit inside a fragmented"},
	    {KP_CODEC_H265, {0x26}, 1, true, -EBADMSG, "shorter than the H.265 NAL header"},
	    {KP_CODEC_H265, {0x26, 0}, 2, true, -EBADMSG, "TID 0"},
	    {KP_CODEC_H265, {0xa6, 1, 5}, 3, true, -EBADMSG, "forbidden_zero_bit"},
	    {KP_CODEC_H265, {0x64, 1, 5}, 3, true, -EPROTONOSUPPORT, "PACI"},
	    {KP_CODEC_H265, {0x7e, 1, 5}, 3, true, -EPROTONOSUPPORT, "reserved H.265"},
	    {KP_CODEC_H265, {0x60, 1}, 2, true, -EBADMSG, "empty aggregation"},
	    {KP_CODEC_H265, {0x60, 1, 0, 1, 0x40}, 5, true, -EBADMSG, "shorter than its header"},
	    {KP_CODEC_H265, {0x62, 1}, 2, true, -EBADMSG, "FU shorter"},
	    {KP_CODEC_H265, {0x62, 1, 0xb0, 1}, 4, false, -EBADMSG, "aggregation or fragmentation type"},
	    {KP_CODEC_H265, {0x62, 1, 0x53, 1}, 4, false, -EBADMSG, "never started"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		const struct bad_payload *c = &cases[i];
		struct rtp_depack d;
		rtp_depack_init(&d, c->codec, RTP_MAX_AU);
		uint8_t pkt[64];
		struct rtp_au out;
		const char *why = "";
		size_t n;
		if (strstr(c->reason, "marker bit inside")) {
			/* Needs a started FU: the marker then arrives on a continuation. */
			const uint8_t start[] = {0x1c, 0x85, 1};
			n = make_packet(pkt, 9, 0, false, start, sizeof start);
			CHECK_EQ(rtp_depack_push(&d, pkt, n, &out, &why), 0);
			const uint8_t mid[] = {0x1c, 0x05, 1};
			n = make_packet(pkt, 10, 0, true, mid, sizeof mid);
		} else {
			n = make_packet(pkt, 10, 0, c->marker, c->payload, c->len);
		}
		int r = rtp_depack_push(&d, pkt, n, &out, &why);
		if (r != c->err || !strstr(why, c->reason))
			fprintf(stderr, "case %zu: r=%d why=%s\n", i, r, why);
		CHECK_EQ(r, c->err);
		CHECK_STR_CONTAINS(why, c->reason);
		if (c->marker)
			CHECK_EQ(d.stats.dropped_malformed, 1);
		/* The next good access unit still comes through. */
		const uint8_t good264[] = {0x65, 1, 2}, good265[] = {0x26, 1, 2};
		n = make_packet(pkt, 11, 3000, true, c->codec == KP_CODEC_H264 ? good264 : good265, 3);
		CHECK_EQ(rtp_depack_push(&d, pkt, n, &out, &why), 1);
		rtp_depack_free(&d);
	}
}

static void test_fu_interrupted(void)
{
	struct rtp_depack d;
	rtp_depack_init(&d, KP_CODEC_H264, RTP_MAX_AU);
	uint8_t pkt[64];
	struct rtp_au out;
	const char *why = "";
	const uint8_t start[] = {0x7c, 0x85, 1, 2};
	size_t n = make_packet(pkt, 1, 0, false, start, sizeof start);
	CHECK_EQ(rtp_depack_push(&d, pkt, n, &out, &why), 0);
	const uint8_t single[] = {0x41, 1};
	n = make_packet(pkt, 2, 0, false, single, sizeof single);
	CHECK_EQ(rtp_depack_push(&d, pkt, n, &out, &why), -EBADMSG);
	CHECK_STR_CONTAINS(why, "interrupts a fragmented");
	n = make_packet(pkt, 3, 0, false, start, sizeof start);
	CHECK_EQ(rtp_depack_push(&d, pkt, n, &out, &why), 0); /* already broken: ignored */
	const uint8_t other[] = {0x7c, 0x41, 1};
	n = make_packet(pkt, 4, 0, true, other, sizeof other);
	CHECK_EQ(rtp_depack_push(&d, pkt, n, &out, &why), 0);
	CHECK_EQ(d.stats.dropped_malformed, 1);
	/* FU start inside a FU, and a type change. */
	n = make_packet(pkt, 5, 3000, false, start, sizeof start);
	CHECK_EQ(rtp_depack_push(&d, pkt, n, &out, &why), 0);
	n = make_packet(pkt, 6, 3000, false, start, sizeof start);
	CHECK_EQ(rtp_depack_push(&d, pkt, n, &out, &why), -EBADMSG);
	CHECK_STR_CONTAINS(why, "start inside a fragmented");
	n = make_packet(pkt, 7, 6000, false, start, sizeof start);
	CHECK_EQ(rtp_depack_push(&d, pkt, n, &out, &why), 0);
	CHECK_EQ(d.stats.dropped_malformed, 2);
	const uint8_t changed[] = {0x7c, 0x41, 1};
	n = make_packet(pkt, 8, 6000, true, changed, sizeof changed);
	CHECK_EQ(rtp_depack_push(&d, pkt, n, &out, &why), -EBADMSG);
	CHECK_STR_CONTAINS(why, "type changed");
	CHECK_EQ(d.stats.dropped_malformed, 3);
	rtp_depack_free(&d);
}

int main(void)
{
	RUN(test_header_roundtrip);
	RUN(test_header_extension_padding);
	RUN(test_header_malformed);
	RUN(test_roundtrips);
	RUN(test_packetizer_limits);
	RUN(test_loss_and_reorder);
	RUN(test_gap_between_aus);
	RUN(test_missing_marker);
	RUN(test_marked_params);
	RUN(test_marker_every_slice);
	RUN(test_never_marker);
	RUN(test_fu_start_end);
	RUN(test_oversize);
	RUN(test_malformed_payloads);
	RUN(test_fu_interrupted);
	capture_reset(&cap);
	return TEST_EXIT();
}
