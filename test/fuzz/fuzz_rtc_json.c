/* libFuzzer harness: rtcd's signaling messages read through the common JSON reader. */
#include <stddef.h>
#include <stdint.h>

#include "signal_msg.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct rtc_json j;
	const char *why;
	if (rtc_json_parse((const char *)data, size, &j, &why) == 0) {
		double d;
		rtc_json_str(&j, "type");
		rtc_json_num(&j, "at_ms", &d);
	}
	return 0;
}
