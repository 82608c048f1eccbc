/* The BCUDP client transport (bc_transport.h) on libuv UDP: discovery (a C2D_S UID
 * lookup to the host when the UID is not configured, then C2D_C naming the UID, every
 * 500 ms until D2C_C_R: unicast to the host, or broadcast on the local segment when the
 * camera is given by UID alone), then Data/ACK exchange through the reliability
 * windows, an ACK on each data packet and every 10 ms while one is pending, C2D_HB
 * every second, and a hang-up after 10 s without a packet from the camera. */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "bc_transport.h"
#include "bcudp_disc.h"
#include "bcudp_packet.h"
#include "bcudp_window.h"

#define TICK_MS        10
#define CONNECT_RESEND 500
#define HEARTBEAT_MS   1000
#define SILENCE_MS     10000
#define SOCKET_BUFFER  (1024 * 1024)
/* Where cameras listen for discovery: C2D_S goes to 2015 (reolink_aio, neolink's
 * dissector/udp.md), C2D_C to 2015 and 2018 (neolink broadcasts it to both). */
#define LOOKUP_PORT  2015
#define CONNECT_PORT 2018
/* Discovery destinations: two ports on the host, or on the limited broadcast address
 * and each IPv4 interface's broadcast address (at most 15 interfaces). */
#define DESTS_MAX 32

enum conn_state { ST_RESOLVING, ST_LOOKUP, ST_CONNECTING, ST_CONNECTED, ST_DEAD, ST_CLOSING };

struct bcudp_conn {
	struct bc_transport base;
	uv_loop_t *loop;
	uv_udp_t udp;
	uv_timer_t timer;
	uv_getaddrinfo_t gai;
	bool gai_pending, udp_bound;
	int open_handles;
	enum conn_state state;
	struct bc_transport_cbs cbs;
	void *arg;
	char host[256];
	uint16_t port;
	bool port_given, broadcast;
	char uid[BCUDP_UID_MAX + 1];
	unsigned timeout_ms;
	struct sockaddr_storage peer; /* the host (port ignored) until D2C_C_R, then the camera */
	struct sockaddr_storage dests[DESTS_MAX];
	unsigned ndests;
	int32_t cid, did;
	uint32_t tid;
	uint64_t start_ms, last_rx_ms, last_c2d_ms, last_hb_ms;
	bool ack_pending;
	struct bcudp_recv recv;
	struct bcudp_send send;
	struct bcudp_chan chan;
	uint8_t rxbuf[65536];
	uint8_t txbuf[BCUDP_ACK_HEADER + BCUDP_DISCOVERY_MAX + KP_BCUDP_ACK_VECTOR_MAX];
};

static void fail(struct bcudp_conn *c, int err, const char *reason)
{
	if (c->state == ST_DEAD || c->state == ST_CLOSING)
		return;
	c->state = ST_DEAD;
	uv_timer_stop(&c->timer);
	if (c->udp_bound)
		uv_udp_recv_stop(&c->udp);
	c->cbs.on_error(c->arg, err, reason);
}

static void send_to(struct bcudp_conn *c, const struct sockaddr_storage *to, const uint8_t *data, size_t len)
{
	uv_buf_t buf = uv_buf_init((char *)data, (unsigned)len);
	/* A full socket buffer is loss: retransmission covers data, the timer the rest (and
	 * a broadcast address without a route is one destination less). */
	(void)uv_udp_try_send(&c->udp, &buf, 1, (const struct sockaddr *)to);
}

static void send_datagram(struct bcudp_conn *c, const uint8_t *data, size_t len)
{
	send_to(c, &c->peer, data, len);
}

/* To the camera once connected, else to every discovery destination. */
static void send_disc(struct bcudp_conn *c, const struct bcudp_disc *d)
{
	char xml[512];
	int n = bcudp_disc_build(d, xml, sizeof xml);
	if (n < 0)
		return;
	int len = bcudp_write_discovery(c->tid, xml, (size_t)n, c->txbuf, sizeof c->txbuf);
	if (len <= 0)
		return;
	if (c->state == ST_CONNECTED) {
		send_datagram(c, c->txbuf, (size_t)len);
		return;
	}
	for (unsigned i = 0; i < c->ndests; i++)
		send_to(c, &c->dests[i], c->txbuf, (size_t)len);
}

