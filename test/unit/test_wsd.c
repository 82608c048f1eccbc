/* Unit tests for WS-Discovery (ingestd/discover/wsd.c): the Probe names the ONVIF type
 * and our MessageID; a ProbeMatches as cameras send it (prefixed namespaces, several
 * XAddrs, percent-encoded scopes) and one in a default namespace are read; an answer to
 * another probe, a Probe, a Hello and a match without XAddrs are not; nothing is read
 * past the datagram. */
#include <errno.h>
#include <string.h>

#include "test.h"
#include "wsd.h"

#define ID "uuid:0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f0"

static const char camera[] =
    "<?xml version=\"1.0\" encoding=\"UTF-8\"?><SOAP-ENV:Envelope "
    "xmlns:SOAP-ENV=\"http://www.w3.org/2003/05/soap-envelope\" "
    "xmlns:wsa=\"http://schemas.xmlsoap.org/ws/2004/08/addressing\" "
    "xmlns:wsdd=\"http://schemas.xmlsoap.org/ws/2005/04/discovery\"><SOAP-ENV:Header>"
    "<wsa:MessageID>uuid:11111111-2222-4333-8444-555555555555</wsa:MessageID><wsa:RelatesTo>" ID
    "</wsa:RelatesTo></SOAP-ENV:Header><SOAP-ENV:Body><wsdd:ProbeMatches><wsdd:ProbeMatch>"
    "<wsa:EndpointReference><wsa:Address>urn:uuid:2419d68a-2dd2-21b2-a205-ec71db123456</wsa:Address>"
    "</wsa:EndpointReference><wsdd:Types>dn:NetworkVideoTransmitter</wsdd:Types><wsdd:Scopes>"
    "onvif://www.onvif.org/type/video_encoder onvif://www.onvif.org/hardware/RLC-810A\n"
    "onvif://www.onvif.org/name/Front%20Door</wsdd:Scopes><wsdd:XAddrs> "
    "http://192.168.1.20:8000/onvif/device_service http://[fe80::1]/onvif/device_service</wsdd:XAddrs>"
    "</wsdd:ProbeMatch></wsdd:ProbeMatches></SOAP-ENV:Body></SOAP-ENV:Envelope>";

static void test_probe(void)
{
	char out[2048];
	int n = wsd_probe_build(ID, out, sizeof out);
	CHECK(n > 0 && (size_t)n == strlen(out));
	CHECK_STR_CONTAINS(out, "<w:MessageID>" ID "</w:MessageID>");
	CHECK_STR_CONTAINS(out, "<d:Types>dn:NetworkVideoTransmitter</d:Types>");
	CHECK_STR_CONTAINS(out, "http://schemas.xmlsoap.org/ws/2005/04/discovery/Probe</w:Action>");
	CHECK_EQ(wsd_probe_build(ID, out, 100), -ENOBUFS);
}

static void test_match(void)
{
	struct wsd_match m;
	CHECK_EQ(wsd_match_parse(camera, strlen(camera), ID, &m), 0);
	CHECK(!strcmp(m.xaddr, "http://192.168.1.20:8000/onvif/device_service"));
	CHECK(!strcmp(m.name, "Front Door"));
	CHECK(!strcmp(m.model, "RLC-810A"));
	CHECK(!strcmp(m.endpoint, "urn:uuid:2419d68a-2dd2-21b2-a205-ec71db123456"));
	/* The same answer to someone else's probe is not ours. */
	CHECK_EQ(wsd_match_parse(camera, strlen(camera), "uuid:00000000-0000-4000-8000-000000000000", &m), -ENOENT);
	/* Cut anywhere, it is never read past its end. */
	for (size_t n = 0; n < strlen(camera); n += 7)
		CHECK(wsd_match_parse(camera, n, ID, &m) <= 0);
	const char plain[] = "<Envelope><Body><ProbeMatches><ProbeMatch><XAddrs>http://10.0.0.2/onvif/device_service"
			     "</XAddrs></ProbeMatch></ProbeMatches></Body></Envelope>";
	CHECK_EQ(wsd_match_parse(plain, strlen(plain), ID, &m), 0);
	CHECK(!strcmp(m.xaddr, "http://10.0.0.2/onvif/device_service") && !m.name[0]);
	const char noaddr[] = "<ProbeMatches><ProbeMatch><Types>dn:NetworkVideoTransmitter</Types></ProbeMatch>"
			      "</ProbeMatches>";
	CHECK_EQ(wsd_match_parse(noaddr, strlen(noaddr), ID, &m), -EBADMSG);
	const char ftp[] = "<ProbeMatches><ProbeMatch><XAddrs>ftp://10.0.0.2/</XAddrs></ProbeMatch></ProbeMatches>";
	CHECK_EQ(wsd_match_parse(ftp, strlen(ftp), ID, &m), -EBADMSG);
	char probe[2048];
	int n = wsd_probe_build(ID, probe, sizeof probe);
	CHECK_EQ(wsd_match_parse(probe, (size_t)n, ID, &m), -ENOENT);
	const char hello[] = "<e:Envelope><e:Body><d:Hello><d:XAddrs>http://10.0.0.9/</d:XAddrs></d:Hello></e:Body>"
			     "</e:Envelope>";
	CHECK_EQ(wsd_match_parse(hello, strlen(hello), ID, &m), -ENOENT);
}

int main(void)
{
	RUN(test_probe);
	RUN(test_match);
	return TEST_EXIT();
}
