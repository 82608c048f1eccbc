/* Loading keeppeek-rtcd-session.so on first use and starting it (engine_load.h). A
 * module that cannot be loaded or started refuses the offer that asked (dlerror's
 * reason in the log, counted), and is tried again by the next one; rtcd keeps running. */
#include "engine_load.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "kp_time.h"
#include "log.h"
#include "self_path.h"

const struct rtc_engine *rtc_eng;
char rtc_fingerprint[RTC_DTLS_FP_TEXT];

static struct {
	char dir[4096];
	char path[4096 + sizeof RTC_ENGINE_FILE];
	struct rtc_engine_host host;
	struct rtc_ice_net net;
	const struct rtc_engine *loaded; /* dlopen'ed, perhaps not started */
	char why[320];
	uint64_t failures;
} L;

const char *rtc_engine_locate(void)
{
	int r = kp_self_dir(L.dir, sizeof L.dir);
	if (r < 0) {
		kp_warn("rtcd: /proc/self/exe: %s; the session module (ICE, DTLS, SRTP) cannot be found", strerror(-r));
		L.dir[0] = '\0';
		return NULL;
	}
	snprintf(L.path, sizeof L.path, "%s/%s", L.dir, RTC_ENGINE_FILE);
	return L.dir;
}

void rtc_engine_host_set(const struct rtc_engine_host *host)
{
	L.net = *host->net;
	L.host = *host;
	L.host.net = &L.net;
}

static const struct rtc_engine *load(void)
{
	if (L.loaded)
		return L.loaded;
	if (!L.path[0]) {
		snprintf(L.why, sizeof L.why, "the session module's directory is unknown");
		return NULL;
	}
	void *h = dlopen(L.path, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		const char *e = dlerror();
		snprintf(L.why, sizeof L.why, "loading %s failed: %s", L.path, e ? e : "?");
		return NULL;
	}
	const struct rtc_engine *m = dlsym(h, RTC_ENGINE_SYMBOL);
	if (!m || m->abi != RTC_ENGINE_ABI) {
		snprintf(L.why, sizeof L.why, "%s: %s", L.path,
			 m ? "built for another rtcd (ABI differs)" : "no " RTC_ENGINE_SYMBOL);
		dlclose(h);
		return NULL;
	}
	L.loaded = m; /* never closed: GLib and libnice cannot be unloaded */
	return m;
}

const struct rtc_engine *rtc_engine_get(void)
{
	if (rtc_eng)
		return rtc_eng;
	uint64_t t0 = kp_mono_ms();
	const struct rtc_engine *m = load();
	int r = -ELIBACC;
	if (m && !L.host.loop)
		snprintf(L.why, sizeof L.why, "the session module was asked for before rtcd was confined");
	else if (m && (r = m->start(&L.host, rtc_fingerprint)) < 0)
		snprintf(L.why, sizeof L.why, "%s: starting ICE, DTLS or SRTP failed: %s", L.path, strerror(-r));
	if (r < 0) {
		L.failures++;
		kp_err("rtcd: %s", L.why);
		return NULL;
	}
	kp_info("rtcd: loaded %s (ICE, DTLS, SRTP) in %llu ms", L.path, (unsigned long long)(kp_mono_ms() - t0));
	rtc_eng = m;
	return m;
}

void rtc_engine_stop(void)
{
	if (rtc_eng)
		rtc_eng->stop();
}

uint64_t rtc_engine_load_failures(void)
{
	return L.failures;
}
