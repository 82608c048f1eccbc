/* The decoder configuration records an MP4 sample entry carries: avcC (ISO/IEC 14496-15
 * 5.3.3.1) from an H.264 SPS and PPS, hvcC (8.3.3.1) from an H.265 VPS, SPS and PPS, with
 * the profile, level and format fields read from the SPS. Pure; fuzzed with nal.c. */
#ifndef KP_REC_CODEC_CONFIG_H
#define KP_REC_CODEC_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "nal.h"

#define REC_CODEC_CONFIG_MAX (64 + 3 * (5 + REC_PS_MAX))

/* Writes the record into out (cap bytes) and its length to *ret_len. -EINVAL when a
 * parameter set is missing, -EBADMSG when the SPS does not parse, -ENOSPC past cap. */
int rec_codec_config(enum rec_codec codec, const struct rec_param_sets *ps, uint8_t *out, size_t cap, size_t *ret_len);

#endif
