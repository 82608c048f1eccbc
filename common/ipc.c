/* The framed IPC link: recvmsg/sendmsg on a uv_poll_t so that any descriptor (sockets,
 * media files) can cross with SCM_RIGHTS, and every buffer and queue is bounded. The
 * error callback runs only from the loop (on_poll), never from inside kp_ipc_send or
 * kp_ipc_uncork: a write that fails there is remembered (send_err) and reported at the
 * next wakeup, so that no caller sees its own state torn down by the send it made. */
#include "ipc.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define RECV_CHUNK       (64 * 1024)
#define FDQ_MAX          (KP_IPC_MAX_FDS * 4)
#define READS_PER_WAKEUP 16
#define FLUSH_IOV        64

struct out_item {
	struct out_item *next;
	uint8_t *buf;
	size_t len;
	size_t off;
	int fds[KP_IPC_MAX_FDS];
	unsigned nfds;
};

enum read_state { READ_HEAD, READ_ENVELOPE, READ_TAIL };

struct kp_ipc {
	uv_poll_t poll;
	int fd;
	struct kp_ipc_limits lim;
	kp_ipc_frame_cb on_frame;
	kp_ipc_error_cb on_error;
	void *arg;
	int failed;
	int destroyed;
	int polling_write;
	int corked;   /* sends queue; kp_ipc_uncork writes them */
	int send_err; /* -errno of a write that failed outside on_poll, reported there */

	enum read_state state;
	uint8_t head[KP_FRAME_HEAD_MAX];
	size_t head_have;
	uint32_t env_len;
	kp_Envelope env;
	uint8_t *tail;
	size_t tail_have;
	int fdq[FDQ_MAX];
	unsigned fdq_len;
	uint8_t rbuf[RECV_CHUNK];

	struct out_item *out_head, *out_tail;
	struct kp_ipc_stats stats;
};

static void update_poll(struct kp_ipc *c);

static void fail(struct kp_ipc *c, int err, const char *reason)
{
	if (c->failed)
		return;
	c->failed = 1;
	uv_poll_stop(&c->poll);
	c->on_error(c, err, reason, c->arg);
}

static void close_fdq(struct kp_ipc *c)
{
	for (unsigned i = 0; i < c->fdq_len; i++)
		close(c->fdq[i]);
	c->fdq_len = 0;
}

static void free_queue(struct kp_ipc *c)
{
	struct out_item *it = c->out_head;
	while (it) {
		struct out_item *next = it->next;
		for (unsigned i = 0; i < it->nfds; i++)
			close(it->fds[i]);
		free(it->buf);
		free(it);
		it = next;
	}
	c->out_head = c->out_tail = NULL;
	c->stats.queue_items = 0;
	c->stats.queue_bytes = 0;
}

static void reset_read(struct kp_ipc *c)
{
	free(c->tail);
	c->tail = NULL;
	c->tail_have = 0;
	c->head_have = 0;
	c->state = READ_HEAD;
}

static int deliver(struct kp_ipc *c)
{
	struct kp_ipc_frame f = {.env = &c->env, .tail = c->tail, .tail_len = c->env.tail_len};
	if (c->env.fd_count > c->fdq_len) {
		fail(c, -EBADMSG, "frame declares descriptors that did not arrive");
		return -1;
	}
	f.nfds = c->env.fd_count;
	for (unsigned i = 0; i < f.nfds; i++)
		f.fds[i] = c->fdq[i];
	memmove(c->fdq, c->fdq + f.nfds, (c->fdq_len - f.nfds) * sizeof c->fdq[0]);
	c->fdq_len -= f.nfds;
	c->stats.frames_in++;
	c->on_frame(c, &f, c->arg);
	for (unsigned i = 0; i < f.nfds; i++)
		if (f.fds[i] >= 0)
			close(f.fds[i]);
	reset_read(c);
	return (c->failed || c->destroyed) ? -1 : 0;
}

