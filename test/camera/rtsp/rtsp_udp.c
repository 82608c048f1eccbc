/* The test camera's RTP/RTCP over UDP (rtsp_udp.h). Sources: RFC 2326 12.39 (the
 * server sends to the client's client_port pair, from the server_port pair it names in
 * its reply; the destination defaults to the host that sent SETUP), RFC 3550 11 (RTCP on
 * its own port). Client RTCP (receiver reports) and libavformat's NAT punch packets are
 * read and ignored, as a camera does. */
#include "rtsp_udp.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "rtp_h26x.h"

struct rtsp_udp {
	uv_udp_t sock[2]; /* RTP, RTCP */
	struct sockaddr_storage peer[2];
	const struct cam_faults *faults;
	int open_handles;
	uint8_t held[RTP_MAX_PACKET]; /* udp-reorder: the packet sent after the next one */
	size_t held_len;
	uint8_t in[2048];
};

static void on_closed(uv_handle_t *h)
{
	struct rtsp_udp *u = h->data;
	if (--u->open_handles == 0)
		free(u);
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	struct rtsp_udp *u = h->data;
	(void)suggested;
	*buf = uv_buf_init((char *)u->in, sizeof u->in);
}

static void on_recv(uv_udp_t *h, ssize_t n, const uv_buf_t *buf, const struct sockaddr *from, unsigned flags)
{
	(void)h, (void)n, (void)buf, (void)from, (void)flags;
}

static uint16_t sock_port(uv_udp_t *s)
{
	struct sockaddr_storage a;
	int len = sizeof a;
	if (uv_udp_getsockname(s, (struct sockaddr *)&a, &len) < 0)
		return 0;
	return ntohs(a.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&a)->sin6_port
					     : ((struct sockaddr_in *)&a)->sin_port);
}

static void set_port(struct sockaddr_storage *a, uint16_t port)
{
	if (a->ss_family == AF_INET6)
		((struct sockaddr_in6 *)a)->sin6_port = htons(port);
	else
		((struct sockaddr_in *)a)->sin_port = htons(port);
}

int rtsp_udp_open(uv_loop_t *loop, const struct sockaddr *local, const struct sockaddr *client,
		  const uint16_t client_port[2], const struct cam_faults *faults, struct rtsp_udp **ret,
		  uint16_t server_port[2])
{
	struct rtsp_udp *u = calloc(1, sizeof *u);
	if (!u)
		return -ENOMEM;
	u->faults = faults;
	size_t alen = local->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
	int r = 0;
	for (int i = 0; i < 2; i++) {
		struct sockaddr_storage here;
		memcpy(&here, local, alen);
		set_port(&here, 0);
		memcpy(&u->peer[i], client, alen);
		set_port(&u->peer[i], client_port[i]);
		uv_udp_init(loop, &u->sock[i]);
		u->sock[i].data = u;
		u->open_handles++;
		if (r == 0)
			r = uv_udp_bind(&u->sock[i], (const struct sockaddr *)&here, 0);
		if (r == 0)
			r = uv_udp_recv_start(&u->sock[i], on_alloc, on_recv);
		server_port[i] = r == 0 ? sock_port(&u->sock[i]) : 0;
	}
	if (r == 0 && (!server_port[0] || !server_port[1]))
		r = -EADDRNOTAVAIL;
	if (r < 0) {
		rtsp_udp_close(u);
		return r;
	}
	*ret = u;
	return 0;
}

static void send_to(struct rtsp_udp *u, int i, const uint8_t *pkt, size_t len)
{
	uv_buf_t b = uv_buf_init((char *)pkt, (unsigned)len);
	/* A datagram the kernel cannot take now is lost, as on a real network. */
	(void)uv_udp_try_send(&u->sock[i], &b, 1, (const struct sockaddr *)&u->peer[i]);
}

static unsigned percent(void)
{
	uint32_t v;
	if (getrandom(&v, sizeof v, 0) != sizeof v)
		v = (uint32_t)rand();
	return v % 100;
}

void rtsp_udp_send_rtp(struct rtsp_udp *u, const uint8_t *pkt, size_t len)
{
	if (u->faults->udp_silent)
		return;
	if (u->faults->udp_loss_percent && percent() < u->faults->udp_loss_percent)
		return;
	if (!u->faults->udp_reorder) {
		send_to(u, 0, pkt, len);
		return;
	}
	if (!u->held_len) {
		memcpy(u->held, pkt, len);
		u->held_len = len;
		return;
	}
	send_to(u, 0, pkt, len);
	send_to(u, 0, u->held, u->held_len);
	u->held_len = 0;
}

void rtsp_udp_send_rtcp(struct rtsp_udp *u, const uint8_t *pkt, size_t len)
{
	if (!u->faults->udp_silent)
		send_to(u, 1, pkt, len);
}

void rtsp_udp_close(struct rtsp_udp *u)
{
	for (int i = 0; i < 2; i++)
		uv_close((uv_handle_t *)&u->sock[i], on_closed);
}
