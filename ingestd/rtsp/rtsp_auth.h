/* RTSP authentication, pure code: the challenges of a 401's WWW-Authenticate headers
 * (RFC 2617 1.2 and 3.2.1; Digest preferred over Basic when a camera offers both, as
 * libavformat's httpauth.c does) and the Authorization header of each request after it
 * (Basic, RFC 2617 2; Digest with MD5, RFC 2617 3.2.2, with qop=auth when the challenge
 * offers it: cnonce and a counting nc; without qop, RFC 2069's form that most cameras
 * ask for). A 401 is answered once with credentials; a second 401 is a refused login. */
#ifndef KP_INGEST_RTSP_AUTH_H
#define KP_INGEST_RTSP_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rtsp_msg.h"

#define RTSP_AUTH_MAX_FIELD  256 /* realm, nonce, opaque: longer ones are refused */
#define RTSP_AUTH_MAX_HEADER 1024

enum rtsp_auth_kind { RTSP_AUTH_NONE, RTSP_AUTH_BASIC, RTSP_AUTH_DIGEST };

struct rtsp_auth {
	enum rtsp_auth_kind kind;
	char realm[RTSP_AUTH_MAX_FIELD], nonce[RTSP_AUTH_MAX_FIELD], opaque[RTSP_AUTH_MAX_FIELD];
	bool have_opaque, qop_auth;
	uint32_t nc;     /* requests sent with this nonce */
	char cnonce[17]; /* with qop: 16 hex digits, set by the caller (rtsp_auth_build's tests fix it) */
};

/* The challenge of one WWW-Authenticate value into a (a Digest one replaces a Basic one,
 * not the other way round). 0; -ENOTSUP for a scheme or algorithm we cannot answer
 * (a not yet set); -EBADMSG / -EMSGSIZE for a malformed or oversized one. */
int rtsp_auth_challenge(struct rtsp_auth *a, struct rtsp_span value, const char **ret_reason);

/* "Authorization: ...\r\n" for method on uri into out. 0, or -ENOBUFS. */
int rtsp_auth_header(struct rtsp_auth *a, const char *user, const char *pass, const char *method, const char *uri,
		     char *out, size_t cap);

/* MD5 of the bytes as 32 lower-case hex digits (OpenSSL's EVP). */
void rtsp_md5_hex(const void *p, size_t n, char out[33]);

#endif
