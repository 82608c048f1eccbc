/* ingestd's one conversion of camera audio that fMP4 cannot hold as it comes (Baichuan's
 * ADPCM, G.711 from RTSP cameras) to AAC-LC with libavcodec, once, before recorderd
 * (docs/decisions/0012-audio-recording.md): the camera's codec decoded, its samples
 * collected into frames of 1,024 and encoded at the same rate and channel count (mono),
 * 32 kbit/s. An AAC frame's time is the time of its first input sample on the video's
 * clock: a run of input samples is anchored at the first unit's time and moved when a
 * unit arrives more than half a second away from where the run expects it. */
#ifndef KP_ING_AUDIO_CONV_H
#define KP_ING_AUDIO_CONV_H

#include "camera.h"

#define ING_AUDIO_CONV_BITRATE   32000
#define ING_AUDIO_CONV_RESYNC_MS 500

struct ing_audio_conv;

typedef void (*ing_audio_out)(void *arg, const struct kp_audio_unit *au);

/* Converts one unit (ADPCM block, G.711 packet); every AAC frame it completes goes to
 * out. A new converter when *c is NULL or the input format changed. 0, or a negative
 * errno with *ret_reason set (the unit is dropped). */
int ing_audio_conv_push(struct ing_audio_conv **c, const struct kp_audio_unit *in, ing_audio_out out, void *arg,
			const char **ret_reason);
void ing_audio_conv_free(struct ing_audio_conv **c);

#endif
