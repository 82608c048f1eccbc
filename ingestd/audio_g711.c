/* G.711 mu-law and A-law to linear PCM (see audio_g711.h). */
#include "audio_g711.h"

/* Mu-law: the code is sent inverted; bits 6..4 are the segment, 3..0 the step within it.
 * The magnitude is ((step << 3) + 132) << segment, less the bias 132 (G.711 table 2a,
 * times 4 for 16 bits). */
int16_t ing_g711_ulaw(uint8_t code)
{
	unsigned u = (unsigned)(uint8_t)~code;
	int t = (int)((((u & 0x0fu) << 3) + 0x84u) << ((u & 0x70u) >> 4));
	return (int16_t)((u & 0x80u) ? 0x84 - t : t - 0x84);
}

/* A-law: even bits inverted (XOR 0x55); segment 0 is linear, each further one doubles
 * the step (G.711 table 1a, times 8 for 16 bits, the interval's midpoint). Bit 7 set
 * means positive. */
int16_t ing_g711_alaw(uint8_t code)
{
	unsigned a = code ^ 0x55u;
	unsigned seg = (a & 0x70u) >> 4;
	int t = (int)((a & 0x0fu) << 4);
	if (seg == 0)
		t += 8;
	else
		t = (t + 0x108) << (seg - 1);
	return (int16_t)((a & 0x80u) ? t : -t);
}

void ing_g711_decode(const uint8_t *in, size_t len, int16_t *out, int alaw)
{
	for (size_t i = 0; i < len; i++)
		out[i] = alaw ? ing_g711_alaw(in[i]) : ing_g711_ulaw(in[i]);
}
