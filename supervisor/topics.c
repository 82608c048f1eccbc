/* The supervisor's answers to webd's TopicQuery: HEALTHZ (200 "ok" when every worker
 * runs, else 503 naming those that do not), CAMERAS (the JSON of SPEC section 7, the
 * same renderer as keeppeekctl cameras --json) and METRICS (Prometheus text: workers'
 * RSS, restarts and state, IPC link queues and bounds, per-stream ingest, receive and
 * recording counters). Answered with QueryReply pieces of at most
 * KP_IPC_TAIL_MAX_SUPERVISOR bytes, the last with done set. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "supervisor.h"

#define TOPIC_TEXT_MAX (1024 * 1024)
#define PIECE_MAX      (60 * 1024)

void query_reply(struct proc *p, uint32_t id, uint32_t status, const char *code, const char *ctype, const char *text,
		 size_t len)
{
	size_t off = 0;
	do {
		size_t n = len - off < PIECE_MAX ? len - off : PIECE_MAX;
		kp_Envelope env = kp_Envelope_init_zero;
		env.which_msg = kp_Envelope_query_reply_tag;
		kp_QueryReply *q = &env.msg.query_reply;
		q->id = id;
		q->status = status;
		q->done = off + n == len;
		snprintf(q->content_type, sizeof q->content_type, "%s", ctype);
		if (off == 0)
			q->total_len = len;
		if (status >= 400)
			snprintf(q->error_code, sizeof q->error_code, "%s", code);
		int r = p->ipc ? kp_ipc_send(p->ipc, &env, text + off, n, NULL, 0) : -ENOTCONN;
		if (r < 0) {
			kp_warn("%s: answering topic query %u failed: %s", p->name, (unsigned)id, strerror(-r));
			return;
		}
		off += n;
	} while (off < len);
}

static void healthz(struct supervisor *s, struct kp_out *o, uint32_t *status)
{
	unsigned down = 0;
	for (int i = 0; i < KP_NPROCS; i++) {
		const struct proc *p = &s->procs[i];
		if (p->state == PROC_RUNNING || !proc_expected(p))
			continue;
		kp_out_put(o, "%s%s %s", down++ ? ", " : "not running: ", p->name, proc_state_name(p->state));
	}
	if (catalog_unusable(s))
		kp_out_put(o, "%snot recording: recorderd: %s", down++ ? "; " : "",
			   s->catalog.error[0] ? s->catalog.error : s->catalog.state);
	if (down) {
		kp_out_put(o, "\n");
		*status = 503;
	} else {
		kp_out_put(o, "ok\n");
		*status = 200;
	}
}

static uint64_t rss_bytes(pid_t pid)
{
	char path[64], line[256];
	snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return 0;
	unsigned long long kb = 0;
	while (fgets(line, sizeof line, f))
		if (sscanf(line, "VmRSS: %llu kB", &kb) == 1)
			break;
	fclose(f);
	return kb * 1024ull;
}

/* A label value with \, " and newline escaped. */
static void label(struct kp_out *o, const char *v)
{
	for (; *v; v++) {
		if (*v == '\\' || *v == '"')
			kp_out_put(o, "\\%c", *v);
		else if (*v == '\n')
			kp_out_put(o, "\\n");
		else
			kp_out_put(o, "%c", *v);
	}
}

