/* IMA ADPCM DVI-4 blocks to linear PCM (see audio_adpcm.h). */
#include "audio_adpcm.h"

#include <errno.h>

/* The IMA ADPCM tables (IMA Digital Audio Focus and Technical Working Groups, "Recommended
 * Practices for Enhancing Digital Audio Compatibility in Multimedia Systems", 1992), as
 * libavcodec's adpcm_data.c has them. */
const int8_t ing_adpcm_index_table[16] = {-1, -1, -1, -1, 2, 4, 6, 8, -1, -1, -1, -1, 2, 4, 6, 8};

const int16_t ing_adpcm_step_table[ING_ADPCM_STEP_INDEX_MAX + 1] = {
    7,    8,     9,     10,    11,    12,    13,    14,    16,    17,    19,    21,    23,    25,   28,
    31,   34,    37,    41,    45,    50,    55,    60,    66,    73,    80,    88,    97,    107,  118,
    130,  143,   157,   173,   190,   209,   230,   253,   279,   307,   337,   371,   408,   449,  494,
    544,  598,   658,   724,   796,   876,   963,   1060,  1166,  1282,  1411,  1552,  1707,  1878, 2066,
    2272, 2499,  2749,  3024,  3327,  3660,  4026,  4428,  4871,  5358,  5894,  6484,  7132,  7845, 8630,
    9493, 10442, 11487, 12635, 13899, 15289, 16818, 18500, 20350, 22385, 24623, 27086, 29794, 32767};

size_t ing_adpcm_block_samples(size_t len)
{
	return len < ING_ADPCM_HEADER ? 0 : 1 + (len - ING_ADPCM_HEADER) / 4 * 8;
}

/* One nibble: the new predictor (returned and kept) and step index. */
static int16_t expand(int *predictor, int *index, unsigned nibble)
{
	int step = ing_adpcm_step_table[*index];
	int diff = ((2 * (int)(nibble & 7u) + 1) * step) >> 3;
	int p = (nibble & 8u) ? *predictor - diff : *predictor + diff;
	p = p < INT16_MIN ? INT16_MIN : p > INT16_MAX ? INT16_MAX : p;
	int i = *index + ing_adpcm_index_table[nibble & 15u];
	*index = i < 0 ? 0 : i > ING_ADPCM_STEP_INDEX_MAX ? ING_ADPCM_STEP_INDEX_MAX : i;
	*predictor = p;
	return (int16_t)p;
}

int ing_adpcm_decode_block(const uint8_t *b, size_t len, int16_t *out, size_t cap, const char **why)
{
	if (len < ING_ADPCM_HEADER) {
		*why = "ADPCM block shorter than its 4-byte header";
		return -EBADMSG;
	}
	if (b[2] > ING_ADPCM_STEP_INDEX_MAX) {
		*why = "ADPCM block's step index is above 88";
		return -EBADMSG;
	}
	if (b[3] != 0) {
		*why = "ADPCM block's reserved header byte is not 0";
		return -EBADMSG;
	}
	size_t n = ing_adpcm_block_samples(len);
	if (n > cap || n > INT32_MAX) {
		*why = "ADPCM block decodes to more samples than the buffer holds";
		return -ENOSPC;
	}
	int predictor = (int16_t)(uint16_t)(b[0] | b[1] << 8), index = b[2];
	out[0] = (int16_t)predictor;
	size_t k = 1;
	for (size_t at = ING_ADPCM_HEADER; at + 4 <= len; at += 4)
		for (size_t j = 0; j < 4; j++) {
			out[k++] = expand(&predictor, &index, b[at + j] & 0x0fu);
			out[k++] = expand(&predictor, &index, b[at + j] >> 4);
		}
	return (int)n;
}
