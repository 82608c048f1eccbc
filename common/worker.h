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
#define KP_WORKER_MAX_PEERS  4

enum kp_worker_fs { KP_WORKER_FS_NONE, KP_WORKER_FS_DATA_RW, KP_WORKER_FS_WWW_RO };

struct kp_worker;

struct kp_worker_def {
	const char *name; /* "ingestd" */
	kp_Peer self;
	kp_Peer peers[KP_WORKER_MAX_PEERS];
	unsigned npeers;
	enum kp_worker_fs fs;
	uint64_t rlimit_as;
	uint64_t rlimit_nofile;
	unsigned syscalls; /* enum kp_syscall_set */
};

int kp_worker_main(const struct kp_worker_def *def, int argc, char **argv);

#endif
