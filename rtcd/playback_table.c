/* The cursor table (see playback_table.h): slots are handed out round-robin so that a
 * late answer to a closed cursor's request does not reach the next cursor in its slot
 * (the request id's generation guards that too). */
#include "playback_table.h"

#include <errno.h>
#include <stddef.h>

static void *table[KP_RTC_CURSORS_PER_SERVER];
static unsigned count, next_slot;

int rtc_cursor_table_add(void *c, unsigned *ret_slot)
{
	if (count >= KP_RTC_CURSORS_PER_SERVER)
		return -EMFILE;
	while (table[next_slot])
		next_slot = (next_slot + 1) % KP_RTC_CURSORS_PER_SERVER;
	table[next_slot] = c;
	count++;
	*ret_slot = next_slot;
	next_slot = (next_slot + 1) % KP_RTC_CURSORS_PER_SERVER;
	return 0;
}

void rtc_cursor_table_del(unsigned slot)
{
	if (slot < KP_RTC_CURSORS_PER_SERVER && table[slot]) {
		table[slot] = NULL;
		count--;
	}
}

void *rtc_cursor_table_get(unsigned slot)
{
	return slot < KP_RTC_CURSORS_PER_SERVER ? table[slot] : NULL;
}

unsigned rtc_cursor_table_count(void)
{
	return count;
}
