/* libFuzzer harness for tierd's S3 answer reader (tierd/s3_xml.c): every answer parser
 * over the same bytes, then the invariants a caller relies on (strings terminated and
 * within their buffers, an upload id never empty, parts ascending within 1..10000; a
 * completion's ETag may be empty: Ceph RGW 16 answers so). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "s3_xml.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct s3_part parts[S3_LIST_PARTS_PAGE];
	char code[S3_ERR_CODE_MAX], id[S3_UPLOAD_ID_MAX], etag[S3_ETAG_MAX];
	const char *buf = (const char *)data;
	size_t n;
	int truncated;
	uint32_t next;

	if (s3_xml_error(buf, size, code) == 0 && strlen(code) >= sizeof(code))
		abort();
	if (s3_xml_initiate(buf, size, id) == 0 && (id[0] == '\0' || strlen(id) >= sizeof(id)))
		abort();
	if (s3_xml_complete(buf, size, etag, code) == 0 && strlen(etag) >= sizeof(etag))
		abort();
	if (s3_xml_list_parts(buf, size, parts, S3_LIST_PARTS_PAGE, &n, &truncated, &next) == 0) {
		if (n > S3_LIST_PARTS_PAGE || (truncated && next == 0))
			abort();
		for (size_t i = 0; i < n; i++)
			if (parts[i].number < 1 || parts[i].number > 10000 ||
			    (i && parts[i].number <= parts[i - 1].number))
				abort();
	}
	return 0;
}
