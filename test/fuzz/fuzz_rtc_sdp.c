/* libFuzzer harness: rtcd's SDP offer parser, codec choice and answer writer. */
#include <stddef.h>
#include <stdint.h>

#include "sdp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct sdp_offer o;
	static char answer[16384];
	char err[256];
	if (sdp_parse_offer((const char *)data, size, &o, err, sizeof err) < 0)
		return 0;
	const struct sdp_codec *c = NULL;
	for (int h265 = 0; h265 < 2; h265++) {
		int mi = sdp_choose(&o, h265, &c, err, sizeof err);
		if (mi < 0)
			continue;
		const char *cands[] = {"candidate:1 1 UDP 1 127.0.0.1 40000 typ host"};
		struct sdp_answer a = {.offer = &o,
				       .media = (unsigned)mi,
				       .codec = c,
				       .ice_ufrag = "u",
				       .ice_pwd = "p",
				       .fingerprint = "AA",
				       .ssrc = 1,
				       .cname = "k",
				       .candidates = cands,
				       .ncandidates = 1};
		sdp_build_answer(&a, answer, sizeof answer);
	}
	return 0;
}
