/* Pure IPC frame encoding, decoding and sender policy: the IPC table, the one place
 * that says which processes may send and receive each message kind, checked on every
 * frame received. Fuzzed by test/fuzz/fuzz_envelope.c; the table by test_ipc_policy. */
#include "ipc_frame.h"

#include <errno.h>
#include <string.h>

#include <pb_common.h>
#include <pb_decode.h>
#include <pb_encode.h>

#include "kp_limits.h"

int kp_frame_header(const uint8_t head[4], uint32_t *ret_len, const char **ret_reason)
{
	uint32_t len = (uint32_t)head[0] | (uint32_t)head[1] << 8 | (uint32_t)head[2] << 16 | (uint32_t)head[3] << 24;
	if (len == 0) {
		*ret_reason = "empty frame (envelope length 0)";
		return -EBADMSG;
	}
	if (len > kp_Envelope_size) {
		*ret_reason = "envelope length exceeds the schema maximum";
		return -EMSGSIZE;
	}
	*ret_len = len;
	return 0;
}

#define SUP     KP_PEER_BIT(kp_Peer_PEER_SUPERVISOR)
#define INGESTD KP_PEER_BIT(kp_Peer_PEER_INGESTD)
#define REC     KP_PEER_BIT(kp_Peer_PEER_RECORDERD)
#define WEBD    KP_PEER_BIT(kp_Peer_PEER_WEBD)
#define RTCD    KP_PEER_BIT(kp_Peer_PEER_RTCD)
#define CTL     KP_PEER_BIT(kp_Peer_PEER_CONTROL)
#define TXC     KP_PEER_BIT(kp_Peer_PEER_TRANSCODER)
#define TIER    KP_PEER_BIT(kp_Peer_PEER_TIER)
#define WORKERS KP_PEERS_WORKERS

/* Who may send what to whom: one row per message kind. A frame whose sender or
 * receiver is not in its row closes the link (kp_frame_decode). */
static const struct kp_ipc_rule rules[] = {
    /* The supervisor's configuration, links and orders to its workers. */
    {kp_Envelope_worker_config_tag, SUP, WORKERS},
    {kp_Envelope_camera_config_tag, SUP, INGESTD | REC},
    {kp_Envelope_config_done_tag, SUP, WORKERS},
    {kp_Envelope_link_new_tag, SUP, WORKERS},
    {kp_Envelope_health_request_tag, SUP, WORKERS},
    {kp_Envelope_reload_tag, SUP, WORKERS},
    {kp_Envelope_shutdown_tag, SUP, WORKERS},
    /* What every worker tells the supervisor. */
    {kp_Envelope_ready_tag, WORKERS, SUP},
    {kp_Envelope_link_lost_tag, WORKERS, SUP},
    {kp_Envelope_health_reply_tag, WORKERS, SUP},
    /* Reports about cameras, recordings and the catalog. */
    {kp_Envelope_stream_state_tag, INGESTD, SUP},
    {kp_Envelope_discover_request_tag, SUP, INGESTD},
    {kp_Envelope_discover_found_tag, INGESTD, SUP},
    {kp_Envelope_camera_test_tag, SUP, INGESTD},
    {kp_Envelope_camera_test_result_tag, INGESTD, SUP},
    {kp_Envelope_stream_received_tag, REC, SUP},
    {kp_Envelope_recording_status_tag, REC, SUP},
    {kp_Envelope_catalog_status_tag, REC, SUP},
    /* keeppeekctl's questions that recorderd answers, and its answers. */
    {kp_Envelope_check_request_tag, SUP, REC},
    {kp_Envelope_coverage_request_tag, SUP, REC},
    {kp_Envelope_keyframe_request_tag, SUP, REC},
    {kp_Envelope_backup_request_tag, SUP, REC},
    {kp_Envelope_recorder_reply_tag, REC, SUP},
    /* webd's questions: topics (healthz, cameras, metrics) and credentials. */
    {kp_Envelope_topic_query_tag, WEBD, SUP | REC | RTCD},
    {kp_Envelope_auth_request_tag, WEBD, SUP},
    {kp_Envelope_auth_reply_tag, SUP, WEBD},
    {kp_Envelope_auth_revoked_tag, SUP, WEBD},
    /* The configuration from the browser (config_apply.c). */
    {kp_Envelope_config_ask_tag, WEBD, SUP},
    /* Between workers. */
    {kp_Envelope_peer_hello_tag, WORKERS, WORKERS},
    {kp_Envelope_access_unit_tag, INGESTD, REC | RTCD},
    {kp_Envelope_audio_unit_tag, INGESTD, REC | RTCD},
    {kp_Envelope_camera_event_tag, INGESTD, REC},
    {kp_Envelope_coverage_query_tag, WEBD, REC},
    {kp_Envelope_recordings_query_tag, WEBD, REC},
    {kp_Envelope_event_publish_tag, WEBD, REC},
    {kp_Envelope_event_search_tag, SUP | WEBD, REC},
    {kp_Envelope_event_get_tag, WEBD, REC},
    {kp_Envelope_picture_query_tag, WEBD, REC},
    {kp_Envelope_delete_request_tag, WEBD, REC},
    {kp_Envelope_event_committed_tag, REC, WEBD},
    {kp_Envelope_media_open_tag, WEBD | RTCD, REC},
    {kp_Envelope_media_piece_tag, REC, WEBD | RTCD},
    {kp_Envelope_query_reply_tag, SUP | RTCD, WEBD | RTCD},
    {kp_Envelope_catalog_reply_tag, REC, WEBD},
    {kp_Envelope_rtc_signal_tag, WEBD | RTCD, WEBD | RTCD},
    {kp_Envelope_rtc_media_tag, RTCD, WEBD},
    {kp_Envelope_camera_states_tag, SUP, WEBD},
    /* Transcoding (decision 0014): rtcd's and recorderd's demand for the transcoder, and
     * their jobs (recorderd's: event pictures, decision 0021). */
    {kp_Envelope_transcoder_demand_tag, RTCD | REC, SUP},
    {kp_Envelope_transcode_open_tag, RTCD | REC, TXC},
    {kp_Envelope_transcode_input_tag, RTCD | REC, TXC},
    {kp_Envelope_transcode_close_tag, RTCD | REC, TXC},
    {kp_Envelope_transcode_output_tag, TXC, RTCD | REC},
    {kp_Envelope_transcode_ended_tag, TXC, RTCD | REC},
    /* Tiering (decisions 0035, 0036): recorderd hands tierd closed recordings and the
     * objects of deleted ones, tierd reports. */
    {kp_Envelope_tier_upload_tag, REC, TIER},
    {kp_Envelope_tier_progress_tag, TIER, REC},
    {kp_Envelope_tier_uploaded_tag, TIER, REC},
    {kp_Envelope_tier_failed_tag, TIER, REC},
    {kp_Envelope_tier_delete_tag, REC, TIER},
    {kp_Envelope_tier_deleted_tag, TIER, REC},
    {kp_Envelope_tier_status_request_tag, SUP, REC},
    {kp_Envelope_tier_fetch_tag, REC, TIER},
    {kp_Envelope_tier_fetched_tag, TIER, REC},
    /* The control socket. */
    {kp_Envelope_control_request_tag, CTL, SUP},
    {kp_Envelope_control_reply_tag, SUP, CTL},
};

