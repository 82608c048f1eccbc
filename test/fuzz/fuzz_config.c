/* libFuzzer harness for configuration parsing (inih plus our validation). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct kp_config cfg;
	static struct kp_config_errors errs;
	static char out[256 * 1024];
	char *text = malloc(size + 1);
	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	if (kp_config_load_string("fuzz.conf", text, &cfg, &errs) == 0)
		kp_config_render(&cfg, out, sizeof out);
	free(text);
	return 0;
}
