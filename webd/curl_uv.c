/* libcurl's multi interface on webd's libuv loop (see curl_uv.h). */
#include "curl_uv.h"

#include <stdlib.h>

#include "log.h"

struct sock {
	uv_poll_t poll;
	curl_socket_t fd;
	struct curl_uv *c;
};

static void sock_closed(uv_handle_t *handle)
{
	free(handle->data);
}

static void poll_cb(uv_poll_t *p, int status, int events)
{
	struct sock *s = p->data;
	int flags = status < 0 ? CURL_CSELECT_ERR : 0;
	if (events & UV_READABLE)
		flags |= CURL_CSELECT_IN;
	if (events & UV_WRITABLE)
		flags |= CURL_CSELECT_OUT;
	int running;
	struct curl_uv *c = s->c;
	c->k->multi_socket_action(c->multi, s->fd, flags, &running);
	c->done();
}

static int socket_cb(CURL *easy, curl_socket_t fd, int what, void *userp, void *socketp)
{
	(void)easy;
	struct curl_uv *c = userp;
	struct sock *s = socketp;
	if (what == CURL_POLL_REMOVE) {
		if (s) {
			uv_poll_stop(&s->poll);
			uv_close((uv_handle_t *)&s->poll, sock_closed);
			c->k->multi_assign(c->multi, fd, NULL);
		}
		return 0;
	}
	if (!s) {
		s = calloc(1, sizeof *s);
		if (!s)
			return -1;
		s->fd = fd;
		s->c = c;
		int r = uv_poll_init_socket(c->loop, &s->poll, fd);
		if (r < 0) {
			kp_err("%s: cannot watch socket %d: %s", c->who, fd, uv_strerror(r));
			free(s);
			return -1;
		}
		s->poll.data = s;
		c->k->multi_assign(c->multi, fd, s);
	}
	int ev = (what & CURL_POLL_IN ? UV_READABLE : 0) | (what & CURL_POLL_OUT ? UV_WRITABLE : 0);
	int r = uv_poll_start(&s->poll, ev, poll_cb);
	if (r < 0)
		kp_err("%s: cannot watch socket %d: %s", c->who, fd, uv_strerror(r));
	return 0;
}

static void timeout_cb(uv_timer_t *t)
{
	struct curl_uv *c = t->data;
	int running;
	c->k->multi_socket_action(c->multi, CURL_SOCKET_TIMEOUT, 0, &running);
	c->done();
}

static int timer_cb(CURLM *multi, long timeout_ms, void *userp)
{
	(void)multi;
	struct curl_uv *c = userp;
	if (timeout_ms < 0)
		uv_timer_stop(&c->timer);
	else
		uv_timer_start(&c->timer, timeout_cb, (uint64_t)timeout_ms, 0);
	return 0;
}

void curl_uv_drive(struct curl_uv *c)
{
	c->timer.data = c;
	c->k->multi_setopt(c->multi, CURLMOPT_SOCKETFUNCTION, socket_cb);
	c->k->multi_setopt(c->multi, CURLMOPT_SOCKETDATA, c);
	c->k->multi_setopt(c->multi, CURLMOPT_TIMERFUNCTION, timer_cb);
	c->k->multi_setopt(c->multi, CURLMOPT_TIMERDATA, c);
}
