/* keeppeek-recorderd: owns the media files and the LMDB catalog. This file declares
 * the worker: its peers, confinement (read-write data_dir only) and ceilings, and hands
 * the answering modules (queries.c, requests.c) what they call in the recording core
 * and the event jobs, so that those include none of them. */
#include "events.h"
#include "intake.h"
#include "kp_limits.h"
#include "queries.h"
#include "recorder.h"
#include "requests.h"
#include "requests_events.h"
#include "sandbox.h"
#include "tier.h"
#include "worker.h"

static const struct rec_query_hooks query_hooks = {
    .publish = rec_event_publish,
    .remove = rec_event_delete,
    .core_metrics = rec_metrics,
    .event_metrics = rec_events_metrics,
};

static const struct rec_request_hooks request_hooks = {
    .catalog_error = rec_catalog_error,
    .rebuild = rec_rebuild_request,
    .event_search = rec_request_event_search,
    .tier_status = rec_tier_status,
};

static const struct kp_worker_def recorderd = {
    .name = "recorderd",
    .self = kp_Peer_PEER_RECORDERD,
    .peers = {kp_Peer_PEER_INGESTD, kp_Peer_PEER_WEBD, kp_Peer_PEER_RTCD, kp_Peer_PEER_TRANSCODER, kp_Peer_PEER_TIER},
    .npeers = 5,
    .fs = KP_WORKER_FS_DATA_RW,
    .rlimit_as = 64ull * 1024 * KP_MIB, /* the LMDB map is reserved address space */
    .rlimit_nofile = 4096,
    .syscalls = KP_SYSCALLS_FS_WRITE,
    .on_config_item = rec_config_item,
    .on_configured = rec_configured,
    .on_peer_frame = rec_intake_frame,
    .on_peer_linked = rec_intake_link,
    .on_peer_lost = rec_intake_lost,
    .on_health = rec_intake_report,
    .on_supervisor_frame = rec_request_frame,
    .on_stop = rec_stop,
};

int main(int argc, char **argv)
{
	rec_queries_hooks(&query_hooks);
	rec_requests_hooks(&request_hooks);
	return kp_worker_main(&recorderd, argc, argv);
}
