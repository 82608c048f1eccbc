/* rtcd's counters as Prometheus text, answered to webd's TopicQuery(TOPIC_METRICS). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "log.h"
#include "rtcd.h"
#include "text.h"
#include "transcoder_client.h"

static const char *const state_names[RTC_NSTATES] = {"gathering", "connecting", "securing", "streaming", "closed"};

static void counter(struct rtc_text *t, const char *name, const char *help, uint64_t v)
{
	rtc_text_add(t, "# HELP %s %s\n# TYPE %s counter\n%s %llu\n", name, help, name, name, (unsigned long long)v);
}

static void gauge(struct rtc_text *t, const char *name, const char *help, uint64_t v)
{
	rtc_text_add(t, "# HELP %s %s\n# TYPE %s gauge\n%s %llu\n", name, help, name, name, (unsigned long long)v);
}

/* The transcoder's jobs as rtcd sees them (transcoder_client.c). */
static void transcoder_metrics(struct rtc_text *t)
{
	struct rtc_tx_stats tx;
	rtc_tx_stats(&tx);
	rtc_text_add(t,
		     "# HELP keeppeek_transcoder_jobs Open jobs in the transcoder process.\n"
		     "# TYPE keeppeek_transcoder_jobs gauge\n"
		     "keeppeek_transcoder_jobs{kind=\"video\"} %u\nkeeppeek_transcoder_jobs{kind=\"audio\"} %u\n",
		     tx.jobs_video, tx.jobs_audio);
	rtc_text_add(t,
		     "# HELP keeppeek_transcoder_dropped_total Frames dropped on the way: link down or full, or "
		     "waiting for a keyframe after that (rtcd); too slow (transcoder).\n"
		     "# TYPE keeppeek_transcoder_dropped_total counter\n"
		     "keeppeek_transcoder_dropped_total{where=\"rtcd\"} %llu\n"
		     "keeppeek_transcoder_dropped_total{where=\"transcoder\"} %llu\n",
		     (unsigned long long)tx.dropped_in, (unsigned long long)tx.dropped_tx);
	counter(t, "keeppeek_transcoder_jobs_opened_total", "Transcode jobs opened.", tx.opened);
	counter(t, "keeppeek_transcoder_jobs_refused_total", "Transcode jobs refused: past a ceiling.", tx.refused);
	counter(t, "keeppeek_transcoder_jobs_lost_total", "Transcode jobs ended by the transcoder or its death.",
		tx.lost);
	counter(t, "keeppeek_transcoder_frames_in_total", "Frames sent to the transcoder.", tx.frames_in);
	counter(t, "keeppeek_transcoder_frames_out_total", "Frames received from the transcoder.", tx.frames_out);
	counter(t, "keeppeek_transcoder_links_lost_total",
		"Times the transcoder's link went down with jobs open (it crashed or was killed).", tx.links_lost);
}

