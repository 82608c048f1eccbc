/* POST /api/v1/events as multipart/form-data (RFC 7578): a part named "event" holding
 * the JSON of SPEC 7 (without "jpeg_base64") and an optional part named "jpeg" holding
 * the raw JPEG, which stays in the body (no copy). Other parts are refused, at most one
 * of each name. */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "kp_limits.h"
#include "publish.h"

#define BOUNDARY_MAX    70 /* RFC 2046 */
#define PART_HEADER_MAX (8 * KP_KIB)
#define EVENT_PART_MAX  (64 * KP_KIB)

static int get_boundary(const char *ct, char *out, size_t cap)
{
	const char *b = ct ? strcasestr(ct, "boundary=") : NULL;
	if (!b)
		return -1;
	b += 9;
	size_t n;
	if (*b == '"') {
		b++;
		const char *q = strchr(b, '"');
		if (!q)
			return -1;
		n = (size_t)(q - b);
	} else {
		n = strcspn(b, "; \t");
	}
	if (n == 0 || n > BOUNDARY_MAX || n + 1 > cap)
		return -1;
	memcpy(out, b, n);
	out[n] = 0;
	return 0;
}

/* The value of name="..." in a Content-Disposition header block, or -1. */
static int part_name(const char *h, size_t hlen, char *out, size_t cap)
{
	const char *end = h + hlen;
	for (const char *p = h; p < end;) {
		const char *eol = memmem(p, (size_t)(end - p), "\r\n", 2);
		if (!eol)
			eol = end;
		size_t len = (size_t)(eol - p);
		if (len > 20 && strncasecmp(p, "content-disposition:", 20) == 0) {
			const char *n = memmem(p, len, "name=\"", 6);
			while (n && n > p && n[-1] != ' ' && n[-1] != ';' && n[-1] != '\t')
				n = memmem(n + 1, len - (size_t)(n + 1 - p), "name=\"", 6);
			if (!n)
				return -1;
			n += 6;
			const char *q = memchr(n, '"', (size_t)(eol - n));
			if (!q || (size_t)(q - n) + 1 > cap)
				return -1;
			memcpy(out, n, (size_t)(q - n));
			out[q - n] = 0;
			return 0;
		}
		p = eol + 2;
	}
	return -1;
}

int webd_publish_multipart(const uint8_t *body, size_t len, const char *content_type, struct webd_publish *p,
			   struct publish_err *e)
{
	char boundary[BOUNDARY_MAX + 1], delim[BOUNDARY_MAX + 5];
	if (get_boundary(content_type, boundary, sizeof(boundary)) < 0)
		return webd_publish_fail(e, 400, "bad_multipart", "Content-Type has no usable boundary parameter");
	size_t dlen = (size_t)snprintf(delim, sizeof(delim), "\r\n--%s", boundary);
	const uint8_t *end = body + len;
	/* The first delimiter may open the body without its CRLF. */
	const uint8_t *at;
	if (len >= dlen - 2 && memcmp(body, delim + 2, dlen - 2) == 0)
		at = body + dlen - 2;
	else if ((at = memmem(body, len, delim, dlen)) != NULL)
		at += dlen;
	else
		return webd_publish_fail(e, 400, "bad_multipart", "the body has no part delimiter");
	const uint8_t *event = NULL, *jpeg = NULL;
	size_t event_len = 0, jpeg_len = 0;
	for (;;) {
		if (end - at >= 2 && at[0] == '-' && at[1] == '-')
			break; /* the close delimiter */
		while (at < end && (*at == ' ' || *at == '\t'))
			at++;
		if (end - at < 2 || at[0] != '\r' || at[1] != '\n')
			return webd_publish_fail(e, 400, "bad_multipart", "a delimiter line does not end with CRLF");
		at += 2;
		size_t avail = (size_t)(end - at);
		const uint8_t *hend = memmem(at, avail < PART_HEADER_MAX ? avail : PART_HEADER_MAX, "\r\n\r\n", 4);
		if (!hend)
			return webd_publish_fail(e, 400, "bad_multipart", "a part's headers do not end within %u bytes",
						 PART_HEADER_MAX);
		char name[16];
		if (part_name((const char *)at, (size_t)(hend - at), name, sizeof(name)) < 0)
			return webd_publish_fail(e, 400, "bad_multipart", "a part has no Content-Disposition name");
		const uint8_t *content = hend + 4;
		const uint8_t *next = memmem(content, (size_t)(end - content), delim, dlen);
		if (!next)
			return webd_publish_fail(e, 400, "bad_multipart", "part \"%s\" is not closed by a delimiter",
						 name);
		size_t clen = (size_t)(next - content);
		if (strcmp(name, "event") == 0 && !event) {
			event = content;
			event_len = clen;
		} else if (strcmp(name, "jpeg") == 0 && !jpeg) {
			jpeg = content;
			jpeg_len = clen;
		} else {
			return webd_publish_fail(e, 400, "bad_multipart",
						 "unexpected part \"%s\" (one \"event\" and one \"jpeg\")", name);
		}
		at = next + dlen;
	}
	if (!event)
		return webd_publish_fail(e, 400, "bad_multipart", "no \"event\" part");
	if (event_len > EVENT_PART_MAX)
		return webd_publish_fail(e, 400, "bad_multipart", "the \"event\" part is larger than %u bytes",
					 EVENT_PART_MAX);
	if (webd_publish_json(event, event_len, p, e) < 0)
		return -1;
	if (jpeg && p->jpeg)
		return webd_publish_fail(e, 400, "bad_multipart", "a JPEG both as a part and as jpeg_base64");
	if (jpeg) {
		if (jpeg_len > KP_ANALYSIS_JPEG_MAX)
			return webd_publish_fail(e, 413, "jpeg_too_large", "the JPEG has %zu bytes, more than %u",
						 jpeg_len, (unsigned)KP_ANALYSIS_JPEG_MAX);
		p->jpeg = jpeg_len ? jpeg : NULL;
		p->jpeg_len = jpeg_len;
	}
	return 0;
}
