/* RTSP/1.0 request parsing for the test camera, pure code over byte buffers: request
 * line, headers (line ≤ 8 KiB, ≤ 100 headers, ≤ 64 KiB in all), CSeq, Content-Length,
 * the fields of a Digest Authorization header and a Transport header. */
#ifndef KP_CAM_RTSP_REQUEST_H
#define KP_CAM_RTSP_REQUEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kp_limits.h"

#define RTSP_MAX_LINE         KP_HTTP_MAX_LINE
#define RTSP_MAX_HEADERS      KP_HTTP_MAX_HEADERS
#define RTSP_MAX_HEADER_BYTES KP_HTTP_MAX_HEADER_BYTES
#define RTSP_MAX_BODY         (8 * KP_KIB)
#define RTSP_MAX_METHOD       16

/* A string inside the parsed buffer (not NUL-terminated). */
struct rtsp_str {
	const char *p;
	size_t n;
};

struct rtsp_header {
	struct rtsp_str name, value;
};

struct rtsp_request {
	char method[RTSP_MAX_METHOD + 1];
	struct rtsp_str uri;
	uint32_t cseq;
	size_t n_headers;
	struct rtsp_header headers[RTSP_MAX_HEADERS];
	size_t body_len; /* the body follows the header block; consumed with it */
};

/* Parses one request at the start of buf. Returns 0 with *ret_consumed (headers and
 * body) when complete, -EAGAIN when more bytes are needed, or -EMSGSIZE (line, header
 * block or body too long), -E2BIG (too many headers), -EBADMSG (malformed request line,
 * header, missing or bad CSeq, bad Content-Length), -EPROTONOSUPPORT (not RTSP/1.0)
 * with *ret_reason set. */
int rtsp_request_parse(const uint8_t *buf, size_t len, struct rtsp_request *ret, size_t *ret_consumed,
		       const char **ret_reason);

/* The value of the first header named name (case-insensitive), or NULL. */
const struct rtsp_str *rtsp_request_header(const struct rtsp_request *r, const char *name);

/* True when s equals the NUL-terminated literal lit. */
bool rtsp_str_eq(struct rtsp_str s, const char *lit);

struct rtsp_digest {
	struct rtsp_str username, realm, nonce, uri, response, qop, nc, cnonce, algorithm;
};

/* Parses `Digest username="..", realm="..", ...`. Requires username, realm, nonce, uri
 * and a 32-hex-digit response; qop=auth needs nc and cnonce; algorithm must be MD5 when
 * present. Returns 0 or -EBADMSG / -EPROTONOSUPPORT with *ret_reason set. */
int rtsp_digest_parse(struct rtsp_str value, struct rtsp_digest *ret, const char **ret_reason);

/* What a Transport header offers (RFC 2326 12.39): the first unicast RTP/AVP/TCP
 * specification and the first unicast RTP/AVP (or RTP/AVP/UDP) one with client_port,
 * and which of the two the client listed first (its preference). */
struct rtsp_transport {
	bool tcp;               /* RTP/AVP/TCP */
	uint8_t interleaved[2]; /* RTP and RTCP channels */
	bool udp;               /* RTP/AVP[/UDP];unicast;client_port=a-b */
	uint16_t client_port[2];
	bool udp_first;
};

/* Parses a Transport header. TCP without interleaved= means channels 0-1; client_port=a
 * means a-(a+1). Multicast specifications and those without client_port over UDP are
 * skipped. Returns 0 (possibly with neither tcp nor udp set), or -EBADMSG with
 * *ret_reason set. */
int rtsp_transport_parse(struct rtsp_str value, struct rtsp_transport *ret, const char **ret_reason);

#endif
