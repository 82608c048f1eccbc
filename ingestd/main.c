/* keeppeek-ingestd: the camera-facing worker. Connects to cameras (Baichuan, BCUDP,
 * RTSP) and sends access units to recorderd and rtcd. This file declares the worker:
 * its peers, confinement, ceilings and the hooks into the camera table. */
#include <openssl/crypto.h>

#include "cameras.h"
#include "discover.h"
#include "probe.h"
#include "kp_limits.h"
#include "sandbox.h"
#include "worker.h"

static void on_config_item(struct kp_worker *w, const kp_Envelope *env)
{
	(void)w;
	ing_cameras_item(&env->msg.camera_config);
}

static void on_configured(struct kp_worker *w, uint32_t generation)
{
	static bool started;
	if (!started) {
		ing_cameras_init(w);
		started = true;
	}
	ing_cameras_apply(generation);
}

static void on_health(struct kp_worker *w)
{
	(void)w;
	ing_cameras_report();
}

static void on_stop(struct kp_worker *w)
{
	(void)w;
	ing_discover_stop();
	ing_probe_stop();
	ing_cameras_stop();
}

static void on_supervisor_request(struct kp_worker *w, const kp_Envelope *env)
{
	if (env->which_msg == kp_Envelope_discover_request_tag)
		ing_discover(w, &env->msg.discover_request);
	else if (env->which_msg == kp_Envelope_camera_test_tag)
		ing_probe(w, &env->msg.camera_test);
}

static const struct kp_worker_def ingestd = {
    .name = "ingestd",
    .self = kp_Peer_PEER_INGESTD,
    .peers = {kp_Peer_PEER_RECORDERD, kp_Peer_PEER_RTCD},
    .npeers = 2,
    .fs = KP_WORKER_FS_NONE,
    .rlimit_as = 1024ull * KP_MIB,
    .rlimit_nofile = 2048,
    .syscalls = KP_SYSCALLS_NET,
    .on_config_item = on_config_item,
    .on_configured = on_configured,
    .on_health = on_health,
    .on_stop = on_stop,
    .on_supervisor_request = on_supervisor_request,
};

int main(int argc, char **argv)
{
	/* RTSP stream threads are detached (stop() never waits for the network) and may be
	 * inside OpenSSL (Digest's MD5 for TEARDOWN, TLS) when the process exits: OpenSSL's
	 * own atexit clean-up would free what they use. The kernel frees it instead. */
	OPENSSL_init_crypto(OPENSSL_INIT_NO_ATEXIT, NULL);
	return kp_worker_main(&ingestd, argc, argv);
}
