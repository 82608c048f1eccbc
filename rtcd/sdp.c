/* The WebRTC offer parser and answer writer (see sdp.h). Every field is copied into
 * fixed-size members; a line that does not fit, a count past its ceiling or a malformed
 * value fails the offer with a sentence naming the line. */
#include "sdp.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "text.h"

static int bad(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int bad(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -EBADMSG;
}

/* Copies s into dst (cap bytes); false when it does not fit. */
static bool copy(char *dst, size_t cap, const char *s)
{
	size_t n = strlen(s);
	if (n >= cap)
		return false;
	memcpy(dst, s, n + 1);
	return true;
}

static bool prefix(const char *s, const char *p, const char **rest)
{
	size_t n = strlen(p);
	if (strncmp(s, p, n) != 0)
		return false;
	*rest = s + n;
	return true;
}

static bool parse_uint(const char *s, unsigned max, unsigned *ret, const char **end)
{
	unsigned long v = 0;
	const char *p = s;
	if (*p < '0' || *p > '9')
		return false;
	while (*p >= '0' && *p <= '9') {
		v = v * 10 + (unsigned long)(*p - '0');
		if (v > max)
			return false;
		p++;
	}
	*ret = (unsigned)v;
	*end = p;
	return true;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* "sha-256 AB:CD:..." */
static bool parse_fingerprint(const char *v, char *alg, size_t algcap, uint8_t *fp, size_t *fp_len)
{
	const char *sp = strchr(v, ' ');
	if (!sp || (size_t)(sp - v) >= algcap)
		return false;
	memcpy(alg, v, (size_t)(sp - v));
	alg[sp - v] = '\0';
	size_t want;
	if (strcasecmp(alg, "sha-1") == 0)
		want = 20;
	else if (strcasecmp(alg, "sha-256") == 0)
		want = 32;
	else if (strcasecmp(alg, "sha-384") == 0)
		want = 48;
	else if (strcasecmp(alg, "sha-512") == 0)
		want = 64;
	else
		return false;
	const char *p = sp + 1;
	size_t n = 0;
	while (*p) {
		int hi = hexval(p[0]), lo = hi < 0 ? -1 : hexval(p[1]);
		if (hi < 0 || lo < 0 || n >= SDP_FP_MAX)
			return false;
		fp[n++] = (uint8_t)(hi << 4 | lo);
		p += 2;
		if (*p == ':')
			p++;
		else if (*p)
			return false;
	}
	if (n != want)
		return false;
	*fp_len = n;
	return true;
}

static struct sdp_codec *codec_by_pt(struct sdp_media *m, unsigned pt)
{
	for (unsigned i = 0; i < m->ncodecs; i++)
		if (m->codecs[i].pt == pt)
			return &m->codecs[i];
	return NULL;
}

/* a=fmtp parameters of H.264: packetization-mode and profile-level-id. */
static void parse_h264_fmtp(struct sdp_codec *c, const char *params)
{
	const char *p = params;
	while (*p) {
		while (*p == ' ' || *p == ';')
			p++;
		const char *end = p;
		while (*end && *end != ';')
			end++;
		const char *v;
		char item[128];
		size_t n = (size_t)(end - p);
		if (n < sizeof item) {
			memcpy(item, p, n);
			item[n] = '\0';
			if (prefix(item, "packetization-mode=", &v))
				c->packetization_mode_1 = strcmp(v, "1") == 0;
			else if (prefix(item, "profile-level-id=", &v) && strlen(v) == 6) {
				uint32_t id = 0;
				bool ok = true;
				for (int i = 0; i < 6; i++) {
					int h = hexval(v[i]);
					if (h < 0)
						ok = false;
					id = id << 4 | (uint32_t)(h < 0 ? 0 : h);
				}
				if (ok)
					c->profile_level_id = id;
			}
		}
		p = end;
	}
}

static int media_attr(struct sdp_offer *o, struct sdp_media *m, unsigned mi, const char *a, char *err, size_t errlen)
{
	const char *v;
	unsigned pt;
	const char *end;
	if (prefix(a, "ice-ufrag:", &v)) {
		if (!copy(m ? m->ice_ufrag : o->ice_ufrag, sizeof o->ice_ufrag, v))
			return bad(err, errlen, "a=ice-ufrag longer than 256 characters");
	} else if (prefix(a, "ice-pwd:", &v)) {
		if (!copy(m ? m->ice_pwd : o->ice_pwd, sizeof o->ice_pwd, v))
			return bad(err, errlen, "a=ice-pwd longer than 256 characters");
	} else if (prefix(a, "fingerprint:", &v)) {
		bool ok = m ? parse_fingerprint(v, m->fp_alg, sizeof m->fp_alg, m->fp, &m->fp_len)
			    : parse_fingerprint(v, o->fp_alg, sizeof o->fp_alg, o->fp, &o->fp_len);
		if (!ok)
			return bad(err, errlen, "malformed a=fingerprint (expected sha-256 and hex pairs)");
	} else if (prefix(a, "setup:", &v)) {
		if (!copy(m ? m->setup : o->setup, sizeof o->setup, v))
			return bad(err, errlen, "malformed a=setup");
	} else if (!m) {
		if (prefix(a, "group:BUNDLE ", &v) && !copy(o->bundle, sizeof o->bundle, v))
			return bad(err, errlen, "a=group:BUNDLE longer than 255 characters");
		return 0;
	} else if (prefix(a, "mid:", &v)) {
		if (!copy(m->mid, sizeof m->mid, v) || !*v)
			return bad(err, errlen, "a=mid empty or longer than 32 characters");
	} else if (strcmp(a, "rtcp-mux") == 0) {
		m->rtcp_mux = true;
	} else if (strcmp(a, "rtcp-rsize") == 0) {
		m->rtcp_rsize = true;
	} else if (strcmp(a, "sendrecv") == 0 || strcmp(a, "recvonly") == 0) {
		m->recv = true;
	} else if (strcmp(a, "sendonly") == 0 || strcmp(a, "inactive") == 0) {
		m->recv = false;
	} else if (prefix(a, "rtpmap:", &v)) {
		if (!parse_uint(v, 127, &pt, &end) || *end != ' ')
			return bad(err, errlen, "malformed a=rtpmap (payload type)");
		end++;
		enum kp_codec kind = KP_CODEC_NONE;
		enum sdp_audio_codec audio = SDP_AUDIO_NONE;
		if (strncasecmp(end, "H264/90000", 10) == 0)
			kind = KP_CODEC_H264;
		else if (strncasecmp(end, "H265/90000", 10) == 0)
			kind = KP_CODEC_H265;
		else if (strcasecmp(end, "opus/48000/2") == 0) /* RFC 7587 7: always /2 */
			audio = SDP_AUDIO_OPUS;
		else if (strcasecmp(end, "PCMU/8000") == 0 || strcasecmp(end, "PCMU/8000/1") == 0)
			audio = SDP_AUDIO_PCMU;
		else if (strcasecmp(end, "PCMA/8000") == 0 || strcasecmp(end, "PCMA/8000/1") == 0)
			audio = SDP_AUDIO_PCMA;
		else
			return 0;
		if (codec_by_pt(m, pt))
			return bad(err, errlen, "payload type %u mapped twice", pt);
		if (m->ncodecs >= SDP_MAX_CODECS)
			return 0;
		struct sdp_codec *c = &m->codecs[m->ncodecs++];
		memset(c, 0, sizeof *c);
		c->pt = (uint8_t)pt;
		c->kind = kind;
		c->audio = audio;
		c->packetization_mode_1 = kind == KP_CODEC_H265;
	} else if (prefix(a, "rtcp-fb:", &v)) {
		unsigned *fb = &m->fb_any;
		if (*v == '*') {
			end = v + 1;
		} else {
			if (!parse_uint(v, 127, &pt, &end))
				return bad(err, errlen, "malformed a=rtcp-fb (payload type)");
			struct sdp_codec *c = codec_by_pt(m, pt);
			if (!c)
				return 0;
			fb = &c->fb;
		}
		if (*end != ' ')
			return bad(err, errlen, "malformed a=rtcp-fb");
		end++;
		if (strcmp(end, "nack") == 0)
			*fb |= SDP_FB_NACK;
		else if (strcmp(end, "nack pli") == 0)
			*fb |= SDP_FB_PLI;
		else if (strcmp(end, "ccm fir") == 0)
			*fb |= SDP_FB_FIR;
	} else if (prefix(a, "fmtp:", &v)) {
		if (!parse_uint(v, 127, &pt, &end) || *end != ' ')
			return bad(err, errlen, "malformed a=fmtp (payload type)");
		struct sdp_codec *c = codec_by_pt(m, pt);
		if (!c)
			return 0;
		if (!copy(c->fmtp, sizeof c->fmtp, end + 1))
			return bad(err, errlen, "a=fmtp of payload type %u longer than 255 characters", pt);
		c->have_fmtp = true;
		if (c->kind == KP_CODEC_H264)
			parse_h264_fmtp(c, c->fmtp);
	} else if (prefix(a, "candidate:", &v)) {
		if (o->ncandidates >= SDP_MAX_CANDIDATES)
			return 0;
		if (!copy(o->candidates[o->ncandidates], sizeof o->candidates[0], a))
			return bad(err, errlen, "a=candidate longer than 255 characters");
		o->candidate_media[o->ncandidates++] = (uint8_t)mi;
	}
	return 0;
}

static int media_line(struct sdp_offer *o, const char *v, char *err, size_t errlen)
{
	if (o->nmedia >= SDP_MAX_MEDIA)
		return bad(err, errlen, "more than %d m-lines", SDP_MAX_MEDIA);
	struct sdp_media *m = &o->media[o->nmedia];
	memset(m, 0, sizeof *m);
	m->recv = true;
	const char *sp = strchr(v, ' ');
	if (!sp || sp == v || (size_t)(sp - v) >= sizeof m->type)
		return bad(err, errlen, "malformed m-line (media type)");
	memcpy(m->type, v, (size_t)(sp - v));
	m->type[sp - v] = '\0';
	const char *end;
	if (!parse_uint(sp + 1, 65535, &m->port, &end) || (*end != ' ' && *end != '/'))
		return bad(err, errlen, "malformed m-line (port)");
	if (*end == '/') {
		unsigned count;
		if (!parse_uint(end + 1, 65535, &count, &end) || *end != ' ')
			return bad(err, errlen, "malformed m-line (port count)");
	}
	const char *proto = end + 1;
	sp = strchr(proto, ' ');
	if (!sp || sp == proto || (size_t)(sp - proto) >= sizeof m->proto)
		return bad(err, errlen, "malformed m-line (protocol)");
	memcpy(m->proto, proto, (size_t)(sp - proto));
	m->proto[sp - proto] = '\0';
	if (!copy(m->fmts, sizeof m->fmts, sp + 1) || !sp[1])
		return bad(err, errlen, "m-line format list empty or longer than 255 characters");
	o->nmedia++;
	return 0;
}

int sdp_parse_offer(const char *sdp, size_t len, struct sdp_offer *o, char *err, size_t errlen)
{
	memset(o, 0, sizeof *o);
	if (len == 0)
		return bad(err, errlen, "empty SDP");
	if (len > SDP_MAX_LEN)
		return bad(err, errlen, "SDP longer than %d bytes", SDP_MAX_LEN);
	char line[SDP_MAX_LINE + 1];
	size_t pos = 0;
	unsigned lineno = 0;
	while (pos < len) {
		size_t start = pos;
		while (pos < len && sdp[pos] != '\n')
			pos++;
		size_t n = pos - start;
		if (pos < len)
			pos++;
		if (n > 0 && sdp[start + n - 1] == '\r')
			n--;
		lineno++;
		if (n == 0)
			continue;
		if (n > SDP_MAX_LINE)
			return bad(err, errlen, "line %u longer than %d bytes", lineno, SDP_MAX_LINE);
		memcpy(line, sdp + start, n);
		line[n] = '\0';
		if (memchr(line, '\0', n))
			return bad(err, errlen, "line %u contains a NUL byte", lineno);
		if (n < 2 || line[1] != '=' || line[0] < 'a' || line[0] > 'z')
			return bad(err, errlen, "line %u is not \"x=value\"", lineno);
		if (lineno == 1 && strcmp(line, "v=0") != 0)
			return bad(err, errlen, "SDP does not start with v=0");
		const char *v = line + 2;
		struct sdp_media *m = o->nmedia ? &o->media[o->nmedia - 1] : NULL;
		int r = 0;
		if (line[0] == 'm')
			r = media_line(o, v, err, errlen);
		else if (line[0] == 'a')
			r = media_attr(o, m, o->nmedia ? o->nmedia - 1 : 0, v, err, errlen);
		if (r < 0) {
			size_t el = strlen(err);
			if (el + 16 < errlen)
				snprintf(err + el, errlen - el, " (line %u)", lineno);
			return r;
		}
	}
	if (lineno == 0 || o->nmedia == 0)
		return bad(err, errlen, "SDP has no m-line");
	for (unsigned i = 0; i < o->nmedia; i++) {
		struct sdp_media *m = &o->media[i];
		if (!m->ice_ufrag[0])
			memcpy(m->ice_ufrag, o->ice_ufrag, sizeof m->ice_ufrag);
		if (!m->ice_pwd[0])
			memcpy(m->ice_pwd, o->ice_pwd, sizeof m->ice_pwd);
		if (!m->fp_len) {
			memcpy(m->fp_alg, o->fp_alg, sizeof m->fp_alg);
			memcpy(m->fp, o->fp, sizeof m->fp);
			m->fp_len = o->fp_len;
		}
		if (!m->setup[0])
			memcpy(m->setup, o->setup, sizeof m->setup);
	}
	return 0;
}

bool sdp_offers_h265(const struct sdp_media *m)
{
	for (unsigned i = 0; i < m->ncodecs; i++)
		if (m->codecs[i].kind == KP_CODEC_H265)
			return true;
	return false;
}

static int h264_rank(const struct sdp_codec *c)
{
	if (c->kind != KP_CODEC_H264 || !c->packetization_mode_1)
		return 0;
	if (c->profile_level_id == 0x42e01f)
		return 4;
	unsigned profile_idc = c->profile_level_id >> 16, iop = (c->profile_level_id >> 8) & 0xff;
	if (profile_idc == 0x42 && (iop & 0x40))
		return 3; /* constrained baseline */
	if (profile_idc == 0x42)
		return 2;
	return 1;
}

int sdp_choose(const struct sdp_offer *o, bool allow_h265, const struct sdp_codec **ret_codec, char *err, size_t errlen)
{
	for (unsigned i = 0; i < o->nmedia; i++) {
		const struct sdp_media *m = &o->media[i];
		if (strcmp(m->type, "video") != 0 || m->port == 0 || !m->recv)
			continue;
		const struct sdp_codec *best = NULL;
		int best_rank = 0;
		for (unsigned k = 0; k < m->ncodecs; k++) {
			const struct sdp_codec *c = &m->codecs[k];
			int rank = c->kind == KP_CODEC_H265 ? (allow_h265 ? 10 : 0) : h264_rank(c);
			if (rank > best_rank) {
				best = c;
				best_rank = rank;
			}
		}
		if (!best) {
			snprintf(err, errlen, "the browser offered no H.264 with packetization-mode=1%s for video",
				 allow_h265 ? " and no H.265" : "");
			return -ENOTSUP;
		}
		*ret_codec = best;
		return (int)i;
	}
	snprintf(err, errlen, "the offer has no video m-line that receives");
	return -ENOENT;
}

static bool in_bundle(const struct sdp_offer *o, const char *mid);

int sdp_choose_audio(const struct sdp_offer *o, const struct sdp_codec **ret_codec)
{
	for (unsigned i = 0; i < o->nmedia; i++) {
		const struct sdp_media *m = &o->media[i];
		if (strcmp(m->type, "audio") != 0 || m->port == 0)
			continue;
		*ret_codec = NULL;
		for (unsigned k = 0; k < m->ncodecs; k++)
			if (m->codecs[k].audio == SDP_AUDIO_OPUS) {
				*ret_codec = &m->codecs[k];
				break;
			}
		return (int)i;
	}
	return -ENOENT;
}

unsigned sdp_codec_fb(const struct sdp_media *m, const struct sdp_codec *c)
{
	return m->fb_any | c->fb;
}

bool sdp_in_bundle(const struct sdp_offer *o, const struct sdp_media *m)
{
	return !m->mid[0] || in_bundle(o, m->mid);
}

/* Whether mid is one of the offer's BUNDLE group (RFC 9143); any mid when it has none. */
static bool in_bundle(const struct sdp_offer *o, const char *mid)
{
	if (!o->bundle[0])
		return true;
	size_t n = strlen(mid);
	for (const char *p = o->bundle; *p;) {
		const char *e = strchr(p, ' ');
		size_t l = e ? (size_t)(e - p) : strlen(p);
		if (l == n && strncmp(p, mid, n) == 0)
			return true;
		if (!e)
			break;
		p = e + 1;
	}
	return false;
}

/* The transport lines every accepted m-line repeats (they share one, BUNDLE). */
static void transport(struct rtc_text *t, const struct sdp_answer *a, const struct sdp_media *m)
{
	rtc_text_add(t, "c=IN IP4 0.0.0.0\r\na=rtcp:9 IN IP4 0.0.0.0\r\n");
	rtc_text_add(t, "a=ice-ufrag:%s\r\na=ice-pwd:%s\r\na=fingerprint:sha-256 %s\r\na=setup:passive\r\n",
		     a->ice_ufrag, a->ice_pwd, a->fingerprint);
	if (m->mid[0])
		rtc_text_add(t, "a=mid:%s\r\n", m->mid);
}

static void candidates(struct rtc_text *t, const struct sdp_answer *a)
{
	for (unsigned k = 0; k < a->ncandidates; k++)
		rtc_text_add(t, "a=%s\r\n", a->candidates[k]);
	rtc_text_add(t, "a=end-of-candidates\r\n");
}

static void video(struct rtc_text *t, const struct sdp_answer *a, const struct sdp_media *m)
{
	const struct sdp_codec *c = a->codec;
	rtc_text_add(t, "m=video 9 %s %u\r\n", m->proto, c->pt);
	transport(t, a, m);
	rtc_text_add(t, "a=sendonly\r\na=rtcp-mux\r\n");
	if (m->rtcp_rsize)
		rtc_text_add(t, "a=rtcp-rsize\r\n");
	rtc_text_add(t, "a=rtpmap:%u %s/90000\r\n", c->pt, c->kind == KP_CODEC_H265 ? "H265" : "H264");
	/* Only what the offer names (RFC 4585 4.2): rtcd answers NACK, PLI and FIR. */
	unsigned fb = sdp_codec_fb(m, c);
	if (fb & SDP_FB_NACK)
		rtc_text_add(t, "a=rtcp-fb:%u nack\r\n", c->pt);
	if (fb & SDP_FB_PLI)
		rtc_text_add(t, "a=rtcp-fb:%u nack pli\r\n", c->pt);
	if (fb & SDP_FB_FIR)
		rtc_text_add(t, "a=rtcp-fb:%u ccm fir\r\n", c->pt);
	if (c->kind == KP_CODEC_H264 && a->profile_level_id)
		/* RFC 6184 8.2.2: a sendonly answerer names the profile and level it sends;
		 * level-asymmetry-allowed lets it exceed the level the offerer receives. */
		rtc_text_add(t, "a=fmtp:%u level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=%06x\r\n",
			     c->pt, (unsigned)a->profile_level_id);
	else if (c->have_fmtp)
		rtc_text_add(t, "a=fmtp:%u %s\r\n", c->pt, c->fmtp);
	rtc_text_add(t, "a=msid:keeppeek video\r\na=ssrc:%u cname:%s\r\na=ssrc:%u msid:keeppeek video\r\n",
		     (unsigned)a->ssrc, a->cname, (unsigned)a->ssrc);
}

/* Opus (RFC 7587) sendonly, or inactive with a codec still listed: a strict peer refuses
 * an answer whose m-line has no format, and port 0 rejects the line (RFC 8843 7.3.3
 * would then take it out of the BUNDLE group, which some clients refuse). */
static void audio(struct rtc_text *t, const struct sdp_answer *a, const struct sdp_media *m)
{
	const struct sdp_codec *c = a->audio_codec;
	char first[8] = "0";
	if (!c) {
		size_t l = strcspn(m->fmts, " ");
		if (l > 0 && l < sizeof first) {
			memcpy(first, m->fmts, l);
			first[l] = '\0';
		}
	}
	if (c)
		rtc_text_add(t, "m=audio 9 %s %u\r\n", m->proto, c->pt);
	else
		rtc_text_add(t, "m=audio 9 %s %s\r\n", m->proto, first);
	transport(t, a, m);
	rtc_text_add(t, "a=%s\r\na=rtcp-mux\r\n", a->audio_send && c ? "sendonly" : "inactive");
	if (m->rtcp_rsize)
		rtc_text_add(t, "a=rtcp-rsize\r\n");
	if (!c)
		return;
	rtc_text_add(t, "a=rtpmap:%u opus/48000/2\r\n", c->pt);
	if (c->have_fmtp)
		rtc_text_add(t, "a=fmtp:%u %s\r\n", c->pt, c->fmtp);
	if (a->audio_send)
		rtc_text_add(t, "a=msid:keeppeek audio\r\na=ssrc:%u cname:%s\r\na=ssrc:%u msid:keeppeek audio\r\n",
			     (unsigned)a->audio_ssrc, a->cname, (unsigned)a->audio_ssrc);
}

int sdp_build_answer(const struct sdp_answer *a, char *out, size_t cap)
{
	const struct sdp_offer *o = a->offer;
	const struct sdp_media *vm = &o->media[a->media];
	const struct sdp_media *am = a->audio_media >= 0 ? &o->media[a->audio_media] : NULL;
	bool bundle_audio = am && sdp_in_bundle(o, am);
	struct rtc_text t;
	rtc_text_init(&t, out, cap);
	rtc_text_add(&t, "v=0\r\no=- %llu 2 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\n",
		     (unsigned long long)(a->session_id & 0x7fffffffffffffffull));
	if (vm->mid[0]) {
		rtc_text_add(&t, "a=group:BUNDLE");
		for (unsigned i = 0; i < o->nmedia; i++)
			if (i == a->media || (bundle_audio && (int)i == a->audio_media))
				rtc_text_add(&t, " %s", o->media[i].mid);
		rtc_text_add(&t, "\r\n");
	}
	rtc_text_add(&t, "a=msid-semantic: WMS keeppeek\r\n");
	bool first = true;
	for (unsigned i = 0; i < o->nmedia; i++) {
		const struct sdp_media *m = &o->media[i];
		if (i == a->media) {
			video(&t, a, m);
		} else if (bundle_audio && (int)i == a->audio_media) {
			audio(&t, a, m);
		} else {
			rtc_text_add(&t, "m=%s 0 %s %s\r\nc=IN IP4 0.0.0.0\r\n", m->type, m->proto, m->fmts);
			if (m->mid[0])
				rtc_text_add(&t, "a=mid:%s\r\n", m->mid);
			rtc_text_add(&t, "a=inactive\r\n");
			continue;
		}
		if (first)
			candidates(&t, a);
		first = false;
	}
	if (!rtc_text_ok(&t))
		return -ENOBUFS;
	return (int)t.len;
}
