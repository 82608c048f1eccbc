/* The test camera's WS-Discovery responder (ONVIF Core Specification section 7.3 over
 * OASIS WS-Discovery 2005/04): it joins 239.255.255.250 on UDP 3702 and answers a Probe
 * whose Types are empty or name tdn/dn:NetworkVideoTransmitter with one ProbeMatch,
 * unicast to the prober, RelatesTo its MessageID, XAddrs
 * http://ADDRESS/onvif/device_service and the scopes of a camera (name, hardware). It
 * ignores probes for other types, Hellos, Byes and its own messages, as cameras do. */
#ifndef KP_CAM_WSD_RESPONDER_H
#define KP_CAM_WSD_RESPONDER_H

#include <uv.h>

/* address: what XAddrs names (the camera's own IP, as a real one knows it); name and
 * model go to the scopes. Returns 0 or a negative errno. */
int cam_wsd_start(uv_loop_t *loop, const char *address, const char *name, const char *model);

/* Probes answered and ignored so far (the --stats file). */
void cam_wsd_counts(unsigned long long *answered, unsigned long long *ignored);

#endif
