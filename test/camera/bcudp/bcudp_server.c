/* The test camera's BCUDP server (see bcudp_server.h): discovery replies, per-client
 * windows and channel, ACKs, faults, idle timeouts and hang-ups, all on one UDP socket
 * and one 10 ms timer. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bcudp_disc.h"
#include "bcudp_packet.h"
#include "bcudp_server.h"
#include "bcudp_window.h"

#define TICK_MS       10
#define IDLE_MS       10000
#define DRAIN_MS      2000
#define SOCKET_BUFFER (1024 * 1024)
#define FAULT_SEED    0x2545f491u
/* How far past the oldest unacknowledged packet the camera sends: a real camera was
 * seen to fill a client's 256-entry ACK vector (issue 13), so it sends at least that
 * far ahead of a hole; ingestd's own send window is the smaller BCUDP_SEND_WINDOW. */
#define CAMERA_SEND_WINDOW 256

struct cam_bcudp_link {
	struct cam_bcudp_server *srv;
	struct sockaddr_storage addr;
	int32_t cid, did;
	uint32_t tid;
	uint64_t last_rx_ms, closing_ms;
	void *session;
	bool closing, ack_pending;
	bool held; /* udp_reorder: a first transmission waiting for the next one */
	size_t held_len;
	uint8_t held_pkt[BCUDP_MTU];
	struct bcudp_recv recv;
	struct bcudp_send send;
	struct bcudp_chan chan;
};

struct cam_bcudp_server {
	uv_loop_t *loop;
	uv_udp_t udp;
	uv_timer_t timer;
	int open_handles;
	struct cam_faults faults;
	struct cam_bcudp_app app;
	struct cam_bcudp_server_stats stats;
	char uid[BCUDP_UID_MAX + 1];
	uint32_t rng;
	int32_t next_did;
	struct cam_bcudp_link *links[CAM_BCUDP_MAX_CLIENTS];
	uint8_t rxbuf[65536];
	uint8_t txbuf[BCUDP_ACK_HEADER + BCUDP_DISCOVERY_MAX + KP_BCUDP_ACK_VECTOR_MAX];
};

static uint32_t next_random(struct cam_bcudp_server *s)
{
	uint32_t x = s->rng;
	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	return s->rng = x;
}

static socklen_t addr_len(const struct sockaddr *a)
{
	return a->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
}

static bool same_addr(const struct sockaddr *a, const struct sockaddr_storage *b)
{
	return a->sa_family == b->ss_family && !memcmp(a, b, addr_len(a));
}

static void send_to(struct cam_bcudp_server *s, const struct sockaddr_storage *to, const uint8_t *data, size_t len)
{
	uv_buf_t buf = uv_buf_init((char *)data, (unsigned)len);
	(void)uv_udp_try_send(&s->udp, &buf, 1, (const struct sockaddr *)to);
}

static void send_disc(struct cam_bcudp_server *s, const struct sockaddr_storage *to, uint32_t tid,
		      const struct bcudp_disc *d)
{
	char xml[512];
	int n = bcudp_disc_build(d, xml, sizeof xml);
	if (n < 0)
		return;
	int len = bcudp_write_discovery(tid, xml, (size_t)n, s->txbuf, sizeof s->txbuf);
	if (len > 0)
		send_to(s, to, s->txbuf, (size_t)len);
}

static void send_ids(struct cam_bcudp_link *l, enum bcudp_disc_type type)
{
	struct bcudp_disc d = {.type = type, .cid = l->cid, .did = l->did};
	send_disc(l->srv, &l->addr, l->tid, &d);
}

static void send_ack(struct cam_bcudp_link *l)
{
	uint8_t sack[KP_BCUDP_ACK_VECTOR_MAX];
	uint32_t group, last;
	size_t n;
	bcudp_recv_ack(&l->recv, &group, &last, sack, &n);
	int len = bcudp_write_ack(l->cid, group, last, 0, sack, n, l->srv->txbuf, sizeof l->srv->txbuf);
	if (len > 0)
		send_to(l->srv, &l->addr, l->srv->txbuf, (size_t)len);
	l->ack_pending = n > 0;
}

