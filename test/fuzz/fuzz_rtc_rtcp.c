/* libFuzzer harness: rtcd's RTCP compound parser (browser feedback). */
#include <stddef.h>
#include <stdint.h>

#include "rtcp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rtcp_feedback fb;
	const char *why;
	uint32_t ssrc = size >= 12 ? (uint32_t)data[8] << 24 | (uint32_t)data[9] << 16 | data[10] << 8 | data[11] : 0;
	rtcp_parse(data, size, ssrc, &fb, &why);
	return 0;
}