/* Byte copies, not stores through a cast of the storage (which -O2 may reorder). */
static void set_port(struct sockaddr_storage *a, uint16_t port)
{
	uint16_t be = htons(port);
	size_t off = a->ss_family == AF_INET6 ? offsetof(struct sockaddr_in6, sin6_port)
					      : offsetof(struct sockaddr_in, sin_port);
	memcpy((char *)a + off, &be, sizeof be);
}

static void add_dest(struct bcudp_conn *c, const struct sockaddr_storage *a, uint16_t port)
{
	struct sockaddr_storage d = *a;
	set_port(&d, port);
	for (unsigned i = 0; i < c->ndests; i++)
		if (!memcmp(&c->dests[i], &d, sizeof d))
			return;
	if (c->ndests < DESTS_MAX)
		c->dests[c->ndests++] = d;
}

/* An IPv4 broadcast address (network order) on each port; built as a sockaddr_in and
 * copied, never written through a cast of the storage. */
static void add_broadcast(struct bcudp_conn *c, uint32_t addr, const uint16_t *ports, unsigned nports)
{
	struct sockaddr_in in = {.sin_family = AF_INET, .sin_addr.s_addr = addr};
	struct sockaddr_storage a;
	memset(&a, 0, sizeof a);
	memcpy(&a, &in, sizeof in);
	for (unsigned p = 0; p < nports; p++)
		add_dest(c, &a, ports[p]);
}

/* The discovery destinations for one port set: the host, or the broadcast addresses. */
static void set_dests(struct bcudp_conn *c, bool lookup)
{
	uint16_t ports[2];
	unsigned nports = 0;
	if (c->port_given)
		ports[nports++] = c->port;
	else if (lookup)
		ports[nports++] = LOOKUP_PORT;
	else
		ports[nports++] = LOOKUP_PORT, ports[nports++] = CONNECT_PORT;
	c->ndests = 0;
	if (!c->broadcast) {
		for (unsigned p = 0; p < nports; p++)
			add_dest(c, &c->peer, ports[p]);
		return;
	}
	add_broadcast(c, htonl(INADDR_BROADCAST), ports, nports);
	uv_interface_address_t *ifs;
	int count;
	if (uv_interface_addresses(&ifs, &count) < 0)
		return;
	for (int i = 0; i < count; i++)
		if (!ifs[i].is_internal && ifs[i].address.address4.sin_family == AF_INET)
			add_broadcast(
			    c, ifs[i].address.address4.sin_addr.s_addr | ~ifs[i].netmask.netmask4.sin_addr.s_addr,
			    ports, nports);
	uv_free_interface_addresses(ifs, count);
}

static void send_ids(struct bcudp_conn *c, enum bcudp_disc_type type)
{
	struct bcudp_disc d = {.type = type, .cid = c->cid, .did = c->did};
	send_disc(c, &d);
}

static uint16_t local_port(struct bcudp_conn *c)
{
	struct sockaddr_storage local;
	int namelen = sizeof local;
	if (uv_udp_getsockname(&c->udp, (struct sockaddr *)&local, &namelen) < 0)
		return 0;
	return ntohs(local.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&local)->sin6_port
						 : ((struct sockaddr_in *)&local)->sin_port);
}

/* C2D_S while the UID is unknown, then C2D_C naming it. */
static void send_hello(struct bcudp_conn *c)
{
	struct bcudp_disc d = {.port = local_port(c)};
	if (c->state == ST_LOOKUP) {
		d.type = BCUDP_C2D_S;
	} else {
		d.type = BCUDP_C2D_C;
		d.cid = c->cid;
		d.mtu = BCUDP_MTU;
		memcpy(d.uid, c->uid, sizeof d.uid);
	}
	send_disc(c, &d);
	c->last_c2d_ms = uv_now(c->loop);
}

static void send_ack(struct bcudp_conn *c)
{
	uint8_t sack[KP_BCUDP_ACK_VECTOR_MAX];
	uint32_t group, last;
	size_t n;
	bcudp_recv_ack(&c->recv, &group, &last, sack, &n);
	int len = bcudp_write_ack(c->did, group, last, 0, sack, n, c->txbuf, sizeof c->txbuf);
	if (len > 0)
		send_datagram(c, c->txbuf, (size_t)len);
	/* While holes remain, the tick repeats the ACK so a lost one costs 10 ms. */
	c->ack_pending = n > 0;
}

