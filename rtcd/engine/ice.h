/* ICE with libnice for rtcd's sessions. libnice runs on GLib: one dedicated thread per
 * rtcd (4 MiB stack) runs a GMainLoop on its own GMainContext with every agent; the
 * sessions live on the worker's libuv loop thread. libnice's callbacks only queue
 * events (gathering done, state changes, received datagrams) into one bounded queue
 * and wake the loop thread with a uv_async. The loop thread sends single datagrams with
 * nice_agent_send, which libnice locks internally, and media in batches with sendmmsg(2)
 * (UDP GSO where it can) straight on the UDP socket of the selected pair
 * (nice_agent_get_selected_socket; decision 0031); a pair without one (relayed, TCP)
 * sends the batch with nice_agent_send. Agents are full ICE (RFC 5245, controlled,
 * trickle), UDP only, with host candidates on loopback and the machine's interfaces,
 * ports from [rtc] port_min..port_max and an optional STUN server. */
#ifndef KP_RTC_ICE_H
#define KP_RTC_ICE_H

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#define RTC_ICE_QUEUE_ITEMS   8192
#define RTC_ICE_QUEUE_BYTES   (16u * 1024 * 1024)
#define RTC_ICE_MAX_LOCAL     16
#define RTC_ICE_CANDIDATE_MAX 256
#define RTC_ICE_BATCH_MAX     64    /* datagrams per rtc_ice_send_batch */
#define RTC_ICE_GSO_BYTES     60000 /* one UDP GSO message: below IPv4's 65,507 */

/* How media batches go out (KEEPPEEK_RTC_SEND, keeppeek-rtcd(8)). */
enum rtc_send_mode {
	RTC_SEND_GSO,  /* sendmmsg, equal-sized runs as one UDP_SEGMENT message each */
	RTC_SEND_MMSG, /* sendmmsg, one message per datagram */
	RTC_SEND_NICE, /* nice_agent_send per datagram (the fallback path, always) */
};

struct rtc_ice_pkt {
	const uint8_t *data;
	size_t len;
};

/* Counters of the media sends (loop thread only). */
struct rtc_ice_send_stats {
	uint64_t batched;      /* datagrams sent with sendmmsg on the pair's socket */
	uint64_t unbatched;    /* datagrams sent with nice_agent_send */
	uint64_t syscalls;     /* sendmmsg calls */
	uint64_t gso_messages; /* messages of several datagrams (UDP_SEGMENT) */
	uint64_t err_full;     /* a send refused with EAGAIN or ENOBUFS: the socket was full */
	uint64_t err_other;    /* refused for another reason (logged once per session) */
	uint64_t dropped;      /* datagrams of a batch not sent after its refusal */
	uint64_t gso_off;      /* times the kernel refused UDP GSO and it was turned off */
};

/* RTC_ICE_CONNECTED: a pair is selected (new-selected-pair-full) or the component is ready;
 * it may come more than once. */
enum rtc_ice_event_kind { RTC_ICE_GATHERED, RTC_ICE_CONNECTED, RTC_ICE_FAILED, RTC_ICE_RECV };

struct rtc_ice_event {
	enum rtc_ice_event_kind kind;
	uint64_t key; /* the session's key given to rtc_ice_new */
	size_t len;
	struct rtc_ice_event *next;
	uint8_t data[]; /* RTC_ICE_RECV: the datagram */
};

typedef void (*rtc_ice_event_cb)(const struct rtc_ice_event *ev);

/* Where agents gather: ports, the STUN server's address and the host candidates'
 * addresses, found before confinement by rtcd's core (name service and netlink, which
 * the sandbox does not allow later; rtcd/ice_net.c). */
struct rtc_ice_net {
	unsigned port_min, port_max; /* 0: any */
	char stun_ip[64];            /* numeric, or empty: no STUN server */
	unsigned stun_port;
	char local_ips[RTC_ICE_MAX_LOCAL][64];
	unsigned nlocal;
};

/* Starts the GLib thread from the (confined) loop thread, so that it is born confined.
 * Events are delivered on loop's thread. 0 or a negative errno. */
int rtc_ice_start(uv_loop_t *loop, rtc_ice_event_cb cb, const struct rtc_ice_net *net, enum rtc_send_mode mode);
void rtc_ice_stop(void);

struct rtc_ice;

/* A controlled agent with one stream of one component, gathering at once. */
struct rtc_ice *rtc_ice_new(uint64_t key, const char *remote_ufrag, const char *remote_pwd);
/* After RTC_ICE_GATHERED: local credentials and "candidate:..." lines. */
int rtc_ice_local(struct rtc_ice *ice, char *ufrag, size_t ufrag_cap, char *pwd, size_t pwd_cap,
		  char cands[][RTC_ICE_CANDIDATE_MAX], unsigned max, unsigned *ret_n);
/* A remote "candidate:..." line (trickled or from the offer). 0, or -EINVAL when
 * libnice cannot use it (for example an mDNS name). */
int rtc_ice_add_remote(struct rtc_ice *ice, const char *candidate);
/* Sends one datagram on the selected pair: 0, or -EAGAIN when it was not sent (socket
 * full, or no pair selected yet). */
int rtc_ice_send(struct rtc_ice *ice, const uint8_t *data, size_t len);
/* Sends n (at most RTC_ICE_BATCH_MAX) datagrams in order on the selected pair. Returns
 * how many went out, the first ones; when fewer than n, *ret_err is the errno that
 * stopped it (EAGAIN: the socket was full) and the rest are dropped and counted. It never
 * blocks. */
unsigned rtc_ice_send_batch(struct rtc_ice *ice, const struct rtc_ice_pkt *pkts, unsigned n, int *ret_err);
/* An RTC_ICE_CONNECTED event of this agent, on the loop thread: takes the new selected
 * pair's socket and remote address for rtc_ice_send_batch. */
void rtc_ice_on_connected(struct rtc_ice *ice, const struct rtc_ice_event *ev);
void rtc_ice_free(struct rtc_ice *ice);

/* Counters for metrics. */
uint64_t rtc_ice_events_dropped(void);
void rtc_ice_send_stats(struct rtc_ice_send_stats *ret);

#endif