void rtc_metrics_answer(struct kp_worker *w, kp_Peer to, uint32_t id)
{
	static char buf[16384];
	struct rtc_text t;
	rtc_text_init(&t, buf, sizeof buf);
	unsigned by_state[RTC_NSTATES];
	unsigned n = rtc_sessions_count(by_state);
	const struct rtc_metrics *m = &rtc_metrics;
	gauge(&t, "keeppeek_rtc_sessions", "Open WebRTC sessions.", n);
	rtc_text_add(&t, "# HELP keeppeek_rtc_sessions_state Open WebRTC sessions by state.\n"
			 "# TYPE keeppeek_rtc_sessions_state gauge\n");
	for (unsigned i = 0; i < RTC_CLOSED; i++)
		rtc_text_add(&t, "keeppeek_rtc_sessions_state{state=\"%s\"} %u\n", state_names[i], by_state[i]);
	counter(&t, "keeppeek_rtc_sessions_opened_total", "WebRTC sessions started.", m->sessions_opened);
	counter(&t, "keeppeek_rtc_packets_sent_total", "SRTP packets sent, retransmissions included.", m->packets_sent);
	counter(&t, "keeppeek_rtc_bytes_sent_total", "SRTP bytes sent.", m->bytes_sent);
	counter(&t, "keeppeek_rtc_nacks_answered_total", "RTCP NACK packets answered.", m->nacks_answered);
	counter(&t, "keeppeek_rtc_retransmits_total", "Packets resent from the retransmission buffer.", m->retransmits);
	counter(&t, "keeppeek_rtc_plis_answered_total", "PLI/FIR keyframe requests answered.", m->plis_answered);
	counter(&t, "keeppeek_rtc_admission_rejected_total",
		"Offers refused: sessions per principal or per client address at their ceiling.",
		m->admission_rejected);
	counter(&t, "keeppeek_rtc_cursor_rejected_total", "Playback cursors refused.", m->cursor_rejected);
	counter(&t, "keeppeek_rtc_keyframe_drops_total",
		"Times a slow viewer's socket was full and it skipped to the next keyframe.", m->keyframe_drops);
	rtc_text_add(&t,
		     "# HELP keeppeek_rtc_mse_sessions MSE fallback sessions open.\n"
		     "# TYPE keeppeek_rtc_mse_sessions gauge\nkeeppeek_rtc_mse_sessions %u\n",
		     (unsigned)rtc_mse_metrics.sessions);
	counter(&t, "keeppeek_rtc_mse_opened_total", "MSE fallback sessions started.", rtc_mse_metrics.opened);
	counter(&t, "keeppeek_rtc_mse_pieces_total", "fMP4 pieces (init segments, fragments) sent to webd.",
		rtc_mse_metrics.pieces);
	counter(&t, "keeppeek_rtc_mse_bytes_total", "Bytes of fMP4 pieces sent to webd.", rtc_mse_metrics.bytes);
	counter(&t, "keeppeek_rtc_mse_drops_total",
		"Pieces the webd link did not take: the MSE session skipped to the next keyframe.",
		rtc_mse_metrics.drops);
	counter(&t, "keeppeek_rtc_mse_transcoded_total",
		"MSE fallback sessions sent as the transcoder's H.264: H.265 the browser's MSE cannot play.",
		rtc_mse_metrics.transcoded);
	counter(&t, "keeppeek_rtc_mse_codec_refused_total",
		"MSE fallback requests refused: H.265 the browser's MSE cannot play and no H.264 to send instead.",
		rtc_mse_metrics.codec_refused);
	counter(&t, "keeppeek_rtc_ice_failures_total", "Sessions closed because ICE failed.", m->ice_failures);
	counter(&t, "keeppeek_rtc_dtls_failures_total", "Sessions closed because DTLS failed.", m->dtls_failures);
	counter(&t, "keeppeek_rtc_srtp_errors_total", "SRTP protect/unprotect failures.", m->srtp_errors);
	counter(&t, "keeppeek_rtc_bad_messages_total", "Malformed signaling messages.", m->bad_messages);
	counter(&t, "keeppeek_rtc_bad_sdp_total", "Offers with malformed or unusable SDP.", m->bad_sdp);
	counter(&t, "keeppeek_rtc_rtcp_malformed_total", "Malformed RTCP packets from browsers.", m->rtcp_malformed);
	counter(&t, "keeppeek_rtc_access_units_total", "Live access units received from ingestd.", m->au_in);
	counter(&t, "keeppeek_rtc_gop_overflows_total", "GOPs larger than the live cache.", m->gop_overflows);
	counter(&t, "keeppeek_rtc_audio_units_total", "Live audio frames received from ingestd.", m->audio_in);
	counter(&t, "keeppeek_rtc_audio_packets_sent_total", "Opus RTP packets sent.", m->audio_packets_sent);
	counter(&t, "keeppeek_rtc_dtls_flights_resent_total", "DTLS flights held until ICE selected a pair, then sent.",
		m->dtls_flights_resent);
	counter(&t, "keeppeek_rtc_audio_transcode_refused_total",
		"AAC -> Opus jobs the transcoder could not take (its ceiling, or not running); tried again 1 s later.",
		m->audio_transcode_refused);
	counter(&t, "keeppeek_rtc_audio_transcode_lost_total", "AAC -> Opus jobs that ended with the transcoder.",
		m->audio_transcode_lost);
	counter(&t, "keeppeek_rtc_audio_transcode_dropped_total", "AAC frames not taken by a full transcoder queue.",
		m->audio_transcode_dropped);
	counter(&t, "keeppeek_rtc_ice_events_dropped_total", "Received datagrams dropped: ICE queue full.",
		rtc_eng ? rtc_eng->ice_events_dropped() : 0);
	struct rtc_ice_send_stats st = {0};
	if (rtc_eng)
		rtc_eng->ice_send_stats(&st);
	counter(&t, "keeppeek_rtc_send_batched_total",
		"Datagrams sent with sendmmsg straight on the selected pair's UDP socket.", st.batched);
	counter(&t, "keeppeek_rtc_send_unbatched_total",
		"Datagrams sent one at a time with nice_agent_send (DTLS, RTCP, retransmissions, audio, and the "
		"media of a pair without a UDP socket of its own).",
		st.unbatched);
	counter(&t, "keeppeek_rtc_send_syscalls_total", "sendmmsg calls for media batches.", st.syscalls);
	counter(&t, "keeppeek_rtc_send_gso_messages_total",
		"sendmmsg messages carrying several datagrams with UDP GSO (UDP_SEGMENT).", st.gso_messages);
	rtc_text_add(&t,
		     "# HELP keeppeek_rtc_send_errors_total Media batch sends the socket refused.\n"
		     "# TYPE keeppeek_rtc_send_errors_total counter\n"
		     "keeppeek_rtc_send_errors_total{reason=\"full\"} %llu\n"
		     "keeppeek_rtc_send_errors_total{reason=\"other\"} %llu\n",
		     (unsigned long long)st.err_full, (unsigned long long)st.err_other);
	counter(&t, "keeppeek_rtc_send_dropped_total",
		"Datagrams of a media batch not sent after the socket refused one (the viewer waits for the "
		"next keyframe).",
		st.dropped);
	counter(&t, "keeppeek_rtc_send_gso_off_total", "Times the kernel refused UDP GSO and rtcd stopped using it.",
		st.gso_off);
	gauge(&t, "keeppeek_rtc_session_module_loaded",
	      "1 once the session module (ICE, DTLS, SRTP) is loaded: at the first WebRTC offer.", rtc_eng != NULL);
	counter(&t, "keeppeek_rtc_session_module_failures_total",
		"Offers refused because the session module could not be loaded or started.",
		rtc_engine_load_failures());
	unsigned streams;
	size_t bytes;
	rtc_live_stats(&streams, &bytes);
	gauge(&t, "keeppeek_rtc_live_streams", "Camera streams seen live.", streams);
	gauge(&t, "keeppeek_rtc_gop_cache_bytes", "Bytes in the live GOP caches.", bytes);
	gauge(&t, "keeppeek_rtc_cursors", "Open playback cursors.", rtc_cursors_open_count());
	gauge(&t, "keeppeek_rtc_transcodes", "Running H.265 to H.264 transcodes.", rtc_transcodes_running());
	transcoder_metrics(&t);

	kp_Envelope env = kp_Envelope_init_zero;
	env.which_msg = kp_Envelope_query_reply_tag;
	kp_QueryReply *q = &env.msg.query_reply;
	q->id = id;
	q->done = true;
	q->status = rtc_text_ok(&t) ? 200 : 500;
	snprintf(q->content_type, sizeof q->content_type, "text/plain; version=0.0.4");
	q->total_len = t.len;
	int r = kp_worker_send_peer(w, to, &env, buf, t.len);
	if (r < 0)
		kp_warn("metrics: answer %u not sent: %s", (unsigned)id, strerror(-r));
}