static size_t take(uint8_t *dst, size_t need, const uint8_t *src, size_t avail)
{
	size_t n = need < avail ? need : avail;
	memcpy(dst, src, n);
	return n;
}

static int consume(struct kp_ipc *c, const uint8_t *p, size_t n)
{
	const char *reason = NULL;
	int r;
	while (n > 0) {
		size_t used;
		switch (c->state) {
		case READ_HEAD:
			used = take(c->head + c->head_have, 4 - c->head_have, p, n);
			c->head_have += used;
			if (c->head_have == 4) {
				r = kp_frame_header(c->head, &c->env_len, &reason);
				if (r < 0) {
					fail(c, r, reason);
					return -1;
				}
				c->state = READ_ENVELOPE;
			}
			break;
		case READ_ENVELOPE:
			used = take(c->head + c->head_have, 4 + c->env_len - c->head_have, p, n);
			c->head_have += used;
			if (c->head_have == 4 + c->env_len) {
				r = kp_frame_decode(c->head + 4, c->env_len, c->lim.from, c->lim.to, c->lim.max_tail,
						    &c->env, &reason);
				if (r < 0) {
					fail(c, r, reason);
					return -1;
				}
				if (c->env.tail_len == 0) {
					if (deliver(c) < 0)
						return -1;
				} else {
					c->tail = malloc(c->env.tail_len);
					if (!c->tail) {
						fail(c, -ENOMEM, "cannot allocate the frame's tail");
						return -1;
					}
					c->state = READ_TAIL;
				}
			}
			break;
		case READ_TAIL:
			used = take(c->tail + c->tail_have, c->env.tail_len - c->tail_have, p, n);
			c->tail_have += used;
			if (c->tail_have == c->env.tail_len && deliver(c) < 0)
				return -1;
			break;
		default:
			return -1;
		}
		p += used;
		n -= used;
	}
	return 0;
}

static int read_some(struct kp_ipc *c)
{
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(sizeof(int) * FDQ_MAX)];
	} ctl;
	struct iovec iov = {.iov_base = c->rbuf, .iov_len = sizeof c->rbuf};
	struct msghdr msg = {
	    .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf, .msg_controllen = sizeof ctl.buf};
	ssize_t n = recvmsg(c->fd, &msg, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
	if (n < 0) {
		if (errno == EAGAIN || errno == EINTR)
			return 1;
		fail(c, -errno, strerror(errno));
		return -1;
	}
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(&msg); cm; cm = CMSG_NXTHDR(&msg, cm)) {
		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		unsigned nfd = (unsigned)((cm->cmsg_len - CMSG_LEN(0)) / sizeof(int));
		int fds[FDQ_MAX];
		memcpy(fds, CMSG_DATA(cm), nfd * sizeof(int));
		for (unsigned i = 0; i < nfd; i++) {
			if (c->fdq_len < FDQ_MAX)
				c->fdq[c->fdq_len++] = fds[i];
			else
				close(fds[i]);
		}
		if (c->fdq_len == FDQ_MAX) {
			fail(c, -EBADMSG, "too many descriptors received");
			return -1;
		}
	}
	if (msg.msg_flags & MSG_CTRUNC) {
		fail(c, -EBADMSG, "descriptor list truncated");
		return -1;
	}
	if (n == 0) {
		fail(c, -EPIPE,
		     c->state == READ_HEAD && c->head_have == 0 ? "peer closed the link"
								: "peer closed the link inside a frame");
		return -1;
	}
	return consume(c, c->rbuf, (size_t)n);
}

/* The queue's frames go out several per sendmsg (up to FLUSH_IOV): a frame that
 * carries descriptors starts a call of its own, since they travel with its first byte.
 * 0, or -errno of a failed write (the caller reports it). */