/* Sends what is due, dropping and swapping first transmissions as the faults say. */
static void flush(struct cam_bcudp_link *l)
{
	struct cam_bcudp_server *s = l->srv;
	uint8_t pkt[BCUDP_MTU];
	struct bcudp_tx tx;
	while (bcudp_send_next(&l->send, uv_now(s->loop), &tx) == 0) {
		int len = bcudp_write_data(l->cid, tx.id, tx.data, tx.len, pkt, sizeof pkt);
		if (len < 0)
			continue;
		if (tx.retransmit) {
			s->stats.retransmits++;
		} else if (s->faults.udp_loss_percent && next_random(s) % 100 < s->faults.udp_loss_percent) {
			s->stats.fault_dropped++;
			continue;
		} else if (s->faults.udp_reorder && !l->held) {
			memcpy(l->held_pkt, pkt, (size_t)len);
			l->held_len = (size_t)len;
			l->held = true;
			continue;
		}
		send_to(s, &l->addr, pkt, (size_t)len);
		if (l->held && !tx.retransmit) {
			send_to(s, &l->addr, l->held_pkt, l->held_len);
			l->held = false;
			s->stats.fault_reordered++;
		}
	}
	if (l->held) {
		send_to(s, &l->addr, l->held_pkt, l->held_len);
		l->held = false;
	}
}

static void deliver(struct cam_bcudp_link *l)
{
	while (!l->closing && bcudp_chan_fill(&l->chan, &l->recv) > 0) {
		const uint8_t *data;
		size_t len;
		while (!l->closing && bcudp_chan_pop(&l->chan, &data, &len) == 0)
			if (len)
				l->srv->app.input(l->session, data, len);
	}
}

static void free_session(struct cam_bcudp_link *l)
{
	if (l->session) {
		void *session = l->session;
		l->session = NULL;
		l->srv->app.free(session);
	}
}

static void link_remove(struct cam_bcudp_server *s, size_t i)
{
	struct cam_bcudp_link *l = s->links[i];
	s->links[i] = NULL;
	l->closing = true;
	free_session(l);
	bcudp_send_free(&l->send);
	free(l);
}

static struct cam_bcudp_link *find_link(struct cam_bcudp_server *s, const struct sockaddr *addr, size_t *ret_i)
{
	for (size_t i = 0; i < CAM_BCUDP_MAX_CLIENTS; i++)
		if (s->links[i] && same_addr(addr, &s->links[i]->addr)) {
			*ret_i = i;
			return s->links[i];
		}
	return NULL;
}

static void on_c2d_c(struct cam_bcudp_server *s, const struct sockaddr *addr, uint32_t tid, const struct bcudp_disc *d)
{
	size_t i;
	struct cam_bcudp_link *l = find_link(s, addr, &i);
	if (l && l->cid != d->cid) {
		link_remove(s, i); /* the client restarted on the same port */
		l = NULL;
	}
	if (!l) {
		for (i = 0; i < CAM_BCUDP_MAX_CLIENTS && s->links[i]; i++)
			;
		if (i == CAM_BCUDP_MAX_CLIENTS)
			return; /* full: the client times out */
		l = calloc(1, sizeof *l);
		if (!l)
			return;
		l->srv = s;
		memcpy(&l->addr, addr, addr_len(addr));
		l->cid = d->cid;
		l->did = s->next_did++;
		l->tid = tid;
		l->last_rx_ms = uv_now(s->loop);
		bcudp_recv_init(&l->recv);
		bcudp_send_init(&l->send);
		l->send.window = CAMERA_SEND_WINDOW;
		bcudp_chan_init(&l->chan);
		s->links[i] = l;
		l->session = s->app.open(s->app.arg, l);
		if (!l->session) {
			link_remove(s, i);
			return;
		}
		s->stats.clients++;
	}
	/* Repeated C2D_C (our reply was lost) gets the same did again. */
	struct bcudp_disc r = {.type = BCUDP_D2C_C_R,
			       .cid = l->cid,
			       .did = l->did,
			       .timer_def = 3000,
			       .timer_hb = 10000,
			       .timer_hbt = 60000};
	send_disc(s, &l->addr, tid, &r);
}