const struct kp_ipc_rule *kp_ipc_rules(size_t *ret_count)
{
	*ret_count = sizeof rules / sizeof rules[0];
	return rules;
}

static const struct kp_ipc_rule *rule_of(pb_size_t which)
{
	for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++)
		if (rules[i].which == which)
			return &rules[i];
	return NULL;
}

int kp_ipc_allowed(pb_size_t which, kp_Peer from, kp_Peer to, const char **ret_reason)
{
	const struct kp_ipc_rule *r = rule_of(which);
	if (!r || (unsigned)from >= 32 || (unsigned)to >= 32 || !(r->from & KP_PEER_BIT(from)) ||
	    !(r->to & KP_PEER_BIT(to))) {
		*ret_reason = "message kind not accepted from this sender";
		return -EPERM;
	}
	return 0;
}

/* A MediaPiece carries its file's descriptor, except a piece that only reports done or
 * an error; a control request at most one (backup's directory); a WorkerConfig the
 * listening sockets keeppeekd holds for webd; a TierUpload its recording's file, a
 * TierFetch the cache file it fills. */
static int fds_match(const kp_Envelope *env)
{
	switch (env->which_msg) {
	case kp_Envelope_link_new_tag:
	case kp_Envelope_backup_request_tag:
	case kp_Envelope_tier_upload_tag: /* the recording's file */
	case kp_Envelope_tier_fetch_tag:  /* the cache file written */
		return env->fd_count == 1;
	case kp_Envelope_control_request_tag:
	case kp_Envelope_media_piece_tag:
		return env->fd_count <= 1;
	case kp_Envelope_worker_config_tag: /* webd's listening sockets from keeppeekd */
		return env->fd_count <= KP_WEB_LISTEN_MAX;
	default:
		return env->fd_count == 0;
	}
}

