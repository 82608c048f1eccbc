/* libFuzzer harness for the test camera's RTSP request parser: a byte stream of
 * pipelined requests; for each, the Authorization and Transport headers are parsed and
 * the digest checked, as the server does. */
#include <stddef.h>
#include <stdint.h>

#include "rtsp_digest.h"
#include "rtsp_request.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct rtsp_request req;
	const char *why;
	/* The whole input as a header value too. */
	struct rtsp_str whole = {(const char *)data, size};
	struct rtsp_digest d;
	struct rtsp_transport t;
	rtsp_digest_parse(whole, &d, &why);
	rtsp_transport_parse(whole, &t, &why);
	while (size) {
		size_t used;
		if (rtsp_request_parse(data, size, &req, &used, &why) < 0)
			return 0;
		if (used == 0 || used > size)
			__builtin_trap();
		const struct rtsp_str *h = rtsp_request_header(&req, "Authorization");
		if (h && rtsp_digest_parse(*h, &d, &why) == 0)
			cam_digest_check(&d, req.method, "admin", "secret", "KeepPeek", "0123456789abcdef");
		h = rtsp_request_header(&req, "Transport");
		if (h)
			rtsp_transport_parse(*h, &t, &why);
		data += used;
		size -= used;
	}
	return 0;
}
