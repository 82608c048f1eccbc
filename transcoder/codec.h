/* What a job's codec (video.c, audio.c) hands back for every frame it encodes, on the
 * job's thread: job.c queues it for the loop, which sends it to rtcd. */
#ifndef KP_TX_CODEC_H
#define KP_TX_CODEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct tx_packet {
	const uint8_t *data;
	size_t len;
	bool keyframe;
	int64_t pts; /* video: 90 kHz; audio: 1/rate */
	unsigned width, height;
	unsigned rate, channels;
};

typedef void (*tx_emit_cb)(void *arg, const struct tx_packet *p);

#endif
