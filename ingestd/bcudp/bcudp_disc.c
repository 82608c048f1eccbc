/* BCUDP discovery XML: a bounded tag extractor (no nesting model, no allocation) and the
 * eight lookup/connect/heartbeat/disconnect messages built and parsed with it. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "bcudp_disc.h"

#define TAG_MAX 16

static const struct {
	enum bcudp_disc_type type;
	const char *tag;
} types[] = {
    {BCUDP_C2D_C, "C2D_C"},       {BCUDP_D2C_C_R, "D2C_C_R"},   {BCUDP_C2D_HB, "C2D_HB"}, {BCUDP_D2C_HB, "D2C_HB"},
    {BCUDP_C2D_DISC, "C2D_DISC"}, {BCUDP_D2C_DISC, "D2C_DISC"}, {BCUDP_C2D_S, "C2D_S"},   {BCUDP_D2C_S_R, "D2C_S_R"},
};

int bcudp_xml_tag(const char *xml, size_t len, const char *tag, const char **ret_text, size_t *ret_len)
{
	char open[TAG_MAX + 3], close[TAG_MAX + 4];
	size_t tlen = strlen(tag);
	if (tlen == 0 || tlen > TAG_MAX)
		return -EINVAL;
	int on = snprintf(open, sizeof open, "<%s>", tag);
	int cn = snprintf(close, sizeof close, "</%s>", tag);
	const char *start = memmem(xml, len, open, (size_t)on);
	if (!start)
		return -ENOENT;
	start += on;
	const char *end = memmem(start, len - (size_t)(start - xml), close, (size_t)cn);
	if (!end)
		return -ENOENT;
	*ret_text = start;
	*ret_len = (size_t)(end - start);
	return 0;
}

/* A decimal integer in [min, max], surrounding whitespace allowed. */
static int parse_int(const char *s, size_t len, long long min, long long max, long long *ret)
{
	while (len && (*s == ' ' || *s == '\n' || *s == '\r' || *s == '\t'))
		s++, len--;
	while (len && (s[len - 1] == ' ' || s[len - 1] == '\n' || s[len - 1] == '\r' || s[len - 1] == '\t'))
		len--;
	bool neg = len && *s == '-';
	if (neg)
		s++, len--;
	if (len == 0 || len > 10)
		return -EINVAL;
	long long v = 0;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -EINVAL;
		v = v * 10 + (s[i] - '0');
	}
	if (neg)
		v = -v;
	if (v < min || v > max)
		return -ERANGE;
	*ret = v;
	return 0;
}

static int field(const char *xml, size_t len, const char *tag, long long min, long long max, long long *ret)
{
	const char *text;
	size_t tlen;
	int r = bcudp_xml_tag(xml, len, tag, &text, &tlen);
	if (r < 0)
		return r;
	return parse_int(text, tlen, min, max, ret);
}

static int ids(const char *xml, size_t len, struct bcudp_disc *d, const char **ret_reason)
{
	long long cid, did;
	if (field(xml, len, "cid", INT32_MIN, INT32_MAX, &cid) < 0 ||
	    field(xml, len, "did", INT32_MIN, INT32_MAX, &did) < 0) {
		*ret_reason = "discovery message without a valid cid and did";
		return -EBADMSG;
	}
	d->cid = (int32_t)cid;
	d->did = (int32_t)did;
	return 0;
}

/* The <uid> of a C2D_C or D2C_S_R; a C2D_C may carry an empty one (a client that does
 * not know it: real cameras do not answer that). */
static int uid_field(const char *xml, size_t len, bool may_be_empty, struct bcudp_disc *d)
{
	const char *text;
	size_t tlen;
	if (bcudp_xml_tag(xml, len, "uid", &text, &tlen) < 0 || tlen > BCUDP_UID_MAX)
		return -EBADMSG;
	if (!(may_be_empty && tlen == 0) && (tlen == 0 || strspn(text, BCUDP_UID_CHARS) < tlen))
		return -EBADMSG;
	memcpy(d->uid, text, tlen);
	d->uid[tlen] = '\0';
	return 0;
}

static int parse_c2d_c(const char *xml, size_t len, struct bcudp_disc *d, const char **ret_reason)
{
	const char *cli;
	size_t clen;
	long long port, cid, mtu;
	if (uid_field(xml, len, true, d) < 0) {
		*ret_reason = "C2D_C without a valid uid";
		return -EBADMSG;
	}
	if (bcudp_xml_tag(xml, len, "cli", &cli, &clen) < 0 || field(cli, clen, "port", 0, 65535, &port) < 0) {
		*ret_reason = "C2D_C without a valid cli port";
		return -EBADMSG;
	}
	if (field(xml, len, "cid", INT32_MIN, INT32_MAX, &cid) < 0) {
		*ret_reason = "C2D_C without a valid cid";
		return -EBADMSG;
	}
	if (field(xml, len, "mtu", 0, UINT32_MAX, &mtu) < 0) {
		*ret_reason = "C2D_C without a valid mtu";
		return -EBADMSG;
	}
	d->port = (uint16_t)port;
	d->cid = (int32_t)cid;
	d->mtu = (uint32_t)mtu;
	return 0;
}

