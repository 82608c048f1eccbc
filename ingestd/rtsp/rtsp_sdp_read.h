/* The session description a camera answers DESCRIBE with (RFC 8866; RFC 2326 C.1),
 * pure code: the session's and each media's a=control, each media's first payload type
 * with its a=rtpmap (encoding, clock rate, channels; the static types 0 PCMU and 8 PCMA
 * without one, RFC 3551 6) and a=fmtp parameters, and a=framerate. Lines end in CRLF or
 * LF; unknown lines are skipped; every field is bounded. Also base64 (RFC 4648 4, for
 * sprop-parameter-sets, RFC 6184 8.1, and sprop-vps/sps/pps, RFC 7798 7.1) and hex
 * (mpeg4-generic config, RFC 3640 4.1) decoding. */
#ifndef KP_INGEST_RTSP_SDP_READ_H
#define KP_INGEST_RTSP_SDP_READ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SDP_MAX_MEDIA   8
#define SDP_MAX_CONTROL 512
#define SDP_MAX_FMTP    4096

struct sdp_media {
	char type[16]; /* "video", "audio", ... */
	uint8_t pt;    /* the first payload type of the m= line */
	char encoding[32];
	uint32_t clock;    /* 0 when unknown */
	unsigned channels; /* 1 when the rtpmap says none */
	char fmtp[SDP_MAX_FMTP];
	char control[SDP_MAX_CONTROL];
	unsigned fps; /* a=framerate, 0 when absent */
};

struct sdp_session {
	char control[SDP_MAX_CONTROL];
	unsigned n_media;
	struct sdp_media media[SDP_MAX_MEDIA];
};

/* 0, or -EBADMSG / -EMSGSIZE with *ret_reason set (no m= line, a malformed m= line, a
 * field longer than its bound, more than SDP_MAX_MEDIA media). */
int sdp_read(const char *text, size_t len, struct sdp_session *s, const char **ret_reason);

/* The value of a fmtp parameter (key=value;..., keys case-insensitive) into out. 0,
 * -ENOENT, or -ENOBUFS. */
int sdp_fmtp_get(const char *fmtp, const char *key, char *out, size_t cap);

/* Base64 (with or without padding) into out. Bytes written, or -EBADMSG / -ENOBUFS. */
long sdp_base64_decode(const char *in, size_t n, uint8_t *out, size_t cap);

/* Hex digits into out. Bytes written, or -EBADMSG / -ENOBUFS. */
long sdp_hex_decode(const char *in, uint8_t *out, size_t cap);

#endif
