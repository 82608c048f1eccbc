/* RFC 6455, client side (hub_ws_frame.h). */
#include "hub_ws_frame.h"

#include <ctype.h>
#include <openssl/evp.h>
#include <openssl/sha.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

static bool plain(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s <= ' ' || *s == 0x7f)
			return false;
	return true;
}

int hub_ws_request(char *buf, size_t cap, const char *host, const char *path, const char *token,
		   const uint8_t key16[16], char accept[29])
{
	if (!plain(host) || !plain(path) || !plain(token) || path[0] != '/')
		return -1;
	char key[25], cat[64];
	EVP_EncodeBlock((unsigned char *)key, key16, 16);
	int n = snprintf(cat, sizeof cat, "%s258EAFA5-E914-47DA-95CA-C5AB0DC85B11", key);
	unsigned char sha[SHA_DIGEST_LENGTH];
	SHA1((const unsigned char *)cat, (size_t)n, sha);
	EVP_EncodeBlock((unsigned char *)accept, sha, SHA_DIGEST_LENGTH);
	n = snprintf(buf, cap,
		     "GET %s HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
		     "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\nAuthorization: Bearer %s\r\n"
		     "User-Agent: KeepPeek-hub\r\n\r\n",
		     path, host, key, token);
	return n < 0 || (size_t)n >= cap ? -1 : n;
}

/* The value of header name in the head's lines (case-insensitive name), trimmed. */
static bool header_is(const char *head, size_t n, const char *name, const char *want, bool ci)
{
	size_t nl = strlen(name);
	const char *p = memchr(head, '\n', n);
	while (p && (size_t)(p + 1 - head) < n) {
		const char *line = p + 1;
		const char *end = memchr(line, '\n', n - (size_t)(line - head));
		if (!end)
			return false;
		if ((size_t)(end - line) > nl && !strncasecmp(line, name, nl) && line[nl] == ':') {
			const char *v = line + nl + 1;
			while (v < end && (*v == ' ' || *v == '\t'))
				v++;
			const char *ve = end;
			while (ve > v && (ve[-1] == '\r' || ve[-1] == ' ' || ve[-1] == '\t'))
				ve--;
			size_t wl = strlen(want);
			return (size_t)(ve - v) == wl && (ci ? !strncasecmp(v, want, wl) : !strncmp(v, want, wl));
		}
		p = end;
	}
	return false;
}

int hub_ws_answer(const char *b, size_t n, size_t max, const char *accept, int *status)
{
	const char *end = NULL;
	for (size_t i = 0; i + 3 < n; i++)
		if (!memcmp(b + i, "\r\n\r\n", 4)) {
			end = b + i + 4;
			break;
		}
	if (!end)
		return n > max ? -2 : 0;
	size_t hl = (size_t)(end - b);
	*status = 0;
	if (hl < 12 || strncmp(b, "HTTP/1.1 ", 9) || !isdigit((unsigned char)b[9]) || !isdigit((unsigned char)b[10]) ||
	    !isdigit((unsigned char)b[11]))
		return -1;
	*status = (b[9] - '0') * 100 + (b[10] - '0') * 10 + (b[11] - '0');
	if (*status != 101 || !header_is(b, hl, "upgrade", "websocket", true) ||
	    !header_is(b, hl, "sec-websocket-accept", accept, false))
		return -1;
	return (int)hl;
}

int hub_ws_frame_parse(const uint8_t *b, size_t n, size_t max, struct hub_ws_frame *f)
{
	if (n < 2)
		return 0;
	if ((b[0] & 0x70) || (b[1] & 0x80))
		return -1;
	f->fin = b[0] & 0x80;
	f->op = b[0] & 0x0f;
	uint64_t len = b[1] & 0x7f;
	size_t h = 2;
	if (len == 126) {
		if (n < 4)
			return 0;
		len = (uint64_t)b[2] << 8 | b[3];
		h = 4;
	} else if (len == 127) {
		if (n < 10)
			return 0;
		len = 0;
		for (int i = 0; i < 8; i++)
			len = len << 8 | b[2 + i];
		h = 10;
	}
	if (f->op >= 8 && (!f->fin || len > 125))
		return -2;
	if (len > max)
		return -3;
	if (n - h < len)
		return 0;
	f->header_len = h;
	f->payload_len = (size_t)len;
	return 1;
}

size_t hub_ws_frame_header(uint8_t *out, int op, size_t len, const uint8_t mask[4])
{
	size_t h = 2;
	out[0] = (uint8_t)(0x80 | (op & 0x0f));
	if (len < 126) {
		out[1] = (uint8_t)(0x80 | len);
	} else if (len <= 0xffff) {
		out[1] = 0x80 | 126;
		out[2] = (uint8_t)(len >> 8);
		out[3] = (uint8_t)len;
		h = 4;
	} else {
		out[1] = 0x80 | 127;
		for (int i = 0; i < 8; i++)
			out[2 + i] = (uint8_t)((uint64_t)len >> (56 - 8 * i));
		h = 10;
	}
	memcpy(out + h, mask, 4);
	return h + 4;
}

void hub_ws_mask(uint8_t *p, size_t len, const uint8_t mask[4])
{
	for (size_t i = 0; i < len; i++)
		p[i] ^= mask[i & 3];
}
