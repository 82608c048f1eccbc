/* IMA ADPCM in the DVI-4 block layout Reolink's Baichuan cameras send (one 01wb record per
 * block), mono, decoded exactly as libavcodec's adpcm_ima_wav decoder with 4 bits per
 * sample decodes it (FFmpeg libavcodec/adpcm.c: get_nb_samples, the ADPCM_IMA_WAV case of
 * adpcm_decode_frame, adpcm_ima_expand_nibble), which ingestd used until decision 0034:
 *
 *   bytes 0-1  the predictor, 16-bit little endian, signed: the block's first sample;
 *   byte  2    the step index, 0..88;
 *   byte  3    reserved, 0 (libavcodec reads bytes 2-3 as one 16-bit step index, so a
 *              block whose byte 3 is not 0 is refused there as here);
 *   then       groups of 4 bytes, 8 samples each, low nibble first; trailing bytes short
 *              of a group are ignored (as libavcodec does).
 *
 * A block of len bytes gives 1 + (len - 4) / 4 * 8 samples. Each nibble n moves the
 * predictor by ((2 * (n & 7) + 1) * step) >> 3, down when n & 8, clamped to 16 bits; the
 * step index moves by the IMA index table, clamped to 0..88. Pure; camera input, fuzzed
 * by test/fuzz/fuzz_audio_decode.c. */
#ifndef KP_ING_AUDIO_ADPCM_H
#define KP_ING_AUDIO_ADPCM_H

#include <stddef.h>
#include <stdint.h>

#define ING_ADPCM_HEADER         4
#define ING_ADPCM_STEP_INDEX_MAX 88

/* The IMA tables (index moves per nibble, step per index), shared with the encoder of
 * the converter's unit test. */
extern const int8_t ing_adpcm_index_table[16];
extern const int16_t ing_adpcm_step_table[ING_ADPCM_STEP_INDEX_MAX + 1];

/* Samples a block of len bytes decodes to; 0 for one shorter than its header. */
size_t ing_adpcm_block_samples(size_t len);

/* Decodes one block into out (room for cap samples). The number of samples, or -EBADMSG
 * (a block shorter than its header, a step index above 88, a reserved byte not 0) or
 * -ENOSPC (cap too small), with *why saying which. */
int ing_adpcm_decode_block(const uint8_t *block, size_t len, int16_t *out, size_t cap, const char **why);

#endif
