/* keeppeek-rtcd: WebRTC live view and stored playback. This file declares the worker
 * (peers, confinement, ceilings), finds the ICE addresses before confinement and hands
 * them to the session engine (ICE, DTLS, SRTP: a module loaded at the first offer,
 * engine_load.h), and routes frames: RtcSignal and TopicQuery from webd, AccessUnit and
 * AudioUnit from ingestd, MediaPiece from recorderd, TranscodeOutput and TranscodeEnded
 * from the transcoder. */
#include <stdlib.h>
#include <string.h>

#include "ice_net.h"
#include "kp_limits.h"
#include "log.h"
#include "rtcd.h"
#include "sandbox.h"
#include "transcoder_client.h"
#include "worker.h"

static void on_ice_event(const struct rtc_ice_event *ev)
{
	struct rtc_session *s = rtc_session_by_key(ev->key);
	if (s)
		rtc_session_on_ice(s, ev);
}

static struct rtc_ice_net ice_net;
static enum rtc_send_mode send_mode = RTC_SEND_GSO;

/* KEEPPEEK_RTC_SEND: how media batches go out (keeppeek-rtcd(8), decision 0031); for
 * tests and measurements, the default is the fastest measured. */
static void read_send_mode(void)
{
	static const char *const names[] = {[RTC_SEND_GSO] = "gso", [RTC_SEND_MMSG] = "mmsg", [RTC_SEND_NICE] = "nice"};
	const char *v = getenv("KEEPPEEK_RTC_SEND");
	if (!v || !*v)
		return;
	for (unsigned i = 0; i < sizeof names / sizeof names[0]; i++) {
		if (strcmp(v, names[i]) == 0) {
			send_mode = (enum rtc_send_mode)i;
			kp_notice("KEEPPEEK_RTC_SEND=%s: media is sent %s", v,
				  i == RTC_SEND_NICE   ? "with nice_agent_send, one datagram at a time"
				  : i == RTC_SEND_MMSG ? "with sendmmsg, without UDP GSO"
						       : "with sendmmsg and UDP GSO");
			return;
		}
	}
	kp_warn("KEEPPEEK_RTC_SEND=%s is not gso, mmsg or nice; using %s", v, names[send_mode]);
}

static int before_confine(struct kp_worker *w)
{
	const kp_WorkerConfig *cfg = kp_worker_config(w);
	struct rtc_ice_config ice = {
	    .port_min = cfg->rtc_udp_port_min,
	    .port_max = cfg->rtc_udp_port_max,
	    .stun = cfg->rtc_stun_server,
	    .addresses = cfg->rtc_addresses,
	};
	rtc_ice_net_prepare(&ice, &ice_net);
	read_send_mode();
	rtc_transcode_set_max(cfg->rtc_max_transcodes);
	return 0;
}

/* The session engine is loaded and started on the loop's thread at the first offer,
 * long after confinement: libnice's thread is born confined like the rest. */
static int confined(struct kp_worker *w)
{
	rtc_tx_init(w);
	rtc_engine_host_set(&(struct rtc_engine_host){
	    .loop = kp_worker_loop(w), .on_ice_event = on_ice_event, .net = &ice_net, .send_mode = send_mode});
	return 0;
}

static void on_configured(struct kp_worker *w, uint32_t generation)
{
	static bool announced;
	(void)generation;
	if (!announced) {
		announced = true;
		rtc_signal_announce_start(w);
	}
}

static void on_peer_frame(struct kp_worker *w, kp_Peer from, struct kp_ipc_frame *f)
{
	const kp_Envelope *env = f->env;
	switch (env->which_msg) {
	case kp_Envelope_access_unit_tag:
		rtc_live_on_au(&env->msg.access_unit, f->tail, f->tail_len);
		break;
	case kp_Envelope_audio_unit_tag:
		rtc_audio_live_on_unit(&env->msg.audio_unit, f->tail, f->tail_len);
		break;
	case kp_Envelope_rtc_signal_tag:
		rtc_signal_on_frame(w, f);
		break;
	case kp_Envelope_topic_query_tag:
		if (env->msg.topic_query.topic == kp_SupervisorTopic_TOPIC_METRICS)
			rtc_metrics_answer(w, from, env->msg.topic_query.id);
		break;
	case kp_Envelope_media_piece_tag:
		rtc_playback_on_piece(f);
		break;
	case kp_Envelope_transcode_output_tag:
	case kp_Envelope_transcode_ended_tag:
		rtc_tx_on_frame(f);
		break;
	default:
		kp_debug("frame %u from %s ignored", (unsigned)env->which_msg, kp_peer_name(from));
		break;
	}
}

static void on_peer_linked(struct kp_worker *w, kp_Peer peer)
{
	(void)w;
	if (peer == kp_Peer_PEER_TRANSCODER)
		rtc_tx_on_link(true);
}

/* The transcoder died or was stopped: the sessions it served end, each told. */
static void on_peer_lost(struct kp_worker *w, kp_Peer peer)
{
	(void)w;
	if (peer == kp_Peer_PEER_TRANSCODER)
		rtc_tx_on_link(false);
}

static void on_stop(struct kp_worker *w)
{
	(void)w;
	for (struct rtc_session *s = rtc_sessions_first(); s; s = rtc_sessions_first())
		rtc_session_close(s, "rtcd is stopping", false);
	rtc_engine_stop();
}

static struct kp_worker_def rtcd = {
    .name = "rtcd",
    .self = kp_Peer_PEER_RTCD,
    .peers = {kp_Peer_PEER_INGESTD, kp_Peer_PEER_RECORDERD, kp_Peer_PEER_WEBD, kp_Peer_PEER_TRANSCODER},
    .npeers = 4,
    .fs = KP_WORKER_FS_NONE,
    .rlimit_as = 2048ull * KP_MIB,
    /* 1,024 cursors x up to 3 recording descriptors, plus one UDP socket per session and
     * host address exceed 4,096 in the worst case (test_rtc_cursors holds 2,673). */
    .rlimit_nofile = 8192,
    .syscalls = KP_SYSCALLS_NET | KP_SYSCALLS_LATE_LIBS,
    .on_before_confine = before_confine,
    .on_confined = confined,
    .on_configured = on_configured,
    .on_peer_frame = on_peer_frame,
    .on_peer_linked = on_peer_linked,
    .on_peer_lost = on_peer_lost,
    .on_stop = on_stop,
};

int main(int argc, char **argv)
{
	rtcd.read_path = rtc_engine_locate();
	return kp_worker_main(&rtcd, argc, argv);
}