static void on_discovery(struct cam_bcudp_server *s, const struct sockaddr *addr, const struct bcudp_packet *p)
{
	struct bcudp_disc d;
	const char *reason;
	if (bcudp_disc_parse(p->disc.xml, p->disc.xml_len, &d, &reason) < 0) {
		s->stats.malformed++;
		return;
	}
	if (d.type == BCUDP_C2D_S) {
		struct bcudp_disc r = {.type = BCUDP_D2C_S_R};
		memcpy(r.uid, s->uid, sizeof r.uid);
		struct sockaddr_storage to;
		memcpy(&to, addr, addr_len(addr));
		s->stats.lookups++;
		send_disc(s, &to, p->disc.tid, &r);
		return;
	}
	if (d.type == BCUDP_C2D_C) {
		if (strcmp(d.uid, s->uid) != 0) {
			s->stats.wrong_uid++;
			return;
		}
		on_c2d_c(s, addr, p->disc.tid, &d);
		return;
	}
	size_t i;
	struct cam_bcudp_link *l = find_link(s, addr, &i);
	if (!l || d.cid != l->cid || d.did != l->did)
		return;
	l->last_rx_ms = uv_now(s->loop);
	if (d.type == BCUDP_C2D_HB) {
		send_ids(l, BCUDP_D2C_HB);
	} else if (d.type == BCUDP_C2D_DISC) {
		send_ids(l, BCUDP_D2C_DISC);
		link_remove(s, i);
	}
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	struct cam_bcudp_server *s = h->data;
	(void)suggested;
	*buf = uv_buf_init((char *)s->rxbuf, sizeof s->rxbuf);
}

static void on_recv(uv_udp_t *h, ssize_t nread, const uv_buf_t *buf, const struct sockaddr *addr, unsigned flags)
{
	struct cam_bcudp_server *s = h->data;
	(void)flags;
	if (nread <= 0 || !addr)
		return;
	static struct bcudp_packet p; /* large (discovery XML); the loop is single-threaded */
	const char *reason;
	if (bcudp_parse((const uint8_t *)buf->base, (size_t)nread, &p, &reason) < 0) {
		s->stats.malformed++;
		return;
	}
	if (p.kind == BCUDP_DISCOVERY) {
		on_discovery(s, addr, &p);
		return;
	}
	size_t i;
	struct cam_bcudp_link *l = find_link(s, addr, &i);
	if (!l)
		return;
	if (p.kind == BCUDP_DATA && p.data.conn_id == l->did) {
		l->last_rx_ms = uv_now(s->loop);
		int r = bcudp_recv_input(&l->recv, p.data.packet_id, p.data.payload, p.data.len, &reason);
		if (r == -EMSGSIZE) {
			s->stats.malformed++;
			return;
		}
		send_ack(l);
		deliver(l);
	} else if (p.kind == BCUDP_ACK && p.ack.conn_id == l->did) {
		l->last_rx_ms = uv_now(s->loop);
		if (p.ack.sack_len >= BCUDP_CAMERA_ACK_LIMIT) {
			/* What real cameras do with a long ACK vector (BAICHUAN.md section 6). */
			s->stats.ack_vector_hangups++;
			send_ids(l, BCUDP_D2C_DISC);
			link_remove(s, i);
			return;
		}
		if (bcudp_send_ack(&l->send, p.ack.group, p.ack.last_id, p.ack.sack, p.ack.sack_len, &reason) < 0) {
			s->stats.malformed++;
			return;
		}
		flush(l);
	}
}

