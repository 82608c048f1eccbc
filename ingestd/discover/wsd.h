/* WS-Discovery as ONVIF cameras speak it (ONVIF Core Specification section 7.3, over
 * OASIS WS-Discovery 2005/04, SOAP 1.2, WS-Addressing 2004/08): the Probe for
 * dn:NetworkVideoTransmitter that ingestd multicasts, and the ProbeMatches a camera
 * answers with (unicast, from port 3702). Bounded text scanning; no XML library. */
#ifndef KP_WSD_H
#define KP_WSD_H

#include <stddef.h>

#define WSD_PORT  3702
#define WSD_GROUP "239.255.255.250"
#define WSD_MAX   (64 * 1024) /* a datagram */

struct wsd_match {
	char endpoint[128]; /* EndpointReference Address, e.g. urn:uuid:... */
	char xaddr[257];    /* the first XAddrs URL (the device service) */
	char name[65];      /* scope onvif://www.onvif.org/name/..., percent-decoded */
	char model[65];     /* scope onvif://www.onvif.org/hardware/... */
};

/* The Probe with MessageID message_id ("uuid:..."): its length, or -ENOBUFS. */
int wsd_probe_build(const char *message_id, char *out, size_t cap);

/* Reads a ProbeMatches answering message_id: 0 with m filled (the first ProbeMatch),
 * -ENOENT when xml is another message (a Probe, a Hello, an answer to someone else),
 * -EBADMSG when it has no XAddrs. */
int wsd_match_parse(const char *xml, size_t len, const char *message_id, struct wsd_match *m);

#endif
