/* The AAC -> Opus pipeline of one audio job, without threads: libavcodec's aac decoder
 * (the track's AudioSpecificConfig as extradata), libswresample to 48 kHz (mono stays
 * mono, stereo stereo, more channels are mixed down to stereo), and libopus through
 * libavcodec in 20 ms packets (960 samples at 48 kHz, RFC 7587's clock). job.c runs it
 * on a job's thread. */
#ifndef KP_TX_AUDIO_H
#define KP_TX_AUDIO_H

#include <stddef.h>
#include <stdint.h>

#include "codec.h"

#define TX_OPUS_RATE    48000
#define TX_OPUS_SAMPLES 960 /* 20 ms at 48 kHz */

struct tx_audio;

/* 0, or a negative errno with a log line saying what failed. rate and channels are
 * the input's (8,000 to 96,000 Hz, 1 to 8 channels). */
int tx_audio_open(const char *name, unsigned rate, unsigned channels, const uint8_t *config, size_t config_len,
		  struct tx_audio **ret);
/* Decodes one raw AAC frame whose first sample is at pts (1/rate) and emits every whole
 * Opus packet it completes (pts in 1/48,000). A pts that does not follow the previous
 * frame (frames were dropped) starts the packets again from it. 0, or a negative errno
 * (the frame was dropped). */
int tx_audio_push(struct tx_audio *a, const uint8_t *data, size_t len, int64_t pts, tx_emit_cb out, void *arg);
void tx_audio_free(struct tx_audio *a);

#endif
