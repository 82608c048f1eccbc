/* The decoder configuration records an MP4 sample entry carries: avcC (ISO/IEC 14496-15
 * 5.3.3.1) from an H.264 SPS and PPS, hvcC (8.3.3.1) from an H.265 VPS, SPS and PPS, with
 * the profile, level and format fields read from the SPS; and the way back, from a record
 * (or an RTSP camera's extradata) to Annex-B parameter sets and the NAL length size of
 * the samples. Pure; fuzzed by test/fuzz/fuzz_h26x.c and through the fMP4 reader's. */
#ifndef KP_H26X_CONFIG_H
#define KP_H26X_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "h26x.h"

#define H26X_CONFIG_MAX (64 + 3 * (5 + H26X_PS_MAX))

/* Writes the record into out (cap bytes) and its length to *ret_len. -EINVAL when a
 * parameter set is missing, -EBADMSG when the SPS does not parse, -ENOSPC past cap. */
int h26x_config_write(enum kp_codec codec, const struct h26x_param_sets *ps, uint8_t *out, size_t cap, size_t *ret_len);

/* The parameter sets of an avcC or hvcC record (other units skipped) as Annex-B with
 * 4-byte start codes into out (cap bytes), and the samples' NAL length size (1, 2 or 4).
 * 0, or -EBADMSG / -ENOBUFS with *ret_reason set. */
int h26x_config_read(enum kp_codec codec, const uint8_t *cfg, size_t len, uint8_t *out, size_t cap, size_t *ret_len,
		     unsigned *ret_lsz, const char **ret_reason);

#endif
