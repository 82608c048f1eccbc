/* The test camera's Baichuan TCP listeners (one per camera of the process): each
 * accepted connection runs one cam_bc_session; what the socket takes at once is written
 * without a copy, the rest is copied and queued up to a byte ceiling, and a client that
 * does not read fast enough is disconnected instead of being buffered for without bound. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "camera.h"
#include "kp_limits.h"

#define CAM_BC_TCP_SEND_MAX    (8 * KP_MIB)
#define CAM_BC_TCP_MAX_CLIENTS 64
#define CAM_BC_TCP_READ_BUF    (64 * KP_KIB)

struct cam_bc_listener {
	uv_tcp_t tcp;
	const struct cam_config *cfg;
	struct cam_stream_stats *stats;
	unsigned clients;
};

struct cam_bc_conn {
	uv_tcp_t tcp;
	struct cam_bc_listener *l;
	struct cam_bc_session *s;
	size_t queued;
	bool closing;
	uint8_t rbuf[CAM_BC_TCP_READ_BUF];
};

struct cam_bc_write {
	uv_write_t req;
	struct cam_bc_conn *c;
	size_t len;
	uint8_t data[];
};

static void on_conn_closed(uv_handle_t *h)
{
	struct cam_bc_conn *c = h->data;
	cam_bc_session_free(c->s);
	c->l->clients--;
	free(c);
}

static void conn_close(void *t)
{
	struct cam_bc_conn *c = t;
	if (c->closing)
		return;
	c->closing = true;
	uv_close((uv_handle_t *)&c->tcp, on_conn_closed);
}

static void on_written(uv_write_t *req, int status)
{
	struct cam_bc_write *w = req->data;
	w->c->queued -= w->len;
	if (status < 0)
		conn_close(w->c);
	free(w);
}

static int conn_write(void *t, const uint8_t *data, size_t len)
{
	struct cam_bc_conn *c = t;
	if (c->closing)
		return -EPIPE;
	if (c->queued + len > CAM_BC_TCP_SEND_MAX) {
		fprintf(stderr,
			"keeppeek-test-camera: Baichuan client does not read fast enough (%zu bytes queued); "
			"disconnecting it\n",
			c->queued);
		return -ENOBUFS;
	}
	if (c->queued == 0) {
		uv_buf_t now = uv_buf_init((char *)data, (unsigned)len);
		int n = uv_try_write((uv_stream_t *)&c->tcp, &now, 1);
		if (n < 0 && n != UV_EAGAIN)
			return -EPIPE;
		if (n > 0) {
			data += n;
			len -= (size_t)n;
		}
		if (len == 0)
			return 0;
	}
	struct cam_bc_write *w = malloc(sizeof *w + len);
	if (!w)
		return -ENOMEM;
	memcpy(w->data, data, len);
	w->c = c;
	w->len = len;
	w->req.data = w;
	uv_buf_t b = uv_buf_init((char *)w->data, (unsigned)len);
	int err = uv_write(&w->req, (uv_stream_t *)&c->tcp, &b, 1, on_written);
	if (err < 0) {
		free(w);
		return -EPIPE;
	}
	c->queued += len;
	return 0;
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	struct cam_bc_conn *c = h->data;
	(void)suggested;
	*buf = uv_buf_init((char *)c->rbuf, sizeof c->rbuf);
}

static void on_read(uv_stream_t *st, ssize_t n, const uv_buf_t *buf)
{
	struct cam_bc_conn *c = st->data;
	(void)buf;
	if (c->closing)
		return;
	if (n < 0) {
		conn_close(c);
		return;
	}
	if (n > 0)
		cam_bc_session_input(c->s, c->rbuf, (size_t)n);
}

static void on_connection(uv_stream_t *server, int status)
{
	if (status < 0)
		return;
	struct cam_bc_conn *c = calloc(1, sizeof *c);
	if (!c)
		return;
	struct cam_bc_listener *l = server->data;
	uv_tcp_init(server->loop, &c->tcp);
	c->tcp.data = c;
	c->l = l;
	l->clients++;
	if (uv_accept(server, (uv_stream_t *)&c->tcp) < 0 || l->clients > CAM_BC_TCP_MAX_CLIENTS) {
		conn_close(c);
		return;
	}
	uv_tcp_nodelay(&c->tcp, 1);
	struct cam_bc_transport tr = {.write = conn_write, .close = conn_close, .t = c};
	c->s = cam_bc_session_new(server->loop, l->cfg, l->stats, tr);
	if (!c->s || uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read) < 0)
		conn_close(c);
}

static void on_listener_closed(uv_handle_t *h)
{
	free(h->data);
}

int cam_baichuan_tcp_listen(uv_loop_t *loop, const struct cam_config *cfg, struct cam_stream_stats stats[2],
			    const char *host, uint16_t port)
{
	struct sockaddr_storage addr;
	int err = uv_ip4_addr(host, port, (struct sockaddr_in *)&addr);
	if (err < 0 && (err = uv_ip6_addr(host, port, (struct sockaddr_in6 *)&addr)) < 0)
		return err;
	struct cam_bc_listener *l = calloc(1, sizeof *l);
	if (!l)
		return -ENOMEM;
	l->cfg = cfg;
	l->stats = stats;
	if ((err = uv_tcp_init(loop, &l->tcp)) < 0) {
		free(l);
		return err;
	}
	l->tcp.data = l;
	if ((err = uv_tcp_bind(&l->tcp, (const struct sockaddr *)&addr, 0)) < 0 ||
	    (err = uv_listen((uv_stream_t *)&l->tcp, 64, on_connection)) < 0) {
		uv_close((uv_handle_t *)&l->tcp, on_listener_closed);
		return err;
	}
	return 0;
}