static void flush(struct bcudp_conn *c)
{
	if (c->state != ST_CONNECTED)
		return;
	uint8_t pkt[BCUDP_MTU];
	struct bcudp_tx tx;
	while (bcudp_send_next(&c->send, uv_now(c->loop), &tx) == 0) {
		int len = bcudp_write_data(c->did, tx.id, tx.data, tx.len, pkt, sizeof pkt);
		if (len > 0)
			send_datagram(c, pkt, (size_t)len);
	}
}

/* Hands in-order bytes to the session through the bounded channel. */
static void deliver(struct bcudp_conn *c)
{
	while (c->state == ST_CONNECTED && bcudp_chan_fill(&c->chan, &c->recv) > 0) {
		const uint8_t *data;
		size_t len;
		while (c->state == ST_CONNECTED && bcudp_chan_pop(&c->chan, &data, &len) == 0)
			if (len)
				c->cbs.on_data(c->arg, data, len);
	}
}

static void on_discovery(struct bcudp_conn *c, const struct bcudp_packet *p, const struct sockaddr *addr)
{
	struct bcudp_disc d;
	const char *reason;
	if (bcudp_disc_parse(p->disc.xml, p->disc.xml_len, &d, &reason) < 0)
		return;
	if (d.type == BCUDP_D2C_S_R && c->state == ST_LOOKUP) {
		memcpy(c->uid, d.uid, sizeof c->uid);
		c->state = ST_CONNECTING;
		set_dests(c, false);
		send_hello(c);
		return;
	}
	if (d.cid != c->cid)
		return;
	if (d.type == BCUDP_D2C_C_R && c->state == ST_CONNECTING) {
		if (d.rsp != 0) {
			fail(c, -ECONNREFUSED, "the camera refused the connection (D2C_C_R rsp not 0)");
			return;
		}
		c->did = d.did;
		/* The reply's source port is the camera's data port. */
		memcpy(&c->peer, addr,
		       addr->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in));
		c->state = ST_CONNECTED;
		c->last_hb_ms = uv_now(c->loop);
		c->cbs.on_connected(c->arg);
		flush(c);
	} else if (d.type == BCUDP_D2C_DISC && c->state == ST_CONNECTED && d.did == c->did) {
		fail(c, -ECONNRESET, "camera hung up (D2C_DISC)");
	}
}

static bool same_addr(const struct sockaddr *a, const struct sockaddr_storage *b, bool with_port)
{
	if (a->sa_family != b->ss_family)
		return false;
	if (a->sa_family == AF_INET) {
		const struct sockaddr_in *x = (const void *)a, *y = (const void *)b;
		return x->sin_addr.s_addr == y->sin_addr.s_addr && (!with_port || x->sin_port == y->sin_port);
	}
	const struct sockaddr_in6 *x = (const void *)a, *y = (const void *)b;
	return !memcmp(&x->sin6_addr, &y->sin6_addr, sizeof x->sin6_addr) &&
	       (!with_port || x->sin6_port == y->sin6_port);
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	struct bcudp_conn *c = h->data;
	(void)suggested;
	*buf = uv_buf_init((char *)c->rxbuf, sizeof c->rxbuf);
}

