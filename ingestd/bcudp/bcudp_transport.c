/* The BCUDP client transport (bc_transport.h) on libuv UDP: the unicast discovery
 * handshake (C2D_C every 500 ms until D2C_C_R), then Data/ACK exchange through the
 * reliability windows, an ACK on each data packet and every 10 ms while one is pending,
 * C2D_HB every second, and a hang-up after 10 s without a packet from the camera. */
#include <errno.h>
#include <netdb.h>
#include <stdbool.h>
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

enum conn_state { ST_RESOLVING, ST_CONNECTING, ST_CONNECTED, ST_DEAD, ST_CLOSING };

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
	unsigned timeout_ms;
	struct sockaddr_storage peer;
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

static void send_datagram(struct bcudp_conn *c, const uint8_t *data, size_t len)
{
	uv_buf_t buf = uv_buf_init((char *)data, (unsigned)len);
	/* A full socket buffer is loss: retransmission covers data, the timer the rest. */
	(void)uv_udp_try_send(&c->udp, &buf, 1, (const struct sockaddr *)&c->peer);
}

static void send_disc(struct bcudp_conn *c, const struct bcudp_disc *d)
{
	char xml[512];
	int n = bcudp_disc_build(d, xml, sizeof xml);
	if (n < 0)
		return;
	int len = bcudp_write_discovery(c->tid, xml, (size_t)n, c->txbuf, sizeof c->txbuf);
	if (len > 0)
		send_datagram(c, c->txbuf, (size_t)len);
}

static void send_ids(struct bcudp_conn *c, enum bcudp_disc_type type)
{
	struct bcudp_disc d = {.type = type, .cid = c->cid, .did = c->did};
	send_disc(c, &d);
}

static void send_c2d_c(struct bcudp_conn *c)
{
	struct sockaddr_storage local;
	int namelen = sizeof local;
	uint16_t port = 0;
	if (uv_udp_getsockname(&c->udp, (struct sockaddr *)&local, &namelen) == 0)
		port = ntohs(local.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&local)->sin6_port
							 : ((struct sockaddr_in *)&local)->sin_port);
	struct bcudp_disc d = {.type = BCUDP_C2D_C, .port = port, .cid = c->cid, .mtu = BCUDP_MTU};
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
	if (bcudp_disc_parse(p->disc.xml, p->disc.xml_len, &d, &reason) < 0 || d.cid != c->cid)
		return;
	if (d.type == BCUDP_D2C_C_R && c->state == ST_CONNECTING) {
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
	if (c->state != ST_CONNECTING && c->state != ST_CONNECTED)
		return;
	if (nread < 0) {
		fail(c, (int)nread, "UDP receive failed");
		return;
	}
	if (!addr || nread == 0 || !same_addr(addr, &c->peer, c->state == ST_CONNECTED))
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
	if (c->state == ST_CONNECTING) {
		if (now - c->start_ms >= c->timeout_ms) {
			fail(c, -ETIMEDOUT, "no discovery reply (D2C_C_R) from the camera");
			return;
		}
		if (now - c->last_c2d_ms >= CONNECT_RESEND)
			send_c2d_c(c);
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

static int start(struct bcudp_conn *c, const struct sockaddr *addr)
{
	memcpy(&c->peer, addr, addr->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in));
	struct sockaddr_storage any;
	memset(&any, 0, sizeof any);
	any.ss_family = addr->sa_family;
	int r = uv_udp_bind(&c->udp, (const struct sockaddr *)&any, 0);
	if (r < 0)
		return r;
	c->udp_bound = true;
	int size = SOCKET_BUFFER;
	uv_send_buffer_size((uv_handle_t *)&c->udp, &size);
	size = SOCKET_BUFFER;
	uv_recv_buffer_size((uv_handle_t *)&c->udp, &size);
	r = uv_udp_recv_start(&c->udp, on_alloc, on_recv);
	if (r < 0)
		return r;
	c->state = ST_CONNECTING;
	c->start_ms = c->last_rx_ms = uv_now(c->loop);
	send_c2d_c(c);
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

int bcudp_connect(uv_loop_t *loop, const char *host, uint16_t port, unsigned timeout_ms,
		  const struct bc_transport_cbs *cbs, void *arg, struct bc_transport **ret)
{
	if (strlen(host) >= sizeof((struct bcudp_conn *)0)->host)
		return -EINVAL;
	struct bcudp_conn *c = calloc(1, sizeof *c);
	if (!c)
		return -ENOMEM;
	c->base.ops = &conn_ops;
	c->loop = loop;
	c->cbs = *cbs;
	c->arg = arg;
	snprintf(c->host, sizeof c->host, "%s", host);
	c->port = port;
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
	if (uv_ip4_addr(host, port, &in4) == 0)
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
