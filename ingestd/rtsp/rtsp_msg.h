/* RTSP client messages, pure code: a server's reply (RFC 2326 7, RFC 7826 8: status line,
 * headers, a Content-Length body) parsed in place and bounded, the headers a client reads
 * (Transport 12.39, Session 12.37 with its timeout, Public 12.28), the URL of a camera
 * (rtsp:// or rtsps://, with user:password@) and a control URL resolved against the
 * base (RFC 2326 C.1.1, as libavformat's rtsp.c does: an absolute URL as it is, "*" the
 * base, an absolute path in place of the base's path (RFC 3986 5.2.2), anything else
 * appended to the base with one '/'). */
#ifndef KP_INGEST_RTSP_MSG_H
#define KP_INGEST_RTSP_MSG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RTSP_MAX_HEAD      16384 /* bytes of a reply's status line and headers */
#define RTSP_MAX_HEADERS   48
#define RTSP_MAX_BODY      65536 /* a reply's body (the SDP) */
#define RTSP_MAX_URL       1024
#define RTSP_MAX_SESSION   128  /* a Session id's bytes */
#define RTSP_TIMEOUT_MIN_S 5    /* a session timeout below is taken as this */
#define RTSP_TIMEOUT_MAX_S 3600 /* and one above as this */
#define RTSP_TIMEOUT_DEF_S 60   /* RFC 2326 12.37's default */

struct rtsp_span {
	const char *p;
	size_t n;
};

struct rtsp_reply {
	unsigned status; /* 100..599 */
	struct rtsp_span reason;
	long cseq; /* -1 when absent */
	unsigned n_headers;
	struct rtsp_span name[RTSP_MAX_HEADERS], value[RTSP_MAX_HEADERS];
	const char *body;
	size_t body_len;
};

/* One reply at the start of buf (leading CR/LF skipped). Returns 0 with *used set (the
 * reply's bytes, body included; the spans point into buf), -EAGAIN when buf ends inside
 * it, -EBADMSG for one that is not an RTSP reply (*ret_reason says what), -EMSGSIZE past
 * RTSP_MAX_HEAD, RTSP_MAX_HEADERS or RTSP_MAX_BODY. */
int rtsp_reply_parse(const uint8_t *buf, size_t len, struct rtsp_reply *r, size_t *used, const char **ret_reason);

/* The k-th header (0: the first) of that name, case-insensitive, or NULL. */
const struct rtsp_span *rtsp_reply_header(const struct rtsp_reply *r, const char *name, unsigned k);

bool rtsp_span_eq(struct rtsp_span s, const char *text);       /* case-insensitive */
bool rtsp_span_prefix(struct rtsp_span s, const char *text);   /* case-insensitive */
int rtsp_span_copy(struct rtsp_span s, char *out, size_t cap); /* 0 or -ENOBUFS */

/* A server request on the connection (a line not starting with "RTSP/"): its length
 * (headers and body), to skip it; same results as rtsp_reply_parse. */
int rtsp_request_skip(const uint8_t *buf, size_t len, size_t *used, const char **ret_reason);

/* The same, with the answer into answer (cap bytes, at least 96): 200 OK to OPTIONS,
 * GET_PARAMETER and SET_PARAMETER (some cameras probe their client with them and close
 * an unanswered session), 501 Not Implemented to the rest, the CSeq echoed; "" for a
 * request without a CSeq (not answerable). */
int rtsp_request_answer(const uint8_t *buf, size_t len, size_t *used, char *answer, size_t cap,
			const char **ret_reason);

/* Transport of a SETUP reply. */
struct rtsp_transport {
	bool tcp;                /* RTP/AVP/TCP */
	bool have_interleaved;   /* interleaved=a-b */
	unsigned interleaved[2]; /* 0..255 */
	bool have_server_port;   /* server_port=a-b, both nonzero (0-1: none, mediamtx#407) */
	unsigned server_port[2]; /* 1..65535 */
	bool have_ssrc;          /* ssrc=, trimmed; false when it is no 1..8 hex digits */
	uint32_t ssrc;
};
int rtsp_transport_parse(struct rtsp_span s, struct rtsp_transport *t, const char **ret_reason);

/* Session: id (at most RTSP_MAX_SESSION - 1 bytes) and ;timeout= seconds (clamped to
 * [RTSP_TIMEOUT_MIN_S, RTSP_TIMEOUT_MAX_S], RTSP_TIMEOUT_DEF_S when absent). */
int rtsp_session_parse(struct rtsp_span s, char *id, size_t cap, unsigned *timeout_s, const char **ret_reason);

/* A camera URL. uri is the URL without user:password@ (what requests name). */
struct rtsp_url {
	bool tls;
	char host[256]; /* without [] for IPv6 */
	uint16_t port;
	char user[128], pass[128]; /* percent-decoded; "" when absent */
	bool have_user;
	char uri[RTSP_MAX_URL];
};
int rtsp_url_parse(const char *url, struct rtsp_url *u, const char **ret_reason);

/* A DESCRIBE's Content-Base (or Content-Location) made an rtsp(s):// URL into out, from
 * the request's URL req (an rtsp_url's uri): one without a scheme ("192.168.1.10:554/
 * stream0/", Anjvision: retina 6972ac4, its testdata anjvision_describe.txt) gets req's
 * scheme; a bare path "/..." gets req's scheme and authority. Returns 0 when base was
 * usable as it is, 1 when it was fixed up, -EINVAL when it still is no rtsp(s):// URL
 * with a host (out is then req), -ENOBUFS when out is too small. */
int rtsp_base_fixup(const char *req, const char *base, char *out, size_t cap);

/* control resolved against base into out. 0 or -ENOBUFS. */
int rtsp_url_resolve(const char *base, const char *control, char *out, size_t cap);

#endif
