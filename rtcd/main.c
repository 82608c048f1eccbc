/* keeppeek-rtcd: WebRTC live view and stored playback. This file declares the worker:
 * its peers, confinement and ceilings. */
#include "kp_limits.h"
#include "sandbox.h"
#include "worker.h"

static const struct kp_worker_def rtcd = {
    .name = "rtcd",
    .self = kp_Peer_PEER_RTCD,
    .peers = {kp_Peer_PEER_INGESTD, kp_Peer_PEER_RECORDERD, kp_Peer_PEER_WEBD},
    .npeers = 3,
    .fs = KP_WORKER_FS_NONE,
    .rlimit_as = 2048ull * KP_MIB,
    .rlimit_nofile = 4096,
    .syscalls = KP_SYSCALLS_NET,
};

int main(int argc, char **argv)
{
	return kp_worker_main(&rtcd, argc, argv);
}
