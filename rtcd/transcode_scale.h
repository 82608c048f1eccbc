/* Downscaling of decoded YUV 4:2:0 pictures to the transcoder's output size by box
 * averaging over an integer factor (1920x1080 / 3 = 640x360): pure, no libswscale. */
#ifndef KP_RTC_TRANSCODE_SCALE_H
#define KP_RTC_TRANSCODE_SCALE_H

#include <stdint.h>

/* Pictures at most this wide come out unscaled; wider ones by the smallest factor that
 * brings them to it or below (a camera's sub-stream width). */
#define RTC_TRANSCODE_WIDTH 640

struct rtc_plane {
	uint8_t *data;
	int stride;
};

/* The integer factor for a source width (1 when no scaling). */
unsigned rtc_scale_factor(unsigned width);
/* Output size for a source of w x h: divided by the factor, rounded down to even. */
void rtc_scale_size(unsigned w, unsigned h, unsigned *ret_w, unsigned *ret_h);
/* Scales the three planes of a w x h picture into dst (sized by rtc_scale_size). */
void rtc_scale_yuv420(const struct rtc_plane src[3], unsigned w, unsigned h, struct rtc_plane dst[3]);

#endif
