/* Thumbnails of event JPEGs: REC_THUMB_WIDTH pixels wide (height by aspect ratio; a
 * narrower picture keeps its size), made with libturbojpeg: a DCT-scaled decode to the
 * smallest scale at least that wide, a box-filter reduction, an encode at quality 80. */
#ifndef KP_REC_THUMBNAIL_H
#define KP_REC_THUMBNAIL_H

#include <stddef.h>
#include <stdint.h>

#define REC_THUMB_WIDTH   320
#define REC_THUMB_QUALITY 80

/* *ret is malloc'ed (free it); -EINVAL when the JPEG does not decode. */
int rec_thumbnail_make(const uint8_t *jpeg, size_t len, uint8_t **ret, size_t *ret_len);

#endif
