/* WS-Discovery Probe and ProbeMatches (see wsd.h). Elements are found by their local
 * name whatever their namespace prefix (cameras use d:, wsdd:, or a default namespace),
 * and only within the datagram. */
#include "wsd.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

int wsd_probe_build(const char *message_id, char *out, size_t cap)
{
	int n = snprintf(out, cap,
			 "<?xml version=\"1.0\" encoding=\"UTF-8\"?>"
			 "<e:Envelope xmlns:e=\"http://www.w3.org/2003/05/soap-envelope\" "
			 "xmlns:w=\"http://schemas.xmlsoap.org/ws/2004/08/addressing\" "
			 "xmlns:d=\"http://schemas.xmlsoap.org/ws/2005/04/discovery\" "
			 "xmlns:dn=\"http://www.onvif.org/ver10/network/wsdl\">"
			 "<e:Header><w:MessageID>%s</w:MessageID>"
			 "<w:To e:mustUnderstand=\"true\">urn:schemas-xmlsoap-org:ws:2005:04:discovery</w:To>"
			 "<w:Action e:mustUnderstand=\"true\">http://schemas.xmlsoap.org/ws/2005/04/discovery/Probe"
			 "</w:Action></e:Header>"
			 "<e:Body><d:Probe><d:Types>dn:NetworkVideoTransmitter</d:Types></d:Probe></e:Body>"
			 "</e:Envelope>",
			 message_id);
	return n < 0 || (size_t)n >= cap ? -ENOBUFS : n;
}

/* The content of the first element whose local name is name in [p, end): *ret and
 * *ret_len, and the position after its end tag in *after. false when absent. */
static bool element(const char *p, const char *end, const char *name, const char **ret, size_t *ret_len,
		    const char **after)
{
	size_t nl = strlen(name);
	for (const char *s = p; s < end; s++) {
		s = memchr(s, '<', (size_t)(end - s));
		if (!s)
			return false;
		const char *t = s + 1, *q = t;
		while (q < end && *q != '>' && *q != ' ' && *q != '/' && *q != '\t' && *q != '\r' && *q != '\n')
			q++;
		const char *colon = memchr(t, ':', (size_t)(q - t));
		const char *local = colon ? colon + 1 : t;
		if ((size_t)(q - local) != nl || memcmp(local, name, nl) || *t == '/')
			continue;
		const char *gt = memchr(q, '>', (size_t)(end - q));
		if (!gt)
			return false;
		if (gt[-1] == '/') { /* <x/> */
			*ret = gt;
			*ret_len = 0;
			*after = gt + 1;
			return true;
		}
		/* The end tag: "</" prefix? name ">". */
		for (const char *c = gt + 1; c < end; c++) {
			c = memchr(c, '<', (size_t)(end - c));
			if (!c || c + 1 >= end)
				return false;
			if (c[1] != '/')
				continue;
			const char *en = c + 2, *eq = en;
			while (eq < end && *eq != '>')
				eq++;
			const char *ec = memchr(en, ':', (size_t)(eq - en));
			const char *el = ec ? ec + 1 : en;
			if ((size_t)(eq - el) == nl && !memcmp(el, name, nl)) {
				*ret = gt + 1;
				*ret_len = (size_t)(c - gt - 1);
				*after = eq < end ? eq + 1 : end;
				return true;
			}
		}
		return false;
	}
	return false;
}

static int hexval(char c)
{
	return c >= '0' && c <= '9'   ? c - '0'
	       : c >= 'a' && c <= 'f' ? c - 'a' + 10
	       : c >= 'A' && c <= 'F' ? c - 'A' + 10
				      : -1;
}

/* Copies text[0..len) trimmed of blanks into out (cap bytes), percent-decoding when
 * decode; false when it does not fit. */
static bool copy_text(const char *text, size_t len, char *out, size_t cap, bool decode)
{
	while (len && strchr(" \t\r\n", *text))
		text++, len--;
	while (len && strchr(" \t\r\n", text[len - 1]))
		len--;
	size_t o = 0;
	for (size_t i = 0; i < len; i++) {
		char c = text[i];
		int hi, lo;
		if (decode && c == '%' && i + 2 < len && (hi = hexval(text[i + 1])) >= 0 &&
		    (lo = hexval(text[i + 2])) >= 0) {
			c = (char)(hi * 16 + lo);
			i += 2;
		}
		if (o + 1 >= cap || (unsigned char)c < 0x20)
			return false;
		out[o++] = c;
	}
	out[o] = '\0';
	return true;
}

/* The rest of the scope that starts with prefix in the whitespace-separated list. */
static void scope(const char *scopes, size_t len, const char *prefix, char *out, size_t cap)
{
	size_t pl = strlen(prefix);
	out[0] = '\0';
	for (size_t i = 0; i < len;) {
		while (i < len && strchr(" \t\r\n", scopes[i]))
			i++;
		size_t j = i;
		while (j < len && !strchr(" \t\r\n", scopes[j]))
			j++;
		if (j - i > pl && !memcmp(scopes + i, prefix, pl)) {
			if (!copy_text(scopes + i + pl, j - i - pl, out, cap, true))
				out[0] = '\0';
			return;
		}
		i = j;
	}
}

int wsd_match_parse(const char *xml, size_t len, const char *message_id, struct wsd_match *m)
{
	const char *end = xml + len, *v, *after, *pm;
	size_t n, pmlen;
	memset(m, 0, sizeof *m);
	if (!element(xml, end, "ProbeMatches", &pm, &pmlen, &after))
		return -ENOENT;
	/* An answer to another client's Probe is not ours (WS-Discovery 2005/04 section 5.3). */
	if (element(xml, end, "RelatesTo", &v, &n, &after)) {
		char rel[128];
		if (!copy_text(v, n, rel, sizeof rel, false) || strcmp(rel, message_id))
			return -ENOENT;
	}
	const char *match, *mend = pm + pmlen;
	size_t mlen;
	if (!element(pm, mend, "ProbeMatch", &match, &mlen, &after))
		return -ENOENT;
	const char *me = match + mlen;
	if (!element(match, me, "XAddrs", &v, &n, &after))
		return -EBADMSG;
	size_t first = 0;
	while (first < n && strchr(" \t\r\n", v[first]))
		first++;
	size_t flen = 0;
	while (first + flen < n && !strchr(" \t\r\n", v[first + flen]))
		flen++;
	if (!flen || !copy_text(v + first, flen, m->xaddr, sizeof m->xaddr, false) ||
	    (strncmp(m->xaddr, "http://", 7) && strncmp(m->xaddr, "https://", 8)))
		return -EBADMSG;
	if (element(match, me, "Address", &v, &n, &after))
		copy_text(v, n, m->endpoint, sizeof m->endpoint, false);
	if (element(match, me, "Scopes", &v, &n, &after)) {
		scope(v, n, "onvif://www.onvif.org/name/", m->name, sizeof m->name);
		scope(v, n, "onvif://www.onvif.org/hardware/", m->model, sizeof m->model);
	}
	return 0;
}