static int parse_d2c_c_r(const char *xml, size_t len, struct bcudp_disc *d, const char **ret_reason)
{
	int r = ids(xml, len, d, ret_reason);
	if (r < 0)
		return r;
	const char *timer;
	size_t tlen;
	long long v;
	if (bcudp_xml_tag(xml, len, "timer", &timer, &tlen) == 0) {
		if (field(timer, tlen, "def", 0, UINT32_MAX, &v) == 0)
			d->timer_def = (uint32_t)v;
		if (field(timer, tlen, "hb", 0, UINT32_MAX, &v) == 0)
			d->timer_hb = (uint32_t)v;
		if (field(timer, tlen, "hbt", 0, UINT32_MAX, &v) == 0)
			d->timer_hbt = (uint32_t)v;
	}
	if (field(xml, len, "rsp", INT32_MIN, INT32_MAX, &v) == 0)
		d->rsp = (int32_t)v;
	return 0;
}

int bcudp_disc_parse(const char *xml, size_t len, struct bcudp_disc *ret, const char **ret_reason)
{
	struct bcudp_disc d;
	memset(&d, 0, sizeof d);
	const char *body = NULL;
	size_t blen = 0;
	for (size_t i = 0; i < sizeof types / sizeof types[0] && !body; i++)
		if (bcudp_xml_tag(xml, len, types[i].tag, &body, &blen) == 0)
			d.type = types[i].type;
	if (!body) {
		*ret_reason = "unsupported discovery message";
		return -ENOTSUP;
	}
	int r;
	switch (d.type) {
	case BCUDP_C2D_C:
		r = parse_c2d_c(body, blen, &d, ret_reason);
		break;
	case BCUDP_D2C_C_R:
		r = parse_d2c_c_r(body, blen, &d, ret_reason);
		break;
	case BCUDP_C2D_S: {
		const char *to;
		size_t tolen;
		long long port;
		r = 0;
		if (bcudp_xml_tag(body, blen, "to", &to, &tolen) < 0 || field(to, tolen, "port", 0, 65535, &port) < 0) {
			*ret_reason = "C2D_S without a valid to/port";
			r = -EBADMSG;
		} else {
			d.port = (uint16_t)port;
		}
		break;
	}
	case BCUDP_D2C_S_R:
		r = uid_field(body, blen, false, &d);
		if (r < 0)
			*ret_reason = "D2C_S_R without a valid uid";
		break;
	default:
		r = ids(body, blen, &d, ret_reason);
		break;
	}
	if (r < 0)
		return r;
	*ret = d;
	return 0;
}

int bcudp_disc_build(const struct bcudp_disc *d, char *out, size_t cap)
{
	int n;
	switch (d->type) {
	case BCUDP_C2D_C:
		n = snprintf(out, cap,
			     "<P2P><C2D_C><uid>%s</uid><cli><port>%u</port></cli><cid>%d</cid><mtu>%u</mtu>"
			     "<debug>0</debug><p>MAC</p></C2D_C></P2P>",
			     d->uid, (unsigned)d->port, (int)d->cid, (unsigned)d->mtu);
		break;
	case BCUDP_D2C_C_R:
		n = snprintf(out, cap,
			     "<P2P><D2C_C_R><timer><def>%u</def><hb>%u</hb><hbt>%u</hbt></timer><rsp>%d</rsp>"
			     "<cid>%d</cid><did>%d</did></D2C_C_R></P2P>",
			     (unsigned)d->timer_def, (unsigned)d->timer_hb, (unsigned)d->timer_hbt, (int)d->rsp,
			     (int)d->cid, (int)d->did);
		break;
	case BCUDP_C2D_S:
		n = snprintf(out, cap, "<P2P><C2D_S><to><port>%u</port></to></C2D_S></P2P>", (unsigned)d->port);
		break;
	case BCUDP_D2C_S_R:
		n = snprintf(out, cap, "<P2P><D2C_S_R><uid>%s</uid></D2C_S_R></P2P>", d->uid);
		break;
	default: {
		const char *tag = NULL;
		for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
			if (types[i].type == d->type)
				tag = types[i].tag;
		if (!tag)
			return -EINVAL;
		n = snprintf(out, cap, "<P2P><%s><cid>%d</cid><did>%d</did></%s></P2P>", tag, (int)d->cid, (int)d->did,
			     tag);
		break;
	}
	}
	if (n < 0 || (size_t)n >= cap)
		return -ENOBUFS;
	return n;
}