static void family(struct kp_out *o, const char *name, const char *type, const char *help)
{
	kp_out_put(o, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void worker_metrics(struct supervisor *s, struct kp_out *o)
{
	family(o, "keeppeek_worker_up", "gauge", "1 when the worker runs.");
	for (int i = 0; i < KP_NPROCS; i++)
		kp_out_put(o, "keeppeek_worker_up{worker=\"%s\"} %d\n", s->procs[i].name,
			   s->procs[i].state == PROC_RUNNING);
	family(o, "keeppeek_worker_restarts_total", "counter", "Times the supervisor restarted the worker.");
	for (int i = 0; i < KP_NPROCS; i++)
		kp_out_put(o, "keeppeek_worker_restarts_total{worker=\"%s\"} %u\n", s->procs[i].name,
			   s->procs[i].restarts);
	family(o, "keeppeek_catalog_usable", "gauge",
	       "1 when recorderd has its catalog open and can record, 0 when it cannot (see keeppeekctl status).");
	if (s->have_catalog)
		kp_out_put(o, "keeppeek_catalog_usable %d\n", !catalog_unusable(s));
	family(o, "keeppeek_catalog_schema_version", "gauge",
	       "The catalog's schema version (as found when it is too new), and the newest recorderd reads.");
	if (s->have_catalog)
		kp_out_put(o,
			   "keeppeek_catalog_schema_version{of=\"catalog\"} %llu\n"
			   "keeppeek_catalog_schema_version{of=\"recorderd\"} %u\n",
			   (unsigned long long)s->catalog.schema_version, (unsigned)s->catalog.supported_version);
	uint64_t busy, worker;
	control_refused(s, &busy, &worker);
	family(o, "keeppeek_control_refused_total", "counter",
	       "keeppeekctl connections the control socket closed at once: every slot taken (busy), or a worker's "
	       "credentials (worker).");
	kp_out_put(o,
		   "keeppeek_control_refused_total{reason=\"busy\"} %llu\n"
		   "keeppeek_control_refused_total{reason=\"worker\"} %llu\n",
		   (unsigned long long)busy, (unsigned long long)worker);
	family(o, "keeppeek_worker_rss_bytes", "gauge", "Resident set size (VmRSS) of each process.");
	kp_out_put(o, "keeppeek_worker_rss_bytes{worker=\"keeppeekd\"} %llu\n",
		   (unsigned long long)rss_bytes(getpid()));
	for (int i = 0; i < KP_NPROCS; i++)
		if (s->procs[i].pid > 0)
			kp_out_put(o, "keeppeek_worker_rss_bytes{worker=\"%s\"} %llu\n", s->procs[i].name,
				   (unsigned long long)rss_bytes(s->procs[i].pid));
}

static void link_metrics(struct supervisor *s, struct kp_out *o)
{
	static const struct {
		const char *name, *type, *help;
	} fams[] = {
	    {"keeppeek_ipc_link_up", "gauge", "1 when the worker's link to the peer is up."},
	    {"keeppeek_ipc_queue_items", "gauge", "Frames waiting in the worker's send queue to the peer."},
	    {"keeppeek_ipc_queue_items_max", "gauge", "Bound of that queue in frames."},
	    {"keeppeek_ipc_queue_bytes", "gauge", "Bytes waiting in the worker's send queue to the peer."},
	    {"keeppeek_ipc_queue_bytes_max", "gauge", "Bound of that queue in bytes."},
	    {"keeppeek_ipc_send_rejected_total", "counter", "Frames refused because the queue was full."},
	    {"keeppeek_ipc_frames_in_total", "counter", "Frames received from the peer."},
	    {"keeppeek_ipc_frames_out_total", "counter", "Frames sent to the peer."},
	};
	for (size_t k = 0; k < sizeof fams / sizeof fams[0]; k++) {
		family(o, fams[k].name, fams[k].type, fams[k].help);
		for (int i = 0; i < KP_NPROCS; i++) {
			const struct proc *p = &s->procs[i];
			for (pb_size_t l = 0; l < p->health.links_count; l++) {
				const kp_LinkState *ls = &p->health.links[l];
				unsigned long long v = 0;
				switch (k) {
				case 0:
					v = ls->up;
					break;
				case 1:
					v = ls->queue_items;
					break;
				case 2:
					v = KP_IPC_QUEUE_ITEMS_PEER;
					break;
				case 3:
					v = ls->queue_bytes;
					break;
				case 4:
					v = KP_IPC_QUEUE_BYTES_PEER;
					break;
				case 5:
					v = ls->send_rejected;
					break;
				case 6:
					v = ls->frames_in;
					break;
				default:
					v = ls->frames_out;
					break;
				}
				kp_out_put(o, "%s{worker=\"%s\",peer=\"%s\"} %llu\n", fams[k].name, p->name,
					   kp_peer_name(ls->peer), v);
			}
		}
	}
}

static void stream_metrics(struct supervisor *s, struct kp_out *o)
{
	static const char *const sname[2] = {"main", "sub"};
	static const struct {
		const char *name, *type, *help;
	} fams[] = {
	    {"keeppeek_stream_frames_total", "counter", "Access units ingestd received from the camera."},
	    {"keeppeek_stream_bytes_total", "counter", "Bytes of access units ingestd received."},
	    {"keeppeek_stream_reconnects_total", "counter", "Times ingestd reconnected to the camera."},
	    {"keeppeek_stream_send_rejected_total", "counter", "Access units ingestd could not queue to a peer."},
	    {"keeppeek_stream_received_frames_total", "counter", "Access units recorderd received."},
	    {"keeppeek_stream_gaps_total", "counter", "Sequence gaps recorderd saw (frames lost on the way)."},
	    {"keeppeek_recording_fragments_total", "counter", "Fragments recorderd wrote since it started."},
	    {"keeppeek_recording_bytes_total", "counter", "Bytes recorderd wrote since it started."},
	    {"keeppeek_recording_dropped_frames_total", "counter", "Frames recorderd dropped."},
	    {"keeppeek_stream_retries_total", "counter",
	     "Times ingestd tried the stream again alone after it failed on its own (refused)."},
	    {"keeppeek_stream_rtp_lost_packets_total", "counter", "RTP packets missing from an RTSP stream."},
	    {"keeppeek_stream_loss_dropped_total", "counter",
	     "Access units ingestd dropped for a missing RTP packet, up to the next keyframe."},
	    {"keeppeek_stream_truncated_dropped_total", "counter",
	     "Access units ingestd dropped because the RTSP connection ended in them."},
	    {"keeppeek_stream_overrun_dropped_total", "counter",
	     "Access units ingestd dropped up to a keyframe because its loop fell behind the RTSP reader."},
	    {"keeppeek_stream_rtp_foreign_dropped_total", "counter",
	     "RTP packets ingestd dropped for another SSRC or payload type than the SDP's."},
	    {"keeppeek_stream_rtp_resyncs_total", "counter",
	     "RTP source restarts ingestd followed (encoder restarts)."},
	    {"keeppeek_stream_rtp_malformed_total", "counter", "RTP packets or payloads ingestd could not parse."},
	    {"keeppeek_stream_audio_dropped_total", "counter",
	     "Camera audio units ingestd did not record (loop behind its reader, or not convertible to Opus)."},
	};
	for (size_t k = 0; k < sizeof fams / sizeof fams[0]; k++) {
		family(o, fams[k].name, fams[k].type, fams[k].help);
		for (unsigned i = 0; i < s->ncamera_rows; i++) {
			const struct camera_row *r = &s->camera_rows[i];
			unsigned long long v;
			switch (k) {
			case 0:
				v = r->state.frames;
				break;
			case 1:
				v = r->state.bytes;
				break;
			case 2:
				v = r->state.reconnects;
				break;
			case 3:
				v = r->state.send_rejected;
				break;
			case 4:
				v = r->received.frames;
				break;
			case 5:
				v = r->received.gaps;
				break;
			case 6:
				v = r->recording.fragments;
				break;
			case 7:
				v = r->recording.bytes_written;
				break;
			case 8:
				v = r->recording.frames_dropped;
				break;
			case 9:
				v = r->state.retries;
				break;
			case 10:
				v = r->state.rtp_lost_packets;
				break;
			case 11:
				v = r->state.loss_dropped;
				break;
			case 12:
				v = r->state.truncated_dropped;
				break;
			case 13:
				v = r->state.overrun_dropped;
				break;
			case 14:
				v = r->state.rtp_foreign_dropped;
				break;
			case 15:
				v = r->state.rtp_resyncs;
				break;
			case 16:
				v = r->state.rtp_malformed;
				break;
			default:
				v = r->state.audio_dropped;
				break;
			}
			kp_out_put(o, "%s{camera=\"", fams[k].name);
			label(o, r->camera);
			kp_out_put(o, "\",stream=\"%s\"} %llu\n", sname[r->stream & 1], v);
		}
	}
	family(o, "keeppeek_stream_state", "gauge", "1 for the stream's current ingest state.");
	for (unsigned i = 0; i < s->ncamera_rows; i++) {
		const struct camera_row *r = &s->camera_rows[i];
		kp_out_put(o, "keeppeek_stream_state{camera=\"");
		label(o, r->camera);
		kp_out_put(o, "\",stream=\"%s\",state=\"", sname[r->stream & 1]);
		label(o, r->have_state ? r->state.state : "connecting");
		kp_out_put(o, "\"} 1\n");
	}
	family(o, "keeppeek_recording_state", "gauge", "1 for the stream's current recording state.");
	for (unsigned i = 0; i < s->ncamera_rows; i++) {
		const struct camera_row *r = &s->camera_rows[i];
		kp_out_put(o, "keeppeek_recording_state{camera=\"");
		label(o, r->camera);
		kp_out_put(o, "\",stream=\"%s\",state=\"", sname[r->stream & 1]);
		label(o, r->have_recording ? r->recording.state : "idle");
		kp_out_put(o, "\"} 1\n");
	}
}

void topics_answer(struct supervisor *s, struct proc *p, const kp_TopicQuery *q)
{
	char *buf = malloc(TOPIC_TEXT_MAX);
	if (!buf) {
		query_reply(p, q->id, 503, "unavailable", "text/plain; charset=utf-8", "no memory\n", 10);
		return;
	}
	struct kp_out o = {.buf = buf, .len = TOPIC_TEXT_MAX};
	buf[0] = 0;
	uint32_t status = 200;
	const char *ctype = "text/plain; charset=utf-8";
	switch (q->topic) {
	case kp_SupervisorTopic_TOPIC_HEALTHZ:
		healthz(s, &o, &status);
		break;
	case kp_SupervisorTopic_TOPIC_CAMERAS:
		cameras_render(s, true, &o);
		ctype = "application/json";
		break;
	case kp_SupervisorTopic_TOPIC_METRICS:
		worker_metrics(s, &o);
		link_metrics(s, &o);
		stream_metrics(s, &o);
		ctype = "text/plain; version=0.0.4; charset=utf-8";
		break;
	default:
		status = 404;
		kp_out_put(&o, "unknown topic %d\n", (int)q->topic);
		break;
	}
	if (o.used + 1 >= o.len) {
		status = 500;
		o.used = (size_t)snprintf(buf, o.len, "answer over %d bytes\n", TOPIC_TEXT_MAX);
	}
	query_reply(p, q->id, status, "unavailable", ctype, buf, o.used);
	free(buf);
}
