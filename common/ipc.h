/* A framed IPC link on a non-blocking AF_UNIX stream socket driven by libuv: reads
 * frames (envelope, raw tail, passed descriptors), bounds the send queue in items and
 * bytes, and reports a broken or misbehaving peer once, with a reason. */
#ifndef KP_IPC_H
#define KP_IPC_H

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "ipc_frame.h"
#include "kp_limits.h"

struct kp_ipc;

struct kp_ipc_limits {
	kp_Peer from; /* the process at the other end: the IPC table's sender */
	kp_Peer to;   /* this end: the table's receiver */
	size_t max_tail;
	size_t queue_items;
	size_t queue_bytes;
};

struct kp_ipc_frame {
	const kp_Envelope *env;
	const uint8_t *tail;
	size_t tail_len;
	int fds[KP_IPC_MAX_FDS]; /* set an entry to -1 to keep it; the rest are closed */
	unsigned nfds;
};

struct kp_ipc_stats {
	uint64_t frames_in;
	uint64_t frames_out;
	uint64_t send_rejected;
	size_t queue_items;
	size_t queue_bytes;
};

typedef void (*kp_ipc_frame_cb)(struct kp_ipc *c, struct kp_ipc_frame *f, void *arg);
/* Called once when the link fails (EOF, I/O error, protocol violation), always from the
 * loop: never from inside kp_ipc_send, kp_ipc_send_msg or kp_ipc_uncork, whose failed
 * write is reported at the next wakeup. The link is inert afterwards; the owner calls
 * kp_ipc_destroy, possibly from inside this callback. */
typedef void (*kp_ipc_error_cb)(struct kp_ipc *c, int err, const char *reason, void *arg);

int kp_ipc_open(uv_loop_t *loop, int fd, const struct kp_ipc_limits *lim, kp_ipc_frame_cb on_frame,
		kp_ipc_error_cb on_error, void *arg, struct kp_ipc **ret);

/* Queues one frame. Descriptors are duplicated; the caller keeps its own. Returns 0,
 * -ENOBUFS when the queue is at its ceiling, -EPIPE when the link has failed or this
 * write failed (the error callback follows from the loop). */
int kp_ipc_send(struct kp_ipc *c, const kp_Envelope *env, const void *tail, size_t tail_len, const int *fds,
		unsigned nfds);
/* The same for one message named without an envelope (ipc_frame.h): what the hot paths
 * use, so that no kp_Envelope is built, cleared or copied per frame. */
int kp_ipc_send_msg(struct kp_ipc *c, const struct kp_frame_msg *m, const void *tail, size_t tail_len, const int *fds,
		    unsigned nfds);

/* Between kp_ipc_cork and kp_ipc_uncork, frames are queued (within the same ceilings)
 * but not written; uncork writes them, several frames per sendmsg. For a caller that
 * sends many frames in one go (recorderd answering a commit pass). */
void kp_ipc_cork(struct kp_ipc *c);
void kp_ipc_uncork(struct kp_ipc *c);

/* Closes the socket and frees the link once libuv has released it. Accepts NULL. */
void kp_ipc_destroy(struct kp_ipc *c);

void kp_ipc_get_stats(const struct kp_ipc *c, struct kp_ipc_stats *ret);
int kp_ipc_fd(const struct kp_ipc *c);

#endif
