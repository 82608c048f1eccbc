/* libFuzzer harness for the three encodings of POST /api/v1/events (webd/publish_*.c)
 * and the JPEG check: the first byte picks JSON, multipart (boundary "b") or protobuf;
 * a JPEG read from any of them goes through the check. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kp_limits.h"
#include "publish.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t *buf;
	static struct webd_publish p;
	if (!buf && !(buf = malloc(KP_ANALYSIS_JPEG_MAX)))
		return 0;
	if (size < 1)
		return 0;
	memset(&p, 0, sizeof(p));
	p.jpeg_buf = buf;
	p.jpeg_cap = KP_ANALYSIS_JPEG_MAX;
	struct publish_err e;
	int rc;
	switch (data[0] % 3) {
	case 0:
		rc = webd_publish_json(data + 1, size - 1, &p, &e);
		break;
	case 1:
		rc = webd_publish_multipart(data + 1, size - 1, "multipart/form-data; boundary=b", &p, &e);
		break;
	default:
		rc = webd_publish_proto(data + 1, size - 1, &p, &e);
		break;
	}
	if (rc == 0 && p.jpeg) {
		uint32_t w, h;
		webd_publish_jpeg_check(p.jpeg, p.jpeg_len, &w, &h, &e);
	}
	return 0;
}
