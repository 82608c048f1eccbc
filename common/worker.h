/* The runtime every worker shares: its supervisor channel on fd 3, the configuration
 * barrier (WorkerConfig, ConfigDone -> confine -> Ready), peer links handed over by the
 * supervisor, health replies and orderly shutdown. A worker's main.c describes itself
 * with a kp_worker_def and calls kp_worker_main. */
#ifndef KP_WORKER_H
#define KP_WORKER_H

#include <stdint.h>
#include <uv.h>

#include "ipc.h"
#include "keeppeek.pb.h"

#define KP_WORKER_CHANNEL_FD 3
#define KP_WORKER_MAX_PEERS  5

enum kp_worker_fs { KP_WORKER_FS_NONE, KP_WORKER_FS_DATA_RW, KP_WORKER_FS_WWW_RO };

struct kp_worker;

struct kp_worker_def {
	const char *name; /* "ingestd" */
	kp_Peer self;
	kp_Peer peers[KP_WORKER_MAX_PEERS];
	unsigned npeers;
	enum kp_worker_fs fs;
	const char *read_path; /* one more directory readable after confinement (a module loaded late) */
	uint64_t rlimit_as;
	uint64_t rlimit_nofile;
	unsigned syscalls; /* enum kp_syscall_set */

	/* Each hook is optional and runs on the loop thread. */
	void (*on_config_item)(struct kp_worker *w, const kp_Envelope *env); /* e.g. CameraConfig */
	void (*on_configured)(struct kp_worker *w, uint32_t generation);     /* batch complete */
	void (*on_peer_frame)(struct kp_worker *w, kp_Peer from, struct kp_ipc_frame *f);
	void (*on_health)(struct kp_worker *w); /* before each health reply */
	/* Requests from the supervisor beyond the runtime's own (keeppeekctl questions). */
	void (*on_supervisor_request)(struct kp_worker *w, const kp_Envelope *env);
	void (*on_stop)(struct kp_worker *w); /* shutting down: release what you hold */
	/* The link to peer dropped (the supervisor re-links it when the peer is back). */
	void (*on_peer_lost)(struct kp_worker *w, kp_Peer peer);
	/* A link to peer was installed (the first, or again after it was lost): frames sent
	 * to peer from now on reach it. */
	void (*on_peer_linked)(struct kp_worker *w, kp_Peer peer);
	/* Once, with the WorkerConfig, just before confinement (listen sockets, TLS keys);
	 * a negative return stops the worker. */
	int (*on_before_confine)(struct kp_worker *w);
	/* Once, right after confinement: where a worker starts its threads, so that every
	 * thread is born confined (Landlock binds only the thread that asks for it). A
	 * negative return stops the worker. */
	int (*on_confined)(struct kp_worker *w);
	/* Like on_supervisor_request with the whole frame (raw tail, descriptors); when set
	 * it replaces on_supervisor_request. */
	void (*on_supervisor_frame)(struct kp_worker *w, struct kp_ipc_frame *f);
};

int kp_worker_main(const struct kp_worker_def *def, int argc, char **argv);

uv_loop_t *kp_worker_loop(struct kp_worker *w);
const kp_WorkerConfig *kp_worker_config(const struct kp_worker *w);
/* The descriptors that came with the WorkerConfig (webd: one listening socket per [web]
 * listen address, in order, held by keeppeekd); the worker owns them. */
unsigned kp_worker_config_fds(const struct kp_worker *w, const int **ret);
/* 0, -ENOTCONN when the link to that peer is down, or kp_ipc_send's errors. */
int kp_worker_send_peer(struct kp_worker *w, kp_Peer to, const kp_Envelope *env, const void *tail, size_t len);
/* The same for one message named without an envelope (kp_frame_msg, ipc_frame.h). */
int kp_worker_send_peer_msg(struct kp_worker *w, kp_Peer to, const struct kp_frame_msg *m, const void *tail,
			    size_t len);
/* kp_ipc_cork / kp_ipc_uncork of the link to a peer (nothing when it is down). */
void kp_worker_cork_peer(struct kp_worker *w, kp_Peer to, int corked);
/* The same with descriptors (SCM_RIGHTS; duplicated, the caller keeps its own). */
int kp_worker_send_peer_fds(struct kp_worker *w, kp_Peer to, const kp_Envelope *env, const void *tail, size_t len,
			    const int *fds, unsigned nfds);
int kp_worker_send_supervisor(struct kp_worker *w, const kp_Envelope *env);
/* The same with a raw tail (at most KP_IPC_TAIL_MAX_SUPERVISOR bytes). */
int kp_worker_send_supervisor_tail(struct kp_worker *w, const kp_Envelope *env, const void *tail, size_t len);

#endif
