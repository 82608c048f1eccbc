/* The TCP transport under a Baichuan session (bc_transport.h): name resolution and
 * connect on libuv with a deadline, reads handed to the session, and a write queue
 * bounded in bytes. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bc_transport.h"
#include "kp_limits.h"

/* Queued but unsent bytes allowed: a few large video requests never get near it; a
 * camera that stops reading does. */
#define BC_TCP_SEND_MAX (4 * KP_MIB)
#define BC_TCP_READ_BUF (64 * KP_KIB)

struct bc_tcp {
	struct bc_transport base;
	uv_loop_t *loop;
	struct bc_transport_cbs cbs;
	void *arg;
	uv_getaddrinfo_t gai;
	uv_connect_t conn;
	uv_tcp_t tcp;
	uv_timer_t timer;
	unsigned handles; /* open libuv handles and pending requests still referring to us */
	bool gai_pending, tcp_open, connected, closed, failed;
	size_t queued;
	uint16_t port;
	char host[256];
	uint8_t rbuf[BC_TCP_READ_BUF];
};

struct bc_tcp_write {
	uv_write_t req;
	struct bc_tcp *t;
	size_t len;
	uint8_t data[];
};

static void tcp_unref(struct bc_tcp *t)
{
	if (--t->handles == 0)
		free(t);
}

static void on_handle_closed(uv_handle_t *h)
{
	tcp_unref(h->data);
}

static void tcp_fail(struct bc_tcp *t, int err, const char *reason)
{
	if (t->closed || t->failed)
		return;
	t->failed = true;
	uv_timer_stop(&t->timer);
	if (t->tcp_open)
		uv_read_stop((uv_stream_t *)&t->tcp);
	t->cbs.on_error(t->arg, err, reason);
}

static void on_timeout(uv_timer_t *timer)
{
	struct bc_tcp *t = timer->data;
	tcp_fail(t, -ETIMEDOUT, "connect timed out");
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	struct bc_tcp *t = h->data;
	(void)suggested;
	*buf = uv_buf_init((char *)t->rbuf, sizeof t->rbuf);
}

static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
	struct bc_tcp *t = s->data;
	(void)buf;
	if (t->closed || t->failed)
		return;
	if (n == UV_EOF) {
		tcp_fail(t, -ECONNRESET, "camera closed the connection");
		return;
	}
	if (n < 0) {
		tcp_fail(t, (int)n, uv_strerror((int)n));
		return;
	}
	if (n > 0)
		t->cbs.on_data(t->arg, t->rbuf, (size_t)n);
}

static void on_connect(uv_connect_t *req, int status)
{
	struct bc_tcp *t = req->data;
	t->handles--; /* the request; the tcp handle keeps t alive */
	if (t->closed || t->failed)
		return;
	if (status < 0) {
		tcp_fail(t, status, uv_strerror(status));
		return;
	}
	uv_timer_stop(&t->timer);
	t->connected = true;
	uv_tcp_nodelay(&t->tcp, 1);
	int err = uv_read_start((uv_stream_t *)&t->tcp, on_alloc, on_read);
	if (err < 0) {
		tcp_fail(t, err, uv_strerror(err));
		return;
	}
	t->cbs.on_connected(t->arg);
}

static void on_resolved(uv_getaddrinfo_t *req, int status, struct addrinfo *ai)
{
	struct bc_tcp *t = req->data;
	t->gai_pending = false;
	int err = status;
	if (t->closed || t->failed || status < 0) {
		if (!t->closed && !t->failed)
			tcp_fail(t, status, "cannot resolve the camera's host name");
		goto out;
	}
	if ((err = uv_tcp_init(t->loop, &t->tcp)) < 0) {
		tcp_fail(t, err, uv_strerror(err));
		goto out;
	}
	t->tcp.data = t;
	t->tcp_open = true;
	t->handles++;
	t->conn.data = t;
	if ((err = uv_tcp_connect(&t->conn, &t->tcp, ai->ai_addr, on_connect)) < 0) {
		tcp_fail(t, err, uv_strerror(err));
		goto out;
	}
	t->handles++;
out:
	uv_freeaddrinfo(ai);
	tcp_unref(t); /* the resolution request */
}

static void on_written(uv_write_t *req, int status)
{
	struct bc_tcp_write *w = req->data;
	struct bc_tcp *t = w->t;
	t->queued -= w->len;
	free(w);
	if (status < 0 && status != UV_ECANCELED)
		tcp_fail(t, status, uv_strerror(status));
	tcp_unref(t);
}

static int tcp_write(struct bc_transport *base, const uint8_t *data, size_t len)
{
	struct bc_tcp *t = (struct bc_tcp *)base;
	if (t->closed || t->failed || !t->connected)
		return -EPIPE;
	if (t->queued + len > BC_TCP_SEND_MAX)
		return -ENOBUFS;
	struct bc_tcp_write *w = malloc(sizeof *w + len);
	if (!w)
		return -ENOMEM;
	memcpy(w->data, data, len);
	w->t = t;
	w->len = len;
	w->req.data = w;
	uv_buf_t b = uv_buf_init((char *)w->data, (unsigned)len);
	int err = uv_write(&w->req, (uv_stream_t *)&t->tcp, &b, 1, on_written);
	if (err < 0) {
		free(w);
		return -EPIPE;
	}
	t->queued += len;
	t->handles++;
	return 0;
}

static void tcp_close(struct bc_transport *base)
{
	struct bc_tcp *t = (struct bc_tcp *)base;
	if (!t || t->closed)
		return;
	t->closed = true;
	if (t->gai_pending)
		uv_cancel((uv_req_t *)&t->gai);
	uv_close((uv_handle_t *)&t->timer, on_handle_closed);
	if (t->tcp_open)
		uv_close((uv_handle_t *)&t->tcp, on_handle_closed);
}

static const struct bc_transport_ops bc_tcp_ops = {.write = tcp_write, .close = tcp_close};

int bc_tcp_connect(uv_loop_t *loop, const char *host, uint16_t port, unsigned timeout_ms,
		   const struct bc_transport_cbs *cbs, void *arg, struct bc_transport **ret)
{
	if (strlen(host) >= sizeof((struct bc_tcp *)0)->host)
		return -ENAMETOOLONG;
	struct bc_tcp *t = calloc(1, sizeof *t);
	if (!t)
		return -ENOMEM;
	t->base.ops = &bc_tcp_ops;
	t->loop = loop;
	t->cbs = *cbs;
	t->arg = arg;
	t->port = port;
	snprintf(t->host, sizeof t->host, "%s", host);
	uv_timer_init(loop, &t->timer);
	t->timer.data = t;
	t->handles = 1;
	char service[8];
	snprintf(service, sizeof service, "%u", port);
	struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_protocol = IPPROTO_TCP};
	t->gai.data = t;
	int err = uv_getaddrinfo(loop, &t->gai, on_resolved, host, service, &hints);
	if (err < 0) {
		t->closed = true;
		uv_close((uv_handle_t *)&t->timer, on_handle_closed);
		return err;
	}
	t->gai_pending = true;
	t->handles++;
	uv_timer_start(&t->timer, on_timeout, timeout_ms, 0);
	*ret = &t->base;
	return 0;
}
