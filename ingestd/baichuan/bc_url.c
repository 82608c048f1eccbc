/* Parsing of baichuan:// and bcudp:// camera URLs. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "bc_url.h"

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

/* Percent-decodes [p, p+len) into out; rejects %00 and overlong results. */
static int decode(const char *p, size_t len, char *out, size_t cap)
{
	size_t o = 0;
	for (size_t i = 0; i < len; i++) {
		char c = p[i];
		if (c == '%') {
			if (i + 2 >= len)
				return -EINVAL;
			int hi = hexval(p[i + 1]), lo = hexval(p[i + 2]);
			if (hi < 0 || lo < 0 || (hi == 0 && lo == 0))
				return -EINVAL;
			c = (char)(hi << 4 | lo);
			i += 2;
		}
		if (o + 1 >= cap)
			return -EINVAL;
		out[o++] = c;
	}
	out[o] = '\0';
	return 0;
}

int bc_url_parse(const char *url, struct bc_url *ret, const char **ret_reason)
{
	struct bc_url u = {0};
	const char *p;
	if (strncmp(url, "baichuan://", 11) == 0) {
		p = url + 11;
		u.port = BC_TCP_DEFAULT_PORT;
	} else if (strncmp(url, "bcudp://", 8) == 0) {
		p = url + 8;
		u.udp = true;
		u.port = BC_BCUDP_DEFAULT_PORT;
	} else {
		*ret_reason = "URL scheme is not baichuan:// or bcudp://";
		return -EINVAL;
	}
	const char *auth_end = p + strcspn(p, "/?#");
	const char *at = NULL;
	for (const char *q = p; q < auth_end; q++)
		if (*q == '@')
			at = q;
	if (!at) {
		*ret_reason = "URL has no user:password@";
		return -EINVAL;
	}
	const char *colon = memchr(p, ':', (size_t)(at - p));
	size_t ulen = colon ? (size_t)(colon - p) : (size_t)(at - p);
	if (decode(p, ulen, u.user, sizeof u.user) < 0 || !u.user[0]) {
		*ret_reason = "URL user name is empty, too long or badly percent-encoded";
		return -EINVAL;
	}
	if (colon && decode(colon + 1, (size_t)(at - colon - 1), u.password, sizeof u.password) < 0) {
		*ret_reason = "URL password is too long or badly percent-encoded";
		return -EINVAL;
	}
	const char *h = at + 1, *hend, *port = NULL;
	if (*h == '[') {
		const char *rb = memchr(h, ']', (size_t)(auth_end - h));
		if (!rb) {
			*ret_reason = "URL IPv6 address lacks ']'";
			return -EINVAL;
		}
		h++;
		hend = rb;
		if (rb + 1 < auth_end) {
			if (rb[1] != ':') {
				*ret_reason = "URL has junk after the host";
				return -EINVAL;
			}
			port = rb + 2;
		}
	} else {
		const char *c = memchr(h, ':', (size_t)(auth_end - h));
		hend = c ? c : auth_end;
		port = c ? c + 1 : NULL;
	}
	if ((hend == h && !u.udp) || (size_t)(hend - h) >= sizeof u.host) {
		*ret_reason = "URL host is empty or too long";
		return -EINVAL;
	}
	memcpy(u.host, h, (size_t)(hend - h));
	if (port) {
		unsigned long v = 0;
		const char *q = port;
		while (q < auth_end && *q >= '0' && *q <= '9' && v <= 65535)
			v = v * 10 + (unsigned long)(*q++ - '0');
		if (q == port || q != auth_end || v == 0 || v > 65535) {
			*ret_reason = "URL port is not a number in 1..65535";
			return -EINVAL;
		}
		u.port = (uint16_t)v;
		u.port_given = true;
	}
	const char *query = strchr(auth_end, '?');
	if (query) {
		for (const char *kv = query + 1; *kv && *kv != '#';) {
			size_t n = strcspn(kv, "&#");
			if (n > 8 && strncmp(kv, "channel=", 8) == 0) {
				unsigned long v = 0;
				size_t i = 8;
				while (i < n && kv[i] >= '0' && kv[i] <= '9' && v <= 255)
					v = v * 10 + (unsigned long)(kv[i++] - '0');
				if (i != n || v > 255) {
					*ret_reason = "URL channel is not a number in 0..255";
					return -EINVAL;
				}
				u.channel = (uint8_t)v;
			} else if (u.udp && n > 4 && strncmp(kv, "uid=", 4) == 0) {
				size_t ok =
				    strspn(kv + 4, "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz");
				if (n - 4 >= sizeof u.uid || ok < n - 4) {
					*ret_reason = "URL uid is not 1..64 letters and digits";
					return -EINVAL;
				}
				memcpy(u.uid, kv + 4, n - 4);
				u.uid[n - 4] = '\0';
			} else {
				*ret_reason = u.udp ? "URL has an unknown query parameter (only channel=N and uid=UID)"
						    : "URL has an unknown query parameter (only channel=N)";
				return -EINVAL;
			}
			kv += n;
			if (*kv == '&')
				kv++;
		}
	}
	if (u.udp && !u.host[0] && !u.uid[0]) {
		*ret_reason = "URL has neither a host nor a uid= (a BCUDP camera is found by one of them)";
		return -EINVAL;
	}
	*ret = u;
	return 0;
}
