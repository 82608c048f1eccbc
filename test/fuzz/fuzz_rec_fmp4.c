/* libFuzzer harness for the fMP4 reader start-up recovery runs over whatever a crash left
 * at the end of a recording file: the init segment and fragment parsers. */
#include <stddef.h>
#include <stdint.h>

#include "fmp4.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rec_track t;
	size_t init_len = 0;
	if (rec_fmp4_init_parse(data, size, &t, &init_len) == 0) {
		data += init_len;
		size -= init_len;
	}
	struct rec_frag_info fi;
	while (size && rec_fmp4_frag_parse(data, size, &fi) == 0 && fi.total_len <= size) {
		data += fi.total_len;
		size -= fi.total_len;
	}
	return 0;
}
