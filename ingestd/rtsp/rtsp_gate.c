/* Which access units read from libavformat are delivered (rtsp_gate.h): the one-unit
 * hold that keeps a cut last access unit out of recordings, and the drop after RTP
 * packet loss up to a keyframe. */
#include "rtsp_gate.h"

#include <stdlib.h>
#include <string.h>

void rtsp_gate_lost(struct rtsp_gate *g)
{
	g->lost = true;
}

bool rtsp_gate_admit(struct rtsp_gate *g, bool keyframe, uint64_t *ret_dropped)
{
	/* The missing packet may belong to this access unit or to the next (its start may
	 * already be in libavformat's parser), never to the held one: it was complete
	 * before this read began. */
	if (g->lost) {
		g->lost = false;
		g->skip_any = 1;
		g->skip_to_keyframe = true;
	} else if (g->skip_any) {
		g->skip_any--;
	} else if (g->skip_to_keyframe && !keyframe) {
	} else {
		g->skip_to_keyframe = false;
		return true;
	}
	(*ret_dropped)++;
	return false;
}

bool rtsp_gate_release(struct rtsp_gate *g, struct kp_access_unit *out)
{
	if (!g->have)
		return false;
	g->have = false;
	*out = g->held;
	return true;
}

int rtsp_gate_push(struct rtsp_gate *g, const struct kp_access_unit *au, struct kp_access_unit *out,
		   uint64_t *ret_dropped)
{
	unsigned next = g->cur ^ 1;
	if (g->cap[next] < au->len) {
		uint8_t *b = realloc(g->buf[next], au->len);
		if (!b) {
			g->skip_to_keyframe = true;
			(*ret_dropped)++;
			return rtsp_gate_release(g, out);
		}
		g->buf[next] = b;
		g->cap[next] = au->len;
	}
	bool had = rtsp_gate_release(g, out);
	memcpy(g->buf[next], au->data, au->len);
	g->held = *au;
	g->held.data = g->buf[next];
	g->have = true;
	g->cur = next;
	return had;
}

size_t rtsp_gate_end(struct rtsp_gate *g)
{
	size_t n = g->have ? g->held.len : 0;
	g->have = false;
	g->lost = false;
	return n;
}

void rtsp_gate_free(struct rtsp_gate *g)
{
	free(g->buf[0]);
	free(g->buf[1]);
	memset(g, 0, sizeof *g);
}