static void on_tick(uv_timer_t *t)
{
	struct cam_bcudp_server *s = t->data;
	uint64_t now = uv_now(s->loop);
	for (size_t i = 0; i < CAM_BCUDP_MAX_CLIENTS; i++) {
		struct cam_bcudp_link *l = s->links[i];
		if (!l)
			continue;
		if (now - l->last_rx_ms >= IDLE_MS) {
			s->stats.idle_timeouts++;
			link_remove(s, i);
			continue;
		}
		if (l->closing) {
			free_session(l);
			if (bcudp_send_inflight(&l->send) == 0 || now - l->closing_ms >= DRAIN_MS) {
				send_ids(l, BCUDP_D2C_DISC);
				link_remove(s, i);
				continue;
			}
		}
		if (l->ack_pending)
			send_ack(l);
		flush(l);
		deliver(l);
	}
}

int cam_bcudp_link_write(struct cam_bcudp_link *l, const uint8_t *data, size_t len)
{
	if (l->closing)
		return -EPIPE;
	int r = bcudp_send_write(&l->send, data, len);
	if (r < 0)
		return r;
	flush(l);
	return 0;
}

void cam_bcudp_link_close(struct cam_bcudp_link *l)
{
	if (l->closing)
		return;
	l->closing = true;
	l->closing_ms = uv_now(l->srv->loop);
}

static void on_closed(uv_handle_t *h)
{
	struct cam_bcudp_server *s = h->data;
	if (--s->open_handles == 0)
		free(s);
}

void cam_bcudp_server_stop(struct cam_bcudp_server *s)
{
	for (size_t i = 0; i < CAM_BCUDP_MAX_CLIENTS; i++)
		if (s->links[i])
			link_remove(s, i);
	uv_close((uv_handle_t *)&s->timer, on_closed);
	uv_close((uv_handle_t *)&s->udp, on_closed);
}

uint16_t cam_bcudp_server_port(const struct cam_bcudp_server *s)
{
	struct sockaddr_storage a;
	int len = sizeof a;
	if (uv_udp_getsockname(&s->udp, (struct sockaddr *)&a, &len) < 0)
		return 0;
	return ntohs(a.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&a)->sin6_port
					     : ((struct sockaddr_in *)&a)->sin_port);
}

const struct cam_bcudp_server_stats *cam_bcudp_server_stats(const struct cam_bcudp_server *s)
{
	return &s->stats;
}

int cam_bcudp_server_start(uv_loop_t *loop, const char *host, uint16_t port, const char *uid,
			   const struct cam_faults *faults, const struct cam_bcudp_app *app,
			   struct cam_bcudp_server **ret)
{
	struct sockaddr_storage addr;
	if (!uid[0] || strlen(uid) > BCUDP_UID_MAX || strspn(uid, BCUDP_UID_CHARS) != strlen(uid))
		return -EINVAL;
	if (uv_ip4_addr(host, port, (struct sockaddr_in *)&addr) < 0 &&
	    uv_ip6_addr(host, port, (struct sockaddr_in6 *)&addr) < 0)
		return -EINVAL;
	struct cam_bcudp_server *s = calloc(1, sizeof *s);
	if (!s)
		return -ENOMEM;
	s->loop = loop;
	snprintf(s->uid, sizeof s->uid, "%s", uid);
	s->faults = *faults;
	s->app = *app;
	s->rng = FAULT_SEED;
	s->next_did = 1000;
	int r = uv_udp_init(loop, &s->udp);
	if (r < 0) {
		free(s);
		return r;
	}
	uv_timer_init(loop, &s->timer);
	s->udp.data = s->timer.data = s;
	s->open_handles = 2;
	r = uv_udp_bind(&s->udp, (const struct sockaddr *)&addr, 0);
	if (r == 0) {
		int size = SOCKET_BUFFER;
		uv_send_buffer_size((uv_handle_t *)&s->udp, &size);
		size = SOCKET_BUFFER;
		uv_recv_buffer_size((uv_handle_t *)&s->udp, &size);
		r = uv_udp_recv_start(&s->udp, on_alloc, on_recv);
	}
	if (r < 0) {
		cam_bcudp_server_stop(s);
		return r;
	}
	uv_timer_start(&s->timer, on_tick, TICK_MS, TICK_MS);
	*ret = s;
	return 0;
}
