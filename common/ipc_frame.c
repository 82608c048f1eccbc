/* Pure IPC frame encoding, decoding and sender policy: the one table of which message
 * kinds may arrive on which kind of link. Fuzzed by test/fuzz/fuzz_envelope.c. */
#include "ipc_frame.h"

#include <errno.h>
#include <string.h>

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

/* Who may send what. Which peer may send which peer message is checked again by the
 * receiving worker, which knows the peer at the other end. */
static const struct {
	enum kp_link_kind kind;
	pb_size_t which;
} policy[] = {
    {KP_LINK_SUPERVISOR_TO_WORKER, kp_Envelope_worker_config_tag},
    {KP_LINK_SUPERVISOR_TO_WORKER, kp_Envelope_camera_config_tag},
    {KP_LINK_SUPERVISOR_TO_WORKER, kp_Envelope_config_done_tag},
    {KP_LINK_SUPERVISOR_TO_WORKER, kp_Envelope_link_new_tag},
    {KP_LINK_SUPERVISOR_TO_WORKER, kp_Envelope_health_request_tag},
    {KP_LINK_SUPERVISOR_TO_WORKER, kp_Envelope_reload_tag},
    {KP_LINK_SUPERVISOR_TO_WORKER, kp_Envelope_shutdown_tag},
    {KP_LINK_WORKER_TO_SUPERVISOR, kp_Envelope_ready_tag},
    {KP_LINK_WORKER_TO_SUPERVISOR, kp_Envelope_link_lost_tag},
    {KP_LINK_WORKER_TO_SUPERVISOR, kp_Envelope_health_reply_tag},
    {KP_LINK_WORKER_TO_SUPERVISOR, kp_Envelope_stream_state_tag},
    {KP_LINK_WORKER_TO_SUPERVISOR, kp_Envelope_stream_received_tag},
    {KP_LINK_PEER, kp_Envelope_peer_hello_tag},
    {KP_LINK_PEER, kp_Envelope_access_unit_tag},
    {KP_LINK_PEER, kp_Envelope_camera_event_tag},
    {KP_LINK_CONTROL_REQUEST, kp_Envelope_control_request_tag},
    {KP_LINK_CONTROL_REPLY, kp_Envelope_control_reply_tag},
    {KP_LINK_WORKER_TO_SUPERVISOR, kp_Envelope_recording_status_tag},
    {KP_LINK_WORKER_TO_SUPERVISOR, kp_Envelope_catalog_status_tag},
    {KP_LINK_SUPERVISOR_TO_WORKER, kp_Envelope_check_request_tag},
    {KP_LINK_SUPERVISOR_TO_WORKER, kp_Envelope_coverage_request_tag},
    {KP_LINK_SUPERVISOR_TO_WORKER, kp_Envelope_keyframe_request_tag},
    {KP_LINK_SUPERVISOR_TO_WORKER, kp_Envelope_event_search_tag},
    {KP_LINK_WORKER_TO_SUPERVISOR, kp_Envelope_recorder_reply_tag},
    {KP_LINK_SUPERVISOR_TO_WORKER, kp_Envelope_backup_request_tag},
    {KP_LINK_PEER, kp_Envelope_query_reply_tag},
    {KP_LINK_PEER, kp_Envelope_coverage_query_tag},
    {KP_LINK_PEER, kp_Envelope_recordings_query_tag},
    {KP_LINK_PEER, kp_Envelope_event_publish_tag},
    {KP_LINK_PEER, kp_Envelope_event_committed_tag},
    {KP_LINK_PEER, kp_Envelope_event_search_tag},
    {KP_LINK_PEER, kp_Envelope_event_get_tag},
    {KP_LINK_PEER, kp_Envelope_delete_request_tag},
    {KP_LINK_PEER, kp_Envelope_media_open_tag},
    {KP_LINK_PEER, kp_Envelope_media_piece_tag},
    {KP_LINK_PEER, kp_Envelope_topic_query_tag},
    {KP_LINK_PEER, kp_Envelope_rtc_signal_tag},
    {KP_LINK_WORKER_TO_SUPERVISOR, kp_Envelope_topic_query_tag},
    {KP_LINK_WORKER_TO_SUPERVISOR, kp_Envelope_auth_request_tag},
    {KP_LINK_SUPERVISOR_TO_WORKER, kp_Envelope_query_reply_tag},
    {KP_LINK_SUPERVISOR_TO_WORKER, kp_Envelope_auth_reply_tag},
    {KP_LINK_SUPERVISOR_TO_WORKER, kp_Envelope_auth_revoked_tag},
};

static int allowed(enum kp_link_kind kind, pb_size_t which)
{
	for (size_t i = 0; i < sizeof policy / sizeof policy[0]; i++)
		if (policy[i].kind == kind && policy[i].which == which)
			return 1;
	return 0;
}

/* A MediaPiece carries its file's descriptor, except a piece that only reports done or
 * an error; a control request at most one (backup's directory). */
static int fds_match(const kp_Envelope *env)
{
	switch (env->which_msg) {
	case kp_Envelope_link_new_tag:
	case kp_Envelope_backup_request_tag:
		return env->fd_count == 1;
	case kp_Envelope_control_request_tag:
	case kp_Envelope_media_piece_tag:
		return env->fd_count <= 1;
	default:
		return env->fd_count == 0;
	}
}

int kp_frame_decode(const uint8_t *buf, size_t len, enum kp_link_kind kind, size_t max_tail, kp_Envelope *ret_env,
		    const char **ret_reason)
{
	kp_Envelope env = kp_Envelope_init_zero;
	pb_istream_t in = pb_istream_from_buffer(buf, len);
	if (!pb_decode(&in, kp_Envelope_fields, &env)) {
		*ret_reason = "envelope does not decode";
		return -EBADMSG;
	}
	if (in.bytes_left != 0) {
		*ret_reason = "envelope length does not match its contents";
		return -EBADMSG;
	}
	if (env.which_msg == 0) {
		*ret_reason = "envelope carries no message";
		return -EBADMSG;
	}
	if (!allowed(kind, env.which_msg)) {
		*ret_reason = "message kind not accepted from this sender";
		return -EPERM;
	}
	if (env.tail_len > max_tail) {
		*ret_reason = "raw tail exceeds the link ceiling";
		return -EMSGSIZE;
	}
	if (!fds_match(&env)) {
		*ret_reason = "descriptor count does not match the message kind";
		return -EBADMSG;
	}
	*ret_env = env;
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

static const char *const peer_names[] = {
    [kp_Peer_PEER_NONE] = "none",       [kp_Peer_PEER_SUPERVISOR] = "supervisor",
    [kp_Peer_PEER_INGESTD] = "ingestd", [kp_Peer_PEER_RECORDERD] = "recorderd",
    [kp_Peer_PEER_WEBD] = "webd",       [kp_Peer_PEER_RTCD] = "rtcd",
    [kp_Peer_PEER_CONTROL] = "control",
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
