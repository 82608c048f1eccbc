/* Downscaling of decoded YUV 4:2:0 pictures to the transcoder's output size by box
 * averaging over an integer factor (1920x1080 / 3 = 640x360): pure, no libswscale. */
#ifndef KP_TX_SCALE_H
#define KP_TX_SCALE_H

#include <stdint.h>

/* Pictures at most this wide come out unscaled; wider ones by the smallest factor that
 * brings them to it or below (a camera's sub-stream width). */
#define TX_VIDEO_WIDTH 640

struct tx_plane {
	uint8_t *data;
	int stride;
};

/* The integer factor for a source width (1 when no scaling). */
unsigned tx_scale_factor(unsigned width);
/* Output size for a source of w x h: divided by the factor, rounded down to even. */
void tx_scale_size(unsigned w, unsigned h, unsigned *ret_w, unsigned *ret_h);
/* Scales the three planes of a w x h picture into dst (sized by tx_scale_size). */
void tx_scale_yuv420(const struct tx_plane src[3], unsigned w, unsigned h, struct tx_plane dst[3]);

#endif
