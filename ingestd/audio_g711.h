/* G.711 (ITU-T Recommendation G.711, 11/88) to 16-bit linear PCM: mu-law (PCMU, RFC 3551
 * payload type 0) and A-law (PCMA, type 8), one byte per sample, as RTSP cameras send
 * them. The decoding formulas of G.711's tables 1a and 2a, scaled to 16 bits as in the
 * reference g711.c that libavcodec's pcm_mulaw/pcm_alaw decoders use
 * (libavcodec/pcm_tablegen.h): mu-law spans -32124..32124, A-law -32256..32256. Every
 * byte is a valid code, so decoding cannot fail. Pure. */
#ifndef KP_ING_AUDIO_G711_H
#define KP_ING_AUDIO_G711_H

#include <stddef.h>
#include <stdint.h>

int16_t ing_g711_ulaw(uint8_t code);
int16_t ing_g711_alaw(uint8_t code);

/* len codes from in to len samples in out; alaw selects the law. */
void ing_g711_decode(const uint8_t *in, size_t len, int16_t *out, int alaw);

#endif
