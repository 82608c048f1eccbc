/* keeppeek-ingestd: the camera-facing worker. Connects to cameras (Baichuan, BCUDP,
 * RTSP) and sends access units to recorderd and rtcd. This file declares the worker:
 * its peers, confinement and ceilings. */
#include "limits.h"
#include "sandbox.h"
#include "worker.h"

static const struct kp_worker_def ingestd = {
    .name = "ingestd",
    .self = kp_Peer_PEER_INGESTD,
    .peers = {kp_Peer_PEER_RECORDERD, kp_Peer_PEER_RTCD},
    .npeers = 2,
    .fs = KP_WORKER_FS_NONE,
    .rlimit_as = 1024ull * KP_MIB,
    .rlimit_nofile = 1024,
    .syscalls = KP_SYSCALLS_NET,
};

int main(int argc, char **argv)
{
	return kp_worker_main(&ingestd, argc, argv);
}
