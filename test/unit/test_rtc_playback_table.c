/* The server-wide cursor ceiling: 1,024 cursors open, the 1,025th refused with EMFILE;
 * closing one lets the next open, in a slot that no open cursor holds. */
#include <errno.h>

#include "playback_table.h"
#include "test.h"

static void test_ceiling(void)
{
	static int cursors[KP_RTC_CURSORS_PER_SERVER + 1];
	static unsigned slots[KP_RTC_CURSORS_PER_SERVER];
	for (unsigned i = 0; i < KP_RTC_CURSORS_PER_SERVER; i++) {
		CHECK_EQ(rtc_cursor_table_add(&cursors[i], &slots[i]), 0);
		CHECK(rtc_cursor_table_get(slots[i]) == &cursors[i]);
	}
	CHECK_EQ(KP_RTC_CURSORS_PER_SERVER, 1024);
	CHECK_EQ(rtc_cursor_table_count(), 1024);
	unsigned slot = 9999;
	CHECK_EQ(rtc_cursor_table_add(&cursors[1024], &slot), -EMFILE);
	CHECK_EQ(slot, 9999);
	CHECK_EQ(rtc_cursor_table_count(), 1024);
	rtc_cursor_table_del(slots[500]);
	CHECK(rtc_cursor_table_get(slots[500]) == NULL);
	CHECK_EQ(rtc_cursor_table_add(&cursors[1024], &slot), 0);
	CHECK_EQ(slot, slots[500]);
	CHECK_EQ(rtc_cursor_table_add(&cursors[500], &slot), -EMFILE);
	CHECK(rtc_cursor_table_get(1 << RTC_CURSOR_SLOT_BITS) == NULL);
	for (unsigned i = 0; i < KP_RTC_CURSORS_PER_SERVER; i++)
		rtc_cursor_table_del(i);
	CHECK_EQ(rtc_cursor_table_count(), 0);
}

static void test_slots_round_robin(void)
{
	int a, b;
	unsigned sa, sb;
	CHECK_EQ(rtc_cursor_table_add(&a, &sa), 0);
	rtc_cursor_table_del(sa);
	CHECK_EQ(rtc_cursor_table_add(&b, &sb), 0);
	CHECK(sa != sb); /* a late answer to a's requests finds no cursor in a's slot */
	rtc_cursor_table_del(sb);
}

int main(void)
{
	RUN(test_ceiling);
	RUN(test_slots_round_robin);
	return TEST_EXIT();
}
