/* One-line-per-event logging to stderr, tagged with the process name and pid, with
 * syslog priority prefixes when stderr is the systemd journal. */
#ifndef KP_LOG_H
#define KP_LOG_H

#include <stdarg.h>

enum kp_log_level { KP_LOG_ERR = 3, KP_LOG_WARNING = 4, KP_LOG_NOTICE = 5, KP_LOG_INFO = 6, KP_LOG_DEBUG = 7 };

void kp_log_init(const char *name);
void kp_log_set_level(enum kp_log_level max);
void kp_log(enum kp_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void kp_log_signal_safe(const char *msg);

#define kp_err(...)    kp_log(KP_LOG_ERR, __VA_ARGS__)
#define kp_warn(...)   kp_log(KP_LOG_WARNING, __VA_ARGS__)
#define kp_notice(...) kp_log(KP_LOG_NOTICE, __VA_ARGS__)
#define kp_info(...)   kp_log(KP_LOG_INFO, __VA_ARGS__)
#define kp_debug(...)  kp_log(KP_LOG_DEBUG, __VA_ARGS__)

#endif
