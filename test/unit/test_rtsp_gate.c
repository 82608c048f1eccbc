/* The RTSP driver's gate (ingestd/rtsp/rtsp_gate.c): each access unit is delivered when
 * the next one is read, the one held when the connection ends is dropped; after a
 * reported loss, the access unit being read, the next one, and all up to a keyframe are
 * dropped and counted, and the held one is released at once. */
#include <string.h>

#include "rtsp_gate.h"
#include "test.h"

static struct rtsp_gate g;
static uint64_t dropped;
static int delivered[64];
static unsigned ndelivered;

/* One access unit whose single byte is its number; returns whether the gate admitted it. */
static bool read_au(uint8_t n, bool key)
{
	if (!rtsp_gate_admit(&g, key, &dropped)) {
		struct kp_access_unit out;
		if (rtsp_gate_release(&g, &out))
			delivered[ndelivered++] = out.data[0];
		return false;
	}
	uint8_t byte = n;
	struct kp_access_unit au = {.keyframe = key, .pts_90k = n, .data = &byte, .len = 1};
	struct kp_access_unit out;
	if (rtsp_gate_push(&g, &au, &out, &dropped) == 1) {
		CHECK_EQ(out.len, 1);
		CHECK_EQ(out.pts_90k, out.data[0]);
		delivered[ndelivered++] = out.data[0];
	}
	return true;
}

static void reset(void)
{
	rtsp_gate_free(&g);
	dropped = 0;
	ndelivered = 0;
}

static void test_hold_one_and_end(void)
{
	reset();
	CHECK(read_au(1, true));
	CHECK_EQ(ndelivered, 0);
	CHECK(read_au(2, false));
	CHECK(read_au(3, false));
	CHECK_EQ(ndelivered, 2);
	CHECK_EQ(delivered[0], 1);
	CHECK_EQ(delivered[1], 2);
	CHECK_EQ(rtsp_gate_end(&g), 1); /* 3, maybe cut: dropped */
	CHECK_EQ(rtsp_gate_end(&g), 0);
	CHECK_EQ(ndelivered, 2);
	CHECK_EQ(dropped, 0);
}

static void test_loss_skips_to_keyframe(void)
{
	reset();
	CHECK(read_au(1, true));
	CHECK(read_au(2, false));
	rtsp_gate_lost(&g);        /* reported while 3 was read */
	CHECK(!read_au(3, false)); /* damaged */
	CHECK_EQ(ndelivered, 2);   /* 2 released at once */
	CHECK_EQ(delivered[1], 2);
	CHECK(!read_au(4, true));  /* its start may have been in the parser: dropped */
	CHECK(!read_au(5, false)); /* up to a keyframe */
	CHECK(read_au(6, true));
	CHECK(read_au(7, false));
	CHECK_EQ(dropped, 3);
	CHECK_EQ(ndelivered, 3);
	CHECK_EQ(delivered[2], 6);
	/* A loss while skipping starts over. */
	rtsp_gate_lost(&g);
	CHECK(!read_au(8, true));
	CHECK(!read_au(9, true));
	CHECK(read_au(10, true));
	CHECK_EQ(dropped, 5);
	CHECK_EQ(delivered[3], 7);
	CHECK_EQ(rtsp_gate_end(&g), 1);
	rtsp_gate_free(&g);
}

int main(void)
{
	RUN(test_hold_one_and_end);
	RUN(test_loss_skips_to_keyframe);
	return TEST_EXIT();
}
