/* Event input checks and the search cursor (see event_check.h). */
#include "event_check.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <turbojpeg.h>

#include "kp_limits.h"

int rec_event_id_ok(const char *id)
{
	size_t n = 0;
	for (; id[n]; n++) {
		char c = id[n];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
		      c == '_' || c == ':' || c == '-'))
			return -EINVAL;
	}
	return n >= 1 && n <= 64 ? 0 : -EINVAL;
}

static int reject(struct rec_reject *rej, kp_CatalogResult result, const char *code, const char *why, int err)
{
	rej->result = result;
	rej->code = code;
	snprintf(rej->why, sizeof rej->why, "%s", why);
	return err;
}

int rec_event_times_check(int64_t start_ms, int64_t end_ms, int64_t now_ms, struct rec_reject *rej)
{
	if (start_ms < REC_EVENT_EARLIEST_MS)
		return reject(rej, kp_CatalogResult_CATALOG_BAD_REQUEST, "bad_times",
			      "start_ms must be a Unix time in milliseconds from 2000 on", -EINVAL);
	if (start_ms > now_ms && start_ms - now_ms > REC_EVENT_AHEAD_MS)
		return reject(rej, kp_CatalogResult_CATALOG_BAD_REQUEST, "bad_times",
			      "start_ms is more than a day in the future", -EINVAL);
	if (end_ms && end_ms < start_ms)
		return reject(rej, kp_CatalogResult_CATALOG_BAD_REQUEST, "bad_times", "end_ms is before start_ms",
			      -EINVAL);
	if (end_ms && end_ms - start_ms > REC_EVENT_MAX_SPAN_MS)
		return reject(rej, kp_CatalogResult_CATALOG_BAD_REQUEST, "bad_times", "an event lasts at most 24 hours",
			      -EINVAL);
	return 0;
}

int rec_jpeg_check(const uint8_t *p, size_t len, uint32_t *ret_width, uint32_t *ret_height, struct rec_reject *rej)
{
	if (len > KP_ANALYSIS_JPEG_MAX)
		return reject(rej, kp_CatalogResult_CATALOG_TOO_LARGE, "jpeg_too_large",
			      "the JPEG is larger than 16 MiB", -EMSGSIZE);
	if (len < 4 || p[0] != 0xff || p[1] != 0xd8)
		return reject(rej, kp_CatalogResult_CATALOG_BAD_REQUEST, "bad_jpeg",
			      "the JPEG does not start with SOI (FF D8)", -EINVAL);
	if (p[len - 2] != 0xff || p[len - 1] != 0xd9)
		return reject(rej, kp_CatalogResult_CATALOG_BAD_REQUEST, "bad_jpeg",
			      "the JPEG does not end with EOI (FF D9)", -EINVAL);
	tjhandle h = tjInitDecompress();
	if (!h)
		return reject(rej, kp_CatalogResult_CATALOG_BAD_REQUEST, "bad_jpeg",
			      "libturbojpeg could not be initialised", -ENOMEM);
	int w = 0, hh = 0, sub = 0, cs = 0;
	int r = tjDecompressHeader3(h, p, (unsigned long)len, &w, &hh, &sub, &cs);
	if (r < 0) {
		reject(rej, kp_CatalogResult_CATALOG_BAD_REQUEST, "bad_jpeg", "", -EINVAL);
		snprintf(rej->why, sizeof rej->why, "the JPEG header does not parse: %s", tjGetErrorStr2(h));
	}
	tjDestroy(h);
	if (r < 0)
		return -EINVAL;
	if (w <= 0 || hh <= 0)
		return reject(rej, kp_CatalogResult_CATALOG_BAD_REQUEST, "bad_jpeg", "the JPEG has no picture size",
			      -EINVAL);
	*ret_width = (uint32_t)w;
	*ret_height = (uint32_t)hh;
	return 0;
}

void rec_cursor_encode(int64_t start_ms, uint64_t seq, char out[REC_CURSOR_LEN + 1])
{
	snprintf(out, REC_CURSOR_LEN + 1, "c1.%016llx.%016llx", (unsigned long long)((uint64_t)start_ms ^ (1ull << 63)),
		 (unsigned long long)seq);
}

static int hex16(const char *s, uint64_t *ret)
{
	uint64_t v = 0;
	for (int i = 0; i < 16; i++) {
		char c = s[i];
		unsigned d;
		if (c >= '0' && c <= '9')
			d = (unsigned)(c - '0');
		else if (c >= 'a' && c <= 'f')
			d = (unsigned)(c - 'a' + 10);
		else
			return -EINVAL;
		v = v << 4 | d;
	}
	*ret = v;
	return 0;
}

int rec_cursor_decode(const char *s, int64_t *ret_start_ms, uint64_t *ret_seq)
{
	if (strnlen(s, REC_CURSOR_LEN + 1) != REC_CURSOR_LEN || memcmp(s, "c1.", 3) || s[19] != '.')
		return -EINVAL;
	uint64_t t, seq;
	if (hex16(s + 3, &t) < 0 || hex16(s + 20, &seq) < 0 || seq == 0)
		return -EINVAL;
	*ret_start_ms = (int64_t)(t ^ (1ull << 63));
	*ret_seq = seq;
	return 0;
}
