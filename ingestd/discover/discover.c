/* Looking for cameras on the local segments, asked by the supervisor (DiscoverRequest):
 * one UDP socket sends a Baichuan UID lookup (C2D_S, BAICHUAN.md section 6; reolink_aio
 * udp_protocol.py) to the broadcast addresses on ports 2015 and 2018, and a WS-Discovery
 * Probe for ONVIF video transmitters to 239.255.255.250:3702 (wsd.c); both are sent
 * again after DISCOVER_RESEND_MS (UDP loses). Answers are collected until the timeout,
 * duplicates dropped, at most DISCOVER_MAX, then sent back as DiscoverFound pieces. One
 * search at a time: a second request while one runs is answered done at once. */
#include "discover.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "bcudp_disc.h"
#include "bcudp_packet.h"
#include "log.h"
#include "wsd.h"

#define DISCOVER_MAX          64
#define DISCOVER_DEFAULT_MS   2000
#define DISCOVER_LIMIT_MS     10000
#define DISCOVER_RESEND_MS    700
#define BAICHUAN_LOOKUP_PORT  2015 /* reolink_aio, neolink */
#define BAICHUAN_CONNECT_PORT 2018 /* neolink also broadcasts here */

static struct {
	struct kp_worker *w;
	uv_udp_t udp;
	uv_timer_t timer, resend;
	bool running, open;
	uint32_t id;
	char message_id[48];
	uint32_t tid;
	kp_DiscoveredCamera found[DISCOVER_MAX];
	unsigned nfound;
	uint64_t dropped;
} D;

static void send_found(const kp_DiscoveredCamera *c, bool done)
{
	kp_Envelope env = kp_Envelope_init_zero;
	env.which_msg = kp_Envelope_discover_found_tag;
	env.msg.discover_found.id = D.id;
	env.msg.discover_found.done = done;
	if (c) {
		env.msg.discover_found.has_camera = true;
		env.msg.discover_found.camera = *c;
	}
	int r = kp_worker_send_supervisor(D.w, &env);
	if (r < 0)
		kp_warn("discover: answering the supervisor failed: %s", strerror(-r));
}

static void add(const kp_DiscoveredCamera *c)
{
	for (unsigned i = 0; i < D.nfound; i++) {
		const kp_DiscoveredCamera *o = &D.found[i];
		if (!strcmp(o->kind, c->kind) && !strcmp(o->address, c->address) && !strcmp(o->uid, c->uid) &&
		    !strcmp(o->xaddr, c->xaddr))
			return;
	}
	if (D.nfound == DISCOVER_MAX) {
		D.dropped++;
		return;
	}
	D.found[D.nfound++] = *c;
}

static void on_recv(uv_udp_t *h, ssize_t n, const uv_buf_t *buf, const struct sockaddr *from, unsigned flags)
{
	(void)h;
	(void)flags;
	if (n <= 0 || !from || from->sa_family != AF_INET || !D.running)
		return;
	const struct sockaddr_in *in = (const struct sockaddr_in *)from;
	kp_DiscoveredCamera c = kp_DiscoveredCamera_init_zero;
	inet_ntop(AF_INET, &in->sin_addr, c.address, sizeof c.address);
	static struct bcudp_packet p;
	const char *why;
	struct bcudp_disc d;
	if (bcudp_parse((const uint8_t *)buf->base, (size_t)n, &p, &why) == 0 && p.kind == BCUDP_DISCOVERY &&
	    bcudp_disc_parse(p.disc.xml, p.disc.xml_len, &d, &why) == 0 && d.type == BCUDP_D2C_S_R) {
		snprintf(c.kind, sizeof c.kind, "baichuan");
		c.port = ntohs(in->sin_port);
		snprintf(c.uid, sizeof c.uid, "%s", d.uid);
		add(&c);
		return;
	}
	struct wsd_match m;
	if (wsd_match_parse(buf->base, (size_t)n, D.message_id, &m) == 0) {
		snprintf(c.kind, sizeof c.kind, "onvif");
		snprintf(c.xaddr, sizeof c.xaddr, "%s", m.xaddr);
		snprintf(c.name, sizeof c.name, "%s", m.name);
		snprintf(c.model, sizeof c.model, "%s", m.model);
		add(&c);
	}
}

static void on_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf)
{
	static char rx[WSD_MAX];
	(void)h;
	(void)hint;
	*buf = uv_buf_init(rx, sizeof rx);
}

static void send_to(uint32_t addr_be, uint16_t port, const void *data, size_t len)
{
	struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = htons(port), .sin_addr.s_addr = addr_be};
	uv_buf_t b = uv_buf_init((char *)data, (unsigned)len);
	(void)uv_udp_try_send(&D.udp, &b, 1, (const struct sockaddr *)&to); /* an unroutable address is one less */
}

