/* keeppeek-rtcd-session.so's one exported symbol: the table through which rtcd's core
 * reaches ICE, DTLS and SRTP (engine.h), and its start and stop. Everything else in the
 * module is hidden; kp_common's calls (the log) resolve to rtcd's own. */
#include <errno.h>

#include "engine.h"
#include "log.h"

static bool started;

static int start(const struct rtc_engine_host *host, char fp[RTC_DTLS_FP_TEXT])
{
	if (rtc_srtp_global_init() < 0 || rtc_dtls_global_init(fp) < 0)
		return -EIO;
	int r = rtc_ice_start(host->loop, host->on_ice_event, host->net, host->send_mode);
	if (r < 0) {
		rtc_dtls_global_free();
		return r;
	}
	started = true;
	kp_info("DTLS certificate sha-256 %s", fp);
	return 0;
}

static void stop(void)
{
	if (!started)
		return;
	rtc_ice_stop();
	rtc_dtls_global_free();
	started = false;
}

__attribute__((visibility("default"))) const struct rtc_engine rtc_engine_module = {
    .abi = RTC_ENGINE_ABI,
    .start = start,
    .stop = stop,
    .ice_new = rtc_ice_new,
    .ice_local = rtc_ice_local,
    .ice_add_remote = rtc_ice_add_remote,
    .ice_send = rtc_ice_send,
    .ice_send_batch = rtc_ice_send_batch,
    .ice_on_connected = rtc_ice_on_connected,
    .ice_send_stats = rtc_ice_send_stats,
    .ice_free = rtc_ice_free,
    .ice_events_dropped = rtc_ice_events_dropped,
    .dtls_new = rtc_dtls_new,
    .dtls_free = rtc_dtls_free,
    .dtls_input = rtc_dtls_input,
    .dtls_error = rtc_dtls_error,
    .dtls_timeout_ms = rtc_dtls_timeout_ms,
    .dtls_on_timeout = rtc_dtls_on_timeout,
    .dtls_srtp_keys = rtc_dtls_srtp_keys,
    .srtp_new = rtc_srtp_new,
    .srtp_free = rtc_srtp_free,
    .srtp_protect = rtc_srtp_protect,
    .srtp_protect_rtcp = rtc_srtp_protect_rtcp,
    .srtp_unprotect_rtcp = rtc_srtp_unprotect_rtcp,
};
