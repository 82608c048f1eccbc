/* WS-Discovery responder of the test camera (see wsd_responder.h). Written apart from
 * ingestd's reader (ingestd/discover/wsd.c): it finds what it needs with plain string
 * searches, the way the small embedded SOAP stacks of cameras do. */
#include "wsd_responder.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WSD_GROUP "239.255.255.250"
#define WSD_PORT  3702

static uv_udp_t udp;
static char xaddr_host[64], cam_name[64], cam_model[64];
static unsigned long long answered, ignored;

void cam_wsd_counts(unsigned long long *a, unsigned long long *i)
{
	*a = answered;
	*i = ignored;
}

/* The text of the first element whose name ends with ":tag" or is "tag", or "". */
static void text_of(const char *xml, const char *tag, char *out, size_t cap)
{
	char open1[64], open2[64];
	snprintf(open1, sizeof open1, ":%s>", tag);
	snprintf(open2, sizeof open2, "<%s>", tag);
	const char *p = strstr(xml, open1);
	size_t skip = strlen(open1);
	if (!p) {
		p = strstr(xml, open2);
		skip = strlen(open2);
	}
	out[0] = '\0';
	if (!p)
		return;
	p += skip;
	const char *e = strchr(p, '<');
	if (!e || (size_t)(e - p) >= cap)
		return;
	memcpy(out, p, (size_t)(e - p));
	out[e - p] = '\0';
}

static void on_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf)
{
	static char rx[65536];
	(void)h;
	(void)hint;
	*buf = uv_buf_init(rx, sizeof rx - 1);
}

static void on_recv(uv_udp_t *h, ssize_t n, const uv_buf_t *buf, const struct sockaddr *from, unsigned flags)
{
	(void)flags;
	if (n <= 0 || !from)
		return;
	buf->base[n] = '\0';
	const char *xml = buf->base;
	/* Only a Probe (its Action, or a Probe element) is answered. */
	if (!strstr(xml, "discovery/Probe<") && !strstr(xml, ":Probe>") && !strstr(xml, "<Probe>")) {
		ignored++;
		return;
	}
	char types[256], msgid[128];
	text_of(xml, "Types", types, sizeof types);
	text_of(xml, "MessageID", msgid, sizeof msgid);
	if ((types[0] && !strstr(types, "NetworkVideoTransmitter")) || !msgid[0]) {
		ignored++;
		return;
	}
	static unsigned long long serial;
	static char out[4096];
	int len = snprintf(
	    out, sizeof out,
	    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
	    "<SOAP-ENV:Envelope xmlns:SOAP-ENV=\"http://www.w3.org/2003/05/soap-envelope\" "
	    "xmlns:wsa=\"http://schemas.xmlsoap.org/ws/2004/08/addressing\" "
	    "xmlns:wsdd=\"http://schemas.xmlsoap.org/ws/2005/04/discovery\" "
	    "xmlns:tdn=\"http://www.onvif.org/ver10/network/wsdl\">"
	    "<SOAP-ENV:Header><wsa:MessageID>uuid:6b7e1f00-0000-4000-8000-%012llx</wsa:MessageID>"
	    "<wsa:RelatesTo>%s</wsa:RelatesTo>"
	    "<wsa:To SOAP-ENV:mustUnderstand=\"true\">http://schemas.xmlsoap.org/ws/2004/08/addressing/role/anonymous"
	    "</wsa:To><wsa:Action SOAP-ENV:mustUnderstand=\"true\">"
	    "http://schemas.xmlsoap.org/ws/2005/04/discovery/ProbeMatches</wsa:Action></SOAP-ENV:Header>"
	    "<SOAP-ENV:Body><wsdd:ProbeMatches><wsdd:ProbeMatch><wsa:EndpointReference>"
	    "<wsa:Address>urn:uuid:6b7e1f00-0000-4000-8000-00000000cafe</wsa:Address></wsa:EndpointReference>"
	    "<wsdd:Types>tdn:NetworkVideoTransmitter</wsdd:Types>"
	    "<wsdd:Scopes>onvif://www.onvif.org/type/video_encoder onvif://www.onvif.org/Profile/Streaming "
	    "onvif://www.onvif.org/hardware/%s onvif://www.onvif.org/name/%s</wsdd:Scopes>"
	    "<wsdd:XAddrs>http://%s/onvif/device_service</wsdd:XAddrs>"
	    "<wsdd:MetadataVersion>1</wsdd:MetadataVersion></wsdd:ProbeMatch></wsdd:ProbeMatches></SOAP-ENV:Body>"
	    "</SOAP-ENV:Envelope>",
	    ++serial, msgid, cam_model, cam_name, xaddr_host);
	if (len <= 0 || (size_t)len >= sizeof out)
		return;
	uv_buf_t b = uv_buf_init(out, (unsigned)len);
	if (uv_udp_try_send(h, &b, 1, from) >= 0)
		answered++;
}

int cam_wsd_start(uv_loop_t *loop, const char *address, const char *name, const char *model)
{
	snprintf(xaddr_host, sizeof xaddr_host, "%s", address);
	snprintf(cam_name, sizeof cam_name, "%s", name);
	snprintf(cam_model, sizeof cam_model, "%s", model);
	struct sockaddr_in any;
	int r = uv_ip4_addr("0.0.0.0", WSD_PORT, &any);
	if (r == 0)
		r = uv_udp_init(loop, &udp);
	if (r == 0)
		r = uv_udp_bind(&udp, (const struct sockaddr *)&any, UV_UDP_REUSEADDR);
	if (r == 0)
		r = uv_udp_set_membership(&udp, WSD_GROUP, NULL, UV_JOIN_GROUP);
	if (r == 0)
		r = uv_udp_recv_start(&udp, on_alloc, on_recv);
	return r;
}
