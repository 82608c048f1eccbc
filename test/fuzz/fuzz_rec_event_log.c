/* libFuzzer harness for recorderd's event log reader (recorderd/event_log_format.c): the
 * input is a segment file as a rebuild, check or compaction reads it. Every item the
 * reader accepts must lie inside the input and encode again to an item the reader
 * accepts with the same fields (nothing misparsed); the reader must stop at the first
 * item that does not check. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "event_log.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint64_t seq;
	size_t off = rec_evlog_check_header(data, size, &seq) == 0 ? REC_EVLOG_HEADER : 0;
	static kp_EventRecord ev, again;
	static uint8_t item[REC_EVLOG_ITEM_MAX];
	struct rec_evlog_item it;
	while (rec_evlog_next(data, size, &off, &it, &ev) == 0) {
		if (it.off + it.len != off || off > size || it.len < REC_EVLOG_ITEM_HEADER)
			abort();
		size_t n, at = 0;
		struct rec_evlog_item it2;
		if (rec_evlog_encode(it.kind, &ev, item, sizeof item, &n) != 0 ||
		    rec_evlog_next(item, n, &at, &it2, &again) != 0 || it2.kind != it.kind || at != n ||
		    strcmp(again.event_id, ev.event_id) || again.revision != ev.revision ||
		    again.committed_ms != ev.committed_ms)
			abort();
	}
	return 0;
}
