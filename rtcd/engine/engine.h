/* rtcd's session engine: what needs libnice (and through it GLib), OpenSSL and libsrtp2
 * (ICE, DTLS, SRTP) is the module keeppeek-rtcd-session.so, loaded with dlopen(3) at the
 * first WebRTC offer, so that an rtcd without viewers maps none of them
 * (docs/decisions/0024-rtcd-session-module.md). This is the one interface between the
 * two: the module exports one table (RTC_ENGINE_SYMBOL) of calls into ice.h, dtls.h and
 * srtp_session.h, and rtcd's core hands it, at start, a host table (its loop, where to
 * deliver ICE events, the addresses found before confinement). The module knows
 * nothing of rtcd's core beyond this table. */
#ifndef KP_RTC_ENGINE_H
#define KP_RTC_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "dtls.h"
#include "ice.h"
#include "srtp_session.h"

#define RTC_ENGINE_FILE   "keeppeek-rtcd-session.so"
#define RTC_ENGINE_ABI    2
#define RTC_ENGINE_SYMBOL "rtc_engine_module"

/* What the core gives the module once, at start. */
struct rtc_engine_host {
	uv_loop_t *loop;               /* the worker's loop: ICE events are delivered on its thread */
	rtc_ice_event_cb on_ice_event; /* each ICE event, on the loop's thread */
	const struct rtc_ice_net *net; /* ports, STUN server, host candidates' addresses */
	enum rtc_send_mode send_mode;  /* how media batches go out (KEEPPEEK_RTC_SEND) */
};

/* What the module exports, under the one name RTC_ENGINE_SYMBOL. */
struct rtc_engine {
	unsigned abi; /* RTC_ENGINE_ABI of the build that made it */
	/* libsrtp2 and its OpenSSL primitives, the DTLS certificate (its sha-256
	 * fingerprint in fp), the ICE thread: 0, or a negative errno (logged). Called once,
	 * on the loop's thread, after confinement: every thread it starts is born confined. */
	int (*start)(const struct rtc_engine_host *host, char fp[RTC_DTLS_FP_TEXT]);
	void (*stop)(void);

	struct rtc_ice *(*ice_new)(uint64_t key, const char *remote_ufrag, const char *remote_pwd);
	int (*ice_local)(struct rtc_ice *ice, char *ufrag, size_t ufrag_cap, char *pwd, size_t pwd_cap,
			 char cands[][RTC_ICE_CANDIDATE_MAX], unsigned max, unsigned *ret_n);
	int (*ice_add_remote)(struct rtc_ice *ice, const char *candidate);
	int (*ice_send)(struct rtc_ice *ice, const uint8_t *data, size_t len);
	unsigned (*ice_send_batch)(struct rtc_ice *ice, const struct rtc_ice_pkt *pkts, unsigned n, int *ret_err);
	void (*ice_on_connected)(struct rtc_ice *ice, const struct rtc_ice_event *ev);
	void (*ice_send_stats)(struct rtc_ice_send_stats *ret);
	void (*ice_free)(struct rtc_ice *ice);
	uint64_t (*ice_events_dropped)(void);

	struct rtc_dtls *(*dtls_new)(const char *peer_fp_alg, const uint8_t *peer_fp, size_t peer_fp_len,
				     rtc_dtls_send_fn send, void *arg);
	void (*dtls_free)(struct rtc_dtls *d);
	enum rtc_dtls_state (*dtls_input)(struct rtc_dtls *d, const uint8_t *data, size_t len);
	const char *(*dtls_error)(const struct rtc_dtls *d);
	long (*dtls_timeout_ms)(struct rtc_dtls *d);
	enum rtc_dtls_state (*dtls_on_timeout)(struct rtc_dtls *d);
	int (*dtls_srtp_keys)(struct rtc_dtls *d, struct rtc_srtp_keys *ret);

	struct rtc_srtp *(*srtp_new)(const uint8_t key[RTC_SRTP_KEY], const uint8_t salt[RTC_SRTP_SALT], bool outbound);
	void (*srtp_free)(struct rtc_srtp *s);
	int (*srtp_protect)(struct rtc_srtp *s, uint8_t *pkt, int *len);
	int (*srtp_protect_rtcp)(struct rtc_srtp *s, uint8_t *pkt, int *len);
	int (*srtp_unprotect_rtcp)(struct rtc_srtp *s, uint8_t *pkt, int *len);
};

#endif
