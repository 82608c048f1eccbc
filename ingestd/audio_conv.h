/* ingestd's one conversion of camera audio that fMP4 cannot hold as it comes (Baichuan's
 * IMA ADPCM, G.711 from RTSP cameras) to Opus with libopus, once, before recorderd and
 * rtcd (docs/decisions/0034-audio-conversion-to-opus.md, which replaced AAC through
 * FFmpeg): the camera's codec decoded by our own decoders (audio_g711.h, audio_adpcm.h),
 * its samples collected into 20 ms frames at the camera's rate and encoded mono,
 * OPUS_APPLICATION_AUDIO, ING_AUDIO_CONV_BITRATE VBR. Opus takes 8, 12, 16, 24 and 48 kHz;
 * audio at any other rate is refused (not recorded). A packet's time is on the video's
 * clock: a run of input samples is anchored at the first unit's time and moved when a
 * unit arrives more than ING_AUDIO_CONV_RESYNC_MS away from where the run expects it; the
 * packet's time is that of its first input sample less the encoder's lookahead
 * (OPUS_GET_LOOKAHEAD), the samples by which the decoded audio trails the input, so that
 * a player that starts each packet at its time (an MP4 with PreSkip 0, WebRTC) plays each
 * sound when the camera heard it. Out: KP_AUDIO_OPUS, 48 kHz timescale (RFC 7587), 960
 * samples a packet. */
#ifndef KP_ING_AUDIO_CONV_H
#define KP_ING_AUDIO_CONV_H

#include "camera.h"

#define ING_AUDIO_CONV_BITRATE    24000
#define ING_AUDIO_CONV_RESYNC_MS  500
#define ING_AUDIO_CONV_FRAME_MS   20
#define ING_AUDIO_CONV_UNIT_MAX   KP_AAC_FRAME_MAX /* bytes of one camera unit */
#define ING_AUDIO_CONV_PACKET_MAX 1500             /* bytes of one Opus packet (20 ms: <= 1,276) */

struct ing_audio_conv;

typedef void (*ing_audio_out)(void *arg, const struct kp_audio_unit *au);

/* Converts one unit (ADPCM block, G.711 packet); every Opus packet it completes goes to
 * out. A new converter when *c is NULL or the input's codec or rate changed. 0, or a
 * negative errno with *ret_reason set (the unit is dropped): -EPROTONOSUPPORT for audio
 * Opus cannot take (not mono, a rate it has not; the converter is not made),
 * -EMSGSIZE for a unit over ING_AUDIO_CONV_UNIT_MAX bytes, -EBADMSG for one that does not
 * decode, -ENOMEM, -EIO when libopus fails. */
int ing_audio_conv_push(struct ing_audio_conv **c, const struct kp_audio_unit *in, ing_audio_out out, void *arg,
			const char **ret_reason);
void ing_audio_conv_free(struct ing_audio_conv **c);

#endif
