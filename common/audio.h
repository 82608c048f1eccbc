/* Camera audio as recorded, shared by ingestd (which parses what cameras send), recorderd
 * (which writes it as the second track of a recording) and the fMP4 reader: the codecs,
 * one track's format, and AAC's framing: the ADTS header (ISO/IEC 13818-7 6.2, 14496-3
 * 1.A.2.2) whose frames Baichuan cameras send, and the AudioSpecificConfig (14496-3
 * 1.6.2.1) an MP4 esds carries and RTSP cameras give in their SDP config; and the
 * length of an Opus packet (RFC 6716 3.1) that RTSP cameras send (RFC 7587). Pure; the
 * ADTS, AudioSpecificConfig and Opus readers take camera input and are fuzzed by
 * test/fuzz/fuzz_audio.c. */
#ifndef KP_AUDIO_H
#define KP_AUDIO_H

#include <stddef.h>
#include <stdint.h>

/* What is recorded is AAC and Opus; the others are what cameras send that ingestd
 * converts to Opus once (docs/decisions/0034-audio-conversion-to-opus.md). */
enum kp_audio_codec {
	KP_AUDIO_NONE = 0,
	KP_AUDIO_AAC = 1,
	KP_AUDIO_OPUS = 2,
	KP_AUDIO_ADPCM_IMA, /* DVI-4 blocks: a 4-byte predictor state, then 4-bit samples */
	KP_AUDIO_PCMU,      /* G.711 mu-law */
	KP_AUDIO_PCMA,      /* G.711 A-law */
};

#define KP_AUDIO_CONFIG_MAX 64   /* AudioSpecificConfig bytes kept */
#define KP_ADTS_HEADER_MAX  9    /* with the CRC */
#define KP_AAC_FRAME_MAX    8192 /* 6144 bits per channel (14496-3 4.5.3.2) for 8 channels */

/* One audio track: what its sample entry needs. */
struct kp_audio_format {
	enum kp_audio_codec codec;
	uint32_t rate;                       /* samples per second: the track's timescale */
	uint32_t channels;                   /* 1..8 */
	uint32_t frame_samples;              /* samples per access unit (1024 for AAC-LC) */
	uint8_t config[KP_AUDIO_CONFIG_MAX]; /* AAC: AudioSpecificConfig */
	size_t config_len;
};

/* One ADTS frame at the start of buf: its header length, the whole frame's length and
 * the format it gives (an AudioSpecificConfig built from its fields). 0; -EAGAIN when
 * buf ends inside the frame; -EBADMSG when it is not an ADTS header or says what we do
 * not record (more than one raw data block per frame, a reserved rate, channel
 * configuration 0). */
int kp_adts_parse(const uint8_t *buf, size_t len, size_t *ret_header_len, size_t *ret_frame_len,
		  struct kp_audio_format *ret);

/* The format an AudioSpecificConfig gives (rate, channels, samples per frame; the bytes
 * are kept as the config). 0, or -EBADMSG for one that is cut short, names a reserved
 * rate or index, or is longer than KP_AUDIO_CONFIG_MAX. */
int kp_aac_config_parse(const uint8_t *asc, size_t len, struct kp_audio_format *ret);

/* Samples at 48 kHz in one Opus packet, from its TOC byte and frame count (RFC 6716
 * 3.1, 3.2.5): 0 for a packet that is empty, says code 3 without its count byte, or
 * lasts more than 120 ms (3.2.5). */
uint32_t kp_opus_packet_samples(const uint8_t *p, size_t len);

/* Whether two formats would make the same sample entry. */
int kp_audio_format_same(const struct kp_audio_format *a, const struct kp_audio_format *b);

#endif
