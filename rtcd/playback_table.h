/* The server-wide table of stored-playback cursors: one slot per open cursor, at most
 * KP_RTC_CURSORS_PER_SERVER; a slot number is part of the cursor's MediaOpen ids. */
#ifndef KP_RTC_PLAYBACK_TABLE_H
#define KP_RTC_PLAYBACK_TABLE_H

#include "kp_limits.h"

#define RTC_CURSOR_SLOT_BITS 10
_Static_assert(KP_RTC_CURSORS_PER_SERVER <= (1u << RTC_CURSOR_SLOT_BITS), "slot numbers fit their bits");

/* 0 and the slot now holding c, or -EMFILE when every slot is taken. */
int rtc_cursor_table_add(void *c, unsigned *ret_slot);
void rtc_cursor_table_del(unsigned slot);
/* The cursor in a slot (any number: out of range is NULL). */
void *rtc_cursor_table_get(unsigned slot);
unsigned rtc_cursor_table_count(void);

#endif