static int flush(struct kp_ipc *c)
{
	if (c->corked)
		return 0;
	while (c->out_head) {
		struct out_item *it = c->out_head;
		union {
			struct cmsghdr align;
			char buf[CMSG_SPACE(sizeof(int) * KP_IPC_MAX_FDS)];
		} ctl;
		struct iovec iov[FLUSH_IOV];
		int niov = 0;
		for (struct out_item *o = it; o && niov < FLUSH_IOV; o = o->next) {
			if (o != it && o->nfds > 0)
				break;
			iov[niov++] = (struct iovec){.iov_base = o->buf + o->off, .iov_len = o->len - o->off};
		}
		struct msghdr msg = {.msg_iov = iov, .msg_iovlen = (size_t)niov};
		if (it->off == 0 && it->nfds > 0) {
			memset(&ctl, 0, sizeof ctl);
			msg.msg_control = ctl.buf;
			msg.msg_controllen = CMSG_SPACE(sizeof(int) * it->nfds);
			struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);
			cm->cmsg_level = SOL_SOCKET;
			cm->cmsg_type = SCM_RIGHTS;
			cm->cmsg_len = CMSG_LEN(sizeof(int) * it->nfds);
			memcpy(CMSG_DATA(cm), it->fds, sizeof(int) * it->nfds);
		}
		ssize_t n = sendmsg(c->fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				return 0;
			return -errno;
		}
		if (it->off == 0) {
			for (unsigned i = 0; i < it->nfds; i++)
				close(it->fds[i]);
			it->nfds = 0;
		}
		size_t sent = (size_t)n;
		while (sent) {
			it = c->out_head;
			size_t left = it->len - it->off;
			if (sent < left) {
				it->off += sent;
				break;
			}
			sent -= left;
			c->out_head = it->next;
			if (!c->out_head)
				c->out_tail = NULL;
			c->stats.queue_items--;
			c->stats.queue_bytes -= it->len;
			c->stats.frames_out++;
			free(it->buf);
			free(it);
		}
	}
	return 0;
}

static void on_poll(uv_poll_t *h, int status, int events)
{
	struct kp_ipc *c = h->data;
	if (c->failed || c->destroyed)
		return;
	if (status < 0) {
		/* libuv reports EPOLLERR as UV_EBADF; the socket knows the real error. */
		int soerr = 0;
		socklen_t sl = sizeof soerr;
		if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) == 0 && soerr)
			fail(c, -soerr, strerror(soerr));
		else
			while (!c->failed && !c->destroyed && read_some(c) == 0)
				;
		if (!c->failed && !c->destroyed)
			fail(c, status, uv_strerror(status));
		return;
	}
	if (c->send_err) {
		fail(c, c->send_err, strerror(-c->send_err));
		return;
	}
	if (events & UV_WRITABLE) {
		int r = flush(c);
		if (r < 0) {
			fail(c, r, strerror(-r));
			return;
		}
	}
	if (events & (UV_READABLE | UV_DISCONNECT)) {
		for (int i = 0; i < READS_PER_WAKEUP; i++) {
			int r = read_some(c);
			if (r != 0 || c->failed || c->destroyed)
				break;
		}
	}
	if (!c->failed && !c->destroyed)
		update_poll(c);
}

static void update_poll(struct kp_ipc *c)
{
	int want_write = (c->out_head != NULL && !c->corked) || c->send_err;
	if (c->polling_write == want_write && uv_is_active((uv_handle_t *)&c->poll))
		return;
	c->polling_write = want_write;
	uv_poll_start(&c->poll, UV_READABLE | UV_DISCONNECT | (want_write ? UV_WRITABLE : 0), on_poll);
}

void kp_ipc_cork(struct kp_ipc *c)
{
	c->corked = 1;
}

/* A write that failed in a send or an uncork: reported by on_poll, which the write
 * watch wakes at once (the socket is writable, or in error, or hung up). */
static void defer_error(struct kp_ipc *c, int err)
{
	c->send_err = err;
	update_poll(c);
}

void kp_ipc_uncork(struct kp_ipc *c)
{
	c->corked = 0;
	if (c->failed || c->destroyed || c->send_err)
		return;
	int r = flush(c);
	if (r < 0)
		defer_error(c, r);
	else
		update_poll(c);
}

