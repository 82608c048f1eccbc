/* libFuzzer harness for the WS-Discovery ProbeMatches reader (ingestd/discover/wsd.c):
 * any datagram a host on the segment sends to our probe's port. */
#include <stddef.h>
#include <stdint.h>

#include "wsd.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct wsd_match m;
	wsd_match_parse((const char *)data, size, "uuid:0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f0", &m);
	return 0;
}
