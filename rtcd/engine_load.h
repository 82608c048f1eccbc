/* Loading rtcd's session engine, keeppeek-rtcd-session.so (engine/engine.h), at the
 * first WebRTC offer: until then rtcd maps no libnice, GLib, OpenSSL or libsrtp2. It is
 * never unloaded (GLib cannot be). The module is next to rtcd's executable; rtcd's
 * file-system view keeps that directory readable after confinement, and the libraries
 * it needs are under /usr/lib, which every worker may read. */
#ifndef KP_RTC_ENGINE_LOAD_H
#define KP_RTC_ENGINE_LOAD_H

#include <stdint.h>

#include "engine.h"

/* Before confinement: the directory of rtcd's own executable (from /proc/self/exe), for
 * the sandbox's read list, or NULL when it cannot be known (the module will not load). */
const char *rtc_engine_locate(void);

/* After confinement: what the module is given when it is loaded (copied). */
void rtc_engine_host_set(const struct rtc_engine_host *host);

/* The engine, loaded and started on the first call: NULL, with the reason logged and
 * counted, when it cannot be (the next call tries again). */
const struct rtc_engine *rtc_engine_get(void);

/* The engine once loaded and started, else NULL. A session exists only after
 * rtc_engine_get succeeded, so session code calls through it without a check. */
extern const struct rtc_engine *rtc_eng;

/* The DTLS certificate's sha-256 fingerprint, "AB:CD:...", once the engine started. */
extern char rtc_fingerprint[RTC_DTLS_FP_TEXT];

void rtc_engine_stop(void);

/* For metrics: failed loads (or starts) of the module. */
uint64_t rtc_engine_load_failures(void);

#endif
