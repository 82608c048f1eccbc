/* keeppeek-webd: the HTTP/WebSocket server and browser UI. This file declares the
 * worker: its peers, confinement (read-only www directory) and ceilings. */
#include "kp_limits.h"
#include "sandbox.h"
#include "worker.h"

static const struct kp_worker_def webd = {
    .name = "webd",
    .self = kp_Peer_PEER_WEBD,
    .peers = {kp_Peer_PEER_RECORDERD, kp_Peer_PEER_RTCD},
    .npeers = 2,
    .fs = KP_WORKER_FS_WWW_RO,
    .rlimit_as = 1024ull * KP_MIB,
    .rlimit_nofile = 1024,
    .syscalls = KP_SYSCALLS_NET,
};

int main(int argc, char **argv)
{
	return kp_worker_main(&webd, argc, argv);
}