static void on_recv(uv_udp_t *h, ssize_t nread, const uv_buf_t *buf, const struct sockaddr *addr, unsigned flags)
{
	struct bcudp_conn *c = h->data;
	(void)flags;
	if (c->state != ST_LOOKUP && c->state != ST_CONNECTING && c->state != ST_CONNECTED)
		return;
	if (nread < 0) {
		fail(c, (int)nread, "UDP receive failed");
		return;
	}
	/* Before D2C_C_R: from the host on any port, or from anyone after a broadcast (the
	 * cid and the UID pick the camera); afterwards from the camera's address and port. */
	if (!addr || nread == 0 || (!c->broadcast && !same_addr(addr, &c->peer, c->state == ST_CONNECTED)) ||
	    (c->broadcast && c->state == ST_CONNECTED && !same_addr(addr, &c->peer, true)))
		return;
	static struct bcudp_packet p; /* large (discovery XML); the loop is single-threaded */
	const char *reason;
	if (bcudp_parse((const uint8_t *)buf->base, (size_t)nread, &p, &reason) < 0)
		return; /* malformed datagrams are dropped */
	if (p.kind == BCUDP_DISCOVERY) {
		c->last_rx_ms = uv_now(c->loop);
		on_discovery(c, &p, addr);
		return;
	}
	if (c->state != ST_CONNECTED)
		return;
	if (p.kind == BCUDP_DATA && p.data.conn_id == c->cid) {
		c->last_rx_ms = uv_now(c->loop);
		int r = bcudp_recv_input(&c->recv, p.data.packet_id, p.data.payload, p.data.len, &reason);
		if (r == -EMSGSIZE) {
			fail(c, r, reason);
			return;
		}
		send_ack(c);
		deliver(c);
	} else if (p.kind == BCUDP_ACK && p.ack.conn_id == c->cid) {
		c->last_rx_ms = uv_now(c->loop);
		if (bcudp_send_ack(&c->send, p.ack.group, p.ack.last_id, p.ack.sack, p.ack.sack_len, &reason) == 0)
			flush(c);
	}
}

static void on_tick(uv_timer_t *t)
{
	struct bcudp_conn *c = t->data;
	uint64_t now = uv_now(c->loop);
	if (c->state == ST_LOOKUP || c->state == ST_CONNECTING) {
		if (now - c->start_ms >= c->timeout_ms) {
			fail(c, -ETIMEDOUT,
			     c->state == ST_LOOKUP ? "no answer to the UID lookup (C2D_S) from the camera"
			     : c->broadcast        ? "no camera with this UID answered the broadcast C2D_C"
					    : "no discovery reply (D2C_C_R) from the camera (is the UID right?)");
			return;
		}
		if (now - c->last_c2d_ms >= CONNECT_RESEND)
			send_hello(c);
		return;
	}
	if (c->state != ST_CONNECTED)
		return;
	if (now - c->last_rx_ms >= SILENCE_MS) {
		fail(c, -ETIMEDOUT, "no packet from camera for 10 s");
		return;
	}
	if (now - c->last_hb_ms >= HEARTBEAT_MS) {
		send_ids(c, BCUDP_C2D_HB);
		c->last_hb_ms = now;
	}
	if (c->ack_pending)
		send_ack(c);
	flush(c);
	deliver(c);
}

/* addr: the host, or NULL to broadcast. */
static int start(struct bcudp_conn *c, const struct sockaddr *addr)
{
	struct sockaddr_storage any;
	memset(&any, 0, sizeof any);
	if (addr)
		memcpy(&c->peer, addr,
		       addr->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in));
	any.ss_family = addr ? addr->sa_family : AF_INET;
	int r = uv_udp_bind(&c->udp, (const struct sockaddr *)&any, 0);
	if (r < 0)
		return r;
	c->udp_bound = true;
	if (c->broadcast && (r = uv_udp_set_broadcast(&c->udp, 1)) < 0)
		return r;
	int size = SOCKET_BUFFER;
	uv_send_buffer_size((uv_handle_t *)&c->udp, &size);
	size = SOCKET_BUFFER;
	uv_recv_buffer_size((uv_handle_t *)&c->udp, &size);
	r = uv_udp_recv_start(&c->udp, on_alloc, on_recv);
	if (r < 0)
		return r;
	c->state = c->uid[0] ? ST_CONNECTING : ST_LOOKUP;
	c->start_ms = c->last_rx_ms = uv_now(c->loop);
	set_dests(c, c->state == ST_LOOKUP);
	send_hello(c);
	return 0;
}

static void release(struct bcudp_conn *c)
{
	if (--c->open_handles == 0) {
		bcudp_send_free(&c->send);
		free(c);
	}
}

static void on_resolved(uv_getaddrinfo_t *req, int status, struct addrinfo *res)
{
	struct bcudp_conn *c = req->data;
	c->gai_pending = false;
	if (c->state == ST_CLOSING) {
		uv_freeaddrinfo(res);
		release(c);
		return;
	}
	c->open_handles--;
	int r = status < 0 ? status : start(c, res->ai_addr);
	uv_freeaddrinfo(res);
	if (r < 0)
		fail(c, r, status < 0 ? "cannot resolve the camera host" : "cannot open the UDP socket");
}

