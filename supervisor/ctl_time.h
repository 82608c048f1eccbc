/* keeppeekctl's times: what an operator types (Unix milliseconds, ISO 8601, or a
 * time relative to now such as -1h) to Unix milliseconds, and milliseconds back to a
 * local ISO 8601 form for tables. */
#ifndef KP_CTL_TIME_H
#define KP_CTL_TIME_H

#include <stddef.h>
#include <stdint.h>

#define CTL_TIME_TEXT_MAX 32

/* s is one of: digits (Unix ms); "now"; -N followed by s, m, h or d (N seconds,
 * minutes, hours or days before now_ms); YYYY-MM-DD[(T| )HH:MM[:SS[.fff]]] followed by
 * Z, +HH:MM, -HH:MM, +HHMM, +HH or nothing (local time). 0 with *ret_ms, or -EINVAL. */
int ctl_time_parse(const char *s, int64_t now_ms, int64_t *ret_ms);

/* ms as local time, e.g. "2026-11-30T11:00:00+01:00"; buf holds CTL_TIME_TEXT_MAX. */
void ctl_time_format(int64_t ms, char *buf, size_t cap);

#endif