static void send_probes(void)
{
	static uint8_t pkt[1024];
	static char xml[2048];
	struct sockaddr_in local;
	int namelen = sizeof local;
	struct bcudp_disc d = {.type = BCUDP_C2D_S};
	if (uv_udp_getsockname(&D.udp, (struct sockaddr *)&local, &namelen) == 0)
		d.port = ntohs(local.sin_port);
	int n = bcudp_disc_build(&d, xml, sizeof xml);
	int len = n > 0 ? bcudp_write_discovery(D.tid, xml, (size_t)n, pkt, sizeof pkt) : -1;
	uv_interface_address_t *ifs = NULL;
	int count = 0;
	if (uv_interface_addresses(&ifs, &count) < 0)
		count = 0;
	for (int i = -1; len > 0 && i < count; i++) {
		uint32_t b = htonl(INADDR_BROADCAST);
		if (i >= 0) {
			if (ifs[i].is_internal || ifs[i].address.address4.sin_family != AF_INET)
				continue;
			b = ifs[i].address.address4.sin_addr.s_addr | ~ifs[i].netmask.netmask4.sin_addr.s_addr;
		}
		send_to(b, BAICHUAN_LOOKUP_PORT, pkt, (size_t)len);
		send_to(b, BAICHUAN_CONNECT_PORT, pkt, (size_t)len);
	}
	if (ifs)
		uv_free_interface_addresses(ifs, count);
	n = wsd_probe_build(D.message_id, xml, sizeof xml);
	struct in_addr group;
	if (n > 0 && inet_pton(AF_INET, WSD_GROUP, &group) == 1)
		send_to(group.s_addr, WSD_PORT, xml, (size_t)n);
}

static void on_closed(uv_handle_t *h)
{
	(void)h;
}

static void finish(void)
{
	uv_udp_recv_stop(&D.udp);
	uv_close((uv_handle_t *)&D.udp, on_closed);
	uv_timer_stop(&D.resend);
	D.running = false;
	kp_info("discover: %u cameras found%s", D.nfound, D.dropped ? " (more than the most kept)" : "");
	for (unsigned i = 0; i < D.nfound; i++)
		send_found(&D.found[i], i + 1 == D.nfound);
	if (!D.nfound)
		send_found(NULL, true);
}

static void on_timer(uv_timer_t *t)
{
	(void)t;
	finish();
}

static void on_resend(uv_timer_t *t)
{
	(void)t;
	send_probes();
}

/* "uuid:" and 16 random bytes in the 8-4-4-4-12 form. */
static void new_message_id(void)
{
	uint8_t r[16] = {0};
	if (getrandom(r, sizeof r, GRND_NONBLOCK) != sizeof r)
		kp_warn("discover: no random bytes for the probe's MessageID: %s", strerror(errno));
	r[6] = (uint8_t)((r[6] & 0x0f) | 0x40);
	r[8] = (uint8_t)((r[8] & 0x3f) | 0x80);
	size_t o = (size_t)snprintf(D.message_id, sizeof D.message_id, "uuid:");
	for (int i = 0; i < 16; i++)
		o += (size_t)snprintf(D.message_id + o, sizeof D.message_id - o, "%s%02x",
				      i == 4 || i == 6 || i == 8 || i == 10 ? "-" : "", r[i]);
	D.tid = (uint32_t)r[0];
}

void ing_discover(struct kp_worker *w, const kp_DiscoverRequest *rq)
{
	uv_loop_t *loop = kp_worker_loop(w);
	D.w = w;
	if (!D.open) {
		uv_timer_init(loop, &D.timer);
		uv_timer_init(loop, &D.resend);
		D.open = true;
	}
	if (D.running) {
		uint32_t keep = D.id;
		D.id = rq->id;
		kp_notice("discover: a search runs already: answering the new request with nothing");
		send_found(NULL, true);
		D.id = keep;
		return;
	}
	D.id = rq->id;
	D.nfound = 0;
	D.dropped = 0;
	new_message_id();
	uint64_t ms = rq->timeout_ms ? rq->timeout_ms : DISCOVER_DEFAULT_MS;
	if (ms > DISCOVER_LIMIT_MS)
		ms = DISCOVER_LIMIT_MS;
	struct sockaddr_in any = {.sin_family = AF_INET};
	int r = uv_udp_init(loop, &D.udp);
	if (r < 0) {
		kp_err("discover: opening a UDP socket failed: %s", uv_strerror(r));
		send_found(NULL, true);
		return;
	}
	if ((r = uv_udp_bind(&D.udp, (const struct sockaddr *)&any, 0)) == 0 &&
	    (r = uv_udp_set_broadcast(&D.udp, 1)) == 0)
		r = uv_udp_recv_start(&D.udp, on_alloc, on_recv);
	if (r < 0) {
		kp_err("discover: preparing the UDP socket failed: %s", uv_strerror(r));
		uv_close((uv_handle_t *)&D.udp, on_closed);
		send_found(NULL, true);
		return;
	}
	D.running = true;
	kp_info("discover: looking for cameras for %llu ms", (unsigned long long)ms);
	send_probes();
	uv_timer_start(&D.resend, on_resend, DISCOVER_RESEND_MS, 0);
	uv_timer_start(&D.timer, on_timer, ms, 0);
}

void ing_discover_stop(void)
{
	if (!D.open)
		return;
	if (D.running) {
		uv_udp_recv_stop(&D.udp);
		uv_close((uv_handle_t *)&D.udp, on_closed);
		D.running = false;
	}
	uv_close((uv_handle_t *)&D.timer, NULL);
	uv_close((uv_handle_t *)&D.resend, NULL);
	D.open = false;
}