static int conn_write(struct bc_transport *t, const uint8_t *data, size_t len)
{
	struct bcudp_conn *c = (struct bcudp_conn *)t;
	if (c->state == ST_DEAD || c->state == ST_CLOSING)
		return -EPIPE;
	int r = bcudp_send_write(&c->send, data, len);
	if (r < 0)
		return r;
	flush(c);
	return 0;
}

static void on_closed(uv_handle_t *h)
{
	release(h->data);
}

static void conn_close(struct bc_transport *t)
{
	struct bcudp_conn *c = (struct bcudp_conn *)t;
	if (c->state == ST_CLOSING)
		return;
	if (c->state == ST_CONNECTED)
		send_ids(c, BCUDP_C2D_DISC);
	c->state = ST_CLOSING;
	if (c->gai_pending)
		uv_cancel((uv_req_t *)&c->gai);
	uv_close((uv_handle_t *)&c->timer, on_closed);
	uv_close((uv_handle_t *)&c->udp, on_closed);
}

static const struct bc_transport_ops conn_ops = {.write = conn_write, .close = conn_close};

static uint32_t random_u32(void)
{
	uint32_t v;
	if (getrandom(&v, sizeof v, GRND_NONBLOCK) != sizeof v)
		v = (uint32_t)uv_hrtime() ^ (uint32_t)getpid();
	return v;
}

int bcudp_connect(uv_loop_t *loop, const struct bcudp_target *target, unsigned timeout_ms,
		  const struct bc_transport_cbs *cbs, void *arg, struct bc_transport **ret)
{
	const char *host = target->host, *uid = target->uid ? target->uid : "";
	uint16_t port = target->port;
	if (strlen(host) >= sizeof((struct bcudp_conn *)0)->host)
		return -EINVAL;
	if (strlen(uid) > BCUDP_UID_MAX || strspn(uid, BCUDP_UID_CHARS) != strlen(uid) || (!uid[0] && !host[0]))
		return -EINVAL; /* a camera without an address needs its UID */
	struct bcudp_conn *c = calloc(1, sizeof *c);
	if (!c)
		return -ENOMEM;
	c->base.ops = &conn_ops;
	c->loop = loop;
	c->cbs = *cbs;
	c->arg = arg;
	snprintf(c->host, sizeof c->host, "%s", host);
	snprintf(c->uid, sizeof c->uid, "%s", uid);
	c->port = port;
	c->port_given = target->port_given;
	c->broadcast = !host[0];
	c->timeout_ms = timeout_ms;
	c->cid = (int32_t)(random_u32() & 0x7fffffff);
	c->tid = random_u32() & 0xff;
	bcudp_recv_init(&c->recv);
	bcudp_send_init(&c->send);
	bcudp_chan_init(&c->chan);
	c->state = ST_RESOLVING;

	int r = uv_udp_init(loop, &c->udp);
	if (r < 0) {
		free(c);
		return r;
	}
	uv_timer_init(loop, &c->timer);
	c->udp.data = c->timer.data = c->gai.data = c;
	c->open_handles = 2;
	uv_timer_start(&c->timer, on_tick, TICK_MS, TICK_MS);

	struct sockaddr_in in4;
	struct sockaddr_in6 in6;
	if (c->broadcast)
		r = start(c, NULL);
	else if (uv_ip4_addr(host, port, &in4) == 0)
		r = start(c, (const struct sockaddr *)&in4);
	else if (uv_ip6_addr(host, port, &in6) == 0)
		r = start(c, (const struct sockaddr *)&in6);
	else {
		char service[8];
		snprintf(service, sizeof service, "%u", (unsigned)port);
		struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_DGRAM};
		r = uv_getaddrinfo(loop, &c->gai, on_resolved, c->host, service, &hints);
		if (r == 0) {
			c->gai_pending = true;
			c->open_handles++;
		}
	}
	if (r < 0) {
		c->state = ST_DEAD;
		conn_close(&c->base);
		return r;
	}
	*ret = &c->base;
	return 0;
}