int kp_frame_decode(const uint8_t *buf, size_t len, kp_Peer from, kp_Peer to, size_t max_tail, kp_Envelope *ret_env,
		    const char **ret_reason)
{
	/* pb_decode sets the envelope's fields to their defaults itself and clears the one
	 * member of the oneof it decodes: no clearing or copying of the whole union here. */
	kp_Envelope *env = ret_env;
	pb_istream_t in = pb_istream_from_buffer(buf, len);
	if (!pb_decode(&in, kp_Envelope_fields, env)) {
		*ret_reason = "envelope does not decode";
		return -EBADMSG;
	}
	if (in.bytes_left != 0) {
		*ret_reason = "envelope length does not match its contents";
		return -EBADMSG;
	}
	if (env->which_msg == 0) {
		*ret_reason = "envelope carries no message";
		return -EBADMSG;
	}
	int r = kp_ipc_allowed(env->which_msg, from, to, ret_reason);
	if (r < 0)
		return r;
	if (env->tail_len > max_tail) {
		*ret_reason = "raw tail exceeds the link ceiling";
		return -EMSGSIZE;
	}
	if (!fds_match(env)) {
		*ret_reason = "descriptor count does not match the message kind";
		return -EBADMSG;
	}
	return 0;
}

int kp_frame_encode(const kp_Envelope *env, uint8_t *buf, size_t cap, size_t *ret_len)
{
	if (cap < 4)
		return -ENOSPC;
	pb_ostream_t out = pb_ostream_from_buffer(buf + 4, cap - 4);
	if (!pb_encode(&out, kp_Envelope_fields, env))
		return -EINVAL;
	size_t n = out.bytes_written;
	if (n == 0 || n > kp_Envelope_size)
		return -EINVAL;
	buf[0] = (uint8_t)n;
	buf[1] = (uint8_t)(n >> 8);
	buf[2] = (uint8_t)(n >> 16);
	buf[3] = (uint8_t)(n >> 24);
	*ret_len = n + 4;
	return 0;
}

int kp_frame_msg_of(const kp_Envelope *env, struct kp_frame_msg *ret)
{
	pb_field_iter_t it;
	if (!env->which_msg || !pb_field_iter_begin_const(&it, kp_Envelope_fields, env) ||
	    !pb_field_iter_find(&it, env->which_msg) || PB_LTYPE(it.type) != PB_LTYPE_SUBMESSAGE)
		return -EINVAL;
	*ret = (struct kp_frame_msg){.which = env->which_msg, .fields = it.submsg_desc, .msg = it.pData};
	return 0;
}

/* Field by field what pb_encode writes for an Envelope: tail_len (1) and fd_count (2)
 * when not 0 (proto3), then the oneof's message. */
int kp_frame_encode_msg(const struct kp_frame_msg *m, uint32_t tail_len, uint32_t fd_count, uint8_t *buf, size_t cap,
			size_t *ret_len)
{
	if (cap < 4 || !m->which)
		return -ENOSPC;
	pb_ostream_t out = pb_ostream_from_buffer(buf + 4, cap - 4);
	if ((tail_len &&
	     !(pb_encode_tag(&out, PB_WT_VARINT, kp_Envelope_tail_len_tag) && pb_encode_varint(&out, tail_len))) ||
	    (fd_count &&
	     !(pb_encode_tag(&out, PB_WT_VARINT, kp_Envelope_fd_count_tag) && pb_encode_varint(&out, fd_count))) ||
	    !pb_encode_tag(&out, PB_WT_STRING, m->which) ||
	    !(m->body ? pb_encode_string(&out, m->body, m->body_len) : pb_encode_submessage(&out, m->fields, m->msg)))
		return -EINVAL;
	size_t n = out.bytes_written;
	if (n > kp_Envelope_size)
		return -EINVAL;
	buf[0] = (uint8_t)n;
	buf[1] = (uint8_t)(n >> 8);
	buf[2] = (uint8_t)(n >> 16);
	buf[3] = (uint8_t)(n >> 24);
	*ret_len = n + 4;
	return 0;
}

static const char *const peer_names[] = {
    [kp_Peer_PEER_NONE] = "none",       [kp_Peer_PEER_SUPERVISOR] = "supervisor",
    [kp_Peer_PEER_INGESTD] = "ingestd", [kp_Peer_PEER_RECORDERD] = "recorderd",
    [kp_Peer_PEER_WEBD] = "webd",       [kp_Peer_PEER_RTCD] = "rtcd",
    [kp_Peer_PEER_CONTROL] = "control", [kp_Peer_PEER_TRANSCODER] = "transcoder",
    [kp_Peer_PEER_TIER] = "tierd",
};

const char *kp_peer_name(kp_Peer peer)
{
	if ((unsigned)peer < sizeof peer_names / sizeof peer_names[0])
		return peer_names[peer];
	return "unknown";
}

kp_Peer kp_peer_from_name(const char *name)
{
	for (unsigned i = 1; i < sizeof peer_names / sizeof peer_names[0]; i++)
		if (strcmp(peer_names[i], name) == 0)
			return (kp_Peer)i;
	return kp_Peer_PEER_NONE;
}
