/* libFuzzer harness for BcMedia: the input is split into msg 3 payloads at the offsets
 * named by its first bytes and pushed through the reassembly buffer with resync. */
#include <stddef.h>
#include <stdint.h>

#include "bc_media.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	size_t step = (size_t)data[0] * 7 + 1;
	data++;
	size--;
	struct bc_media_stream m = {0};
	struct bc_media_record r;
	size_t sum = 0;
	for (size_t off = 0; off < size; off += step) {
		size_t n = size - off < step ? size - off : step;
		if (bc_media_stream_push(&m, data + off, n) < 0)
			break;
		while (bc_media_stream_next(&m, &r) == 0)
			for (size_t i = 0; i < r.len; i++)
				sum += r.data[i]; /* touch every payload byte */
	}
	bc_media_stream_free(&m);
	return (int)(sum & 0);
}