int kp_ipc_open(uv_loop_t *loop, int fd, const struct kp_ipc_limits *lim, kp_ipc_frame_cb on_frame,
		kp_ipc_error_cb on_error, void *arg, struct kp_ipc **ret)
{
	int fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return -errno;
	if (fcntl(fd, F_SETFD, FD_CLOEXEC) < 0)
		return -errno;
	struct kp_ipc *c = calloc(1, sizeof *c);
	if (!c)
		return -ENOMEM;
	c->fd = fd;
	c->lim = *lim;
	c->on_frame = on_frame;
	c->on_error = on_error;
	c->arg = arg;
	int r = uv_poll_init(loop, &c->poll, fd);
	if (r < 0) {
		free(c);
		return r;
	}
	c->poll.data = c;
	update_poll(c);
	*ret = c;
	return 0;
}

int kp_ipc_send(struct kp_ipc *c, const kp_Envelope *env, const void *tail, size_t tail_len, const int *fds,
		unsigned nfds)
{
	struct kp_frame_msg m;
	if (kp_frame_msg_of(env, &m) < 0)
		return -EINVAL;
	return kp_ipc_send_msg(c, &m, tail, tail_len, fds, nfds);
}

int kp_ipc_send_msg(struct kp_ipc *c, const struct kp_frame_msg *m, const void *tail, size_t tail_len, const int *fds,
		    unsigned nfds)
{
	if (c->failed || c->destroyed || c->send_err)
		return -EPIPE;
	if (nfds > KP_IPC_MAX_FDS || tail_len > UINT32_MAX)
		return -EINVAL;
	uint8_t head[KP_FRAME_HEAD_MAX];
	size_t head_len;
	int r = kp_frame_encode_msg(m, (uint32_t)tail_len, nfds, head, sizeof head, &head_len);
	if (r < 0)
		return r;
	size_t len = head_len + tail_len;
	if (c->stats.queue_items + 1 > c->lim.queue_items || c->stats.queue_bytes + len > c->lim.queue_bytes) {
		c->stats.send_rejected++;
		return -ENOBUFS;
	}
	struct out_item *it = calloc(1, sizeof *it);
	if (!it)
		return -ENOMEM;
	it->buf = malloc(len);
	if (!it->buf) {
		free(it);
		return -ENOMEM;
	}
	memcpy(it->buf, head, head_len);
	if (tail_len)
		memcpy(it->buf + head_len, tail, tail_len);
	it->len = len;
	for (unsigned i = 0; i < nfds; i++) {
		it->fds[i] = fcntl(fds[i], F_DUPFD_CLOEXEC, 3);
		if (it->fds[i] < 0) {
			r = -errno;
			for (unsigned j = 0; j < i; j++)
				close(it->fds[j]);
			free(it->buf);
			free(it);
			return r;
		}
		it->nfds++;
	}
	if (c->out_tail)
		c->out_tail->next = it;
	else
		c->out_head = it;
	c->out_tail = it;
	c->stats.queue_items++;
	c->stats.queue_bytes += len;
	r = flush(c);
	if (r < 0) {
		defer_error(c, r);
		return -EPIPE;
	}
	update_poll(c);
	return 0;
}

static void on_closed(uv_handle_t *h)
{
	struct kp_ipc *c = h->data;
	close(c->fd);
	free(c);
}

void kp_ipc_destroy(struct kp_ipc *c)
{
	if (!c || c->destroyed)
		return;
	c->destroyed = 1;
	free_queue(c);
	close_fdq(c);
	reset_read(c);
	uv_close((uv_handle_t *)&c->poll, on_closed);
}

void kp_ipc_get_stats(const struct kp_ipc *c, struct kp_ipc_stats *ret)
{
	*ret = c->stats;
}

int kp_ipc_fd(const struct kp_ipc *c)
{
	return c->fd;
}
