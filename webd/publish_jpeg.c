/* The JPEG check webd makes before a publication goes to recorderd: SOI (FF D8) first,
 * EOI (FF D9) last, and a header libturbojpeg can read (tjDecompressHeader3). */
#include <turbojpeg.h>

#include "kp_limits.h"
#include "publish.h"

int webd_publish_jpeg_check(const uint8_t *jpeg, size_t len, uint32_t *width, uint32_t *height, struct publish_err *e)
{
	if (len > KP_ANALYSIS_JPEG_MAX)
		return webd_publish_fail(e, 413, "jpeg_too_large", "the JPEG has %zu bytes, more than %u", len,
					 (unsigned)KP_ANALYSIS_JPEG_MAX);
	if (len < 4 || jpeg[0] != 0xff || jpeg[1] != 0xd8)
		return webd_publish_fail(e, 400, "bad_jpeg", "the JPEG does not start with SOI (FF D8)");
	if (jpeg[len - 2] != 0xff || jpeg[len - 1] != 0xd9)
		return webd_publish_fail(e, 400, "bad_jpeg", "the JPEG does not end with EOI (FF D9)");
	static tjhandle tj;
	if (!tj)
		tj = tjInitDecompress();
	if (!tj)
		return webd_publish_fail(e, 500, "jpeg_check_failed", "libturbojpeg cannot start: %s",
					 tjGetErrorStr2(NULL));
	int w = 0, h = 0, subsamp, colorspace; /* a tables-only stream leaves them as they are */
	if (tjDecompressHeader3(tj, jpeg, (unsigned long)len, &w, &h, &subsamp, &colorspace) != 0)
		return webd_publish_fail(e, 400, "bad_jpeg", "the JPEG header does not parse: %s", tjGetErrorStr2(tj));
	if (w <= 0 || h <= 0)
		return webd_publish_fail(e, 400, "bad_jpeg", "the JPEG header has no frame size: %s",
					 tjGetErrorStr2(tj));
	*width = (uint32_t)w;
	*height = (uint32_t)h;
	return 0;
}
