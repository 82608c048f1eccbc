/* Unit tests for the pure frame code: header checks, envelope decoding, the sender
 * policy table, tail and descriptor validation, encode/decode round trips. */
#include <errno.h>

#include "ipc_frame.h"
#include "kp_limits.h"
#include "test.h"

/* The two ends of a link, as kp_frame_decode takes them: sender, receiver. */
#define SUP_TO_WORKER kp_Peer_PEER_SUPERVISOR, kp_Peer_PEER_RECORDERD
#define WORKER_TO_SUP kp_Peer_PEER_RECORDERD, kp_Peer_PEER_SUPERVISOR
#define PEER_TO_PEER  kp_Peer_PEER_INGESTD, kp_Peer_PEER_RECORDERD
#define CTL_TO_SUP    kp_Peer_PEER_CONTROL, kp_Peer_PEER_SUPERVISOR

static size_t encode(const kp_Envelope *env, uint8_t *buf)
{
	size_t len = 0;
	CHECK_EQ(kp_frame_encode(env, buf, KP_FRAME_HEAD_MAX, &len), 0);
	return len;
}

static void test_header_limits(void)
{
	const char *reason = NULL;
	uint32_t len = 0;
	uint8_t zero[4] = {0, 0, 0, 0};
	CHECK_EQ(kp_frame_header(zero, &len, &reason), -EBADMSG);
	CHECK_STR_CONTAINS(reason, "empty frame");
	uint32_t over = kp_Envelope_size + 1;
	uint8_t big[4] = {(uint8_t)over, (uint8_t)(over >> 8), (uint8_t)(over >> 16), (uint8_t)(over >> 24)};
	CHECK_EQ(kp_frame_header(big, &len, &reason), -EMSGSIZE);
	CHECK_STR_CONTAINS(reason, "exceeds");
	uint8_t huge[4] = {0xff, 0xff, 0xff, 0xff};
	CHECK_EQ(kp_frame_header(huge, &len, &reason), -EMSGSIZE);
	uint32_t max = kp_Envelope_size;
	uint8_t at[4] = {(uint8_t)max, (uint8_t)(max >> 8), (uint8_t)(max >> 16), (uint8_t)(max >> 24)};
	CHECK_EQ(kp_frame_header(at, &len, &reason), 0);
	CHECK_EQ(len, kp_Envelope_size);
}

static void test_round_trip(void)
{
	uint8_t buf[KP_FRAME_HEAD_MAX];
	kp_Envelope env = kp_Envelope_init_zero;
	env.which_msg = kp_Envelope_link_lost_tag;
	env.msg.link_lost.peer = kp_Peer_PEER_RECORDERD;
	env.msg.link_lost.generation = 7;
	strcpy(env.msg.link_lost.reason, "peer closed the link");
	size_t len = encode(&env, buf);
	uint32_t env_len;
	const char *reason = NULL;
	CHECK_EQ(kp_frame_header(buf, &env_len, &reason), 0);
	CHECK_EQ(env_len + 4, len);
	kp_Envelope out;
	CHECK_EQ(kp_frame_decode(buf + 4, env_len, WORKER_TO_SUP, 0, &out, &reason), 0);
	CHECK_EQ(out.which_msg, kp_Envelope_link_lost_tag);
	CHECK_EQ(out.msg.link_lost.generation, 7);
	CHECK(!strcmp(out.msg.link_lost.reason, "peer closed the link"));
}

static void test_largest_message_fits(void)
{
	uint8_t buf[KP_FRAME_HEAD_MAX];
	kp_Envelope env = kp_Envelope_init_zero;
	env.which_msg = kp_Envelope_control_request_tag;
	env.tail_len = UINT32_MAX;
	env.fd_count = UINT32_MAX;
	memset(env.msg.control_request.command, 'c', sizeof env.msg.control_request.command - 1);
	env.msg.control_request.args_count = 8;
	for (int i = 0; i < 8; i++)
		memset(env.msg.control_request.args[i], 'a', sizeof env.msg.control_request.args[i] - 1);
	env.msg.control_request.json = true;
	size_t len = encode(&env, buf);
	CHECK(len <= KP_FRAME_HEAD_MAX);
}

static void test_sender_policy(void)
{
	uint8_t buf[KP_FRAME_HEAD_MAX];
	kp_Envelope env = kp_Envelope_init_zero, out;
	const char *reason = NULL;
	env.which_msg = kp_Envelope_shutdown_tag;
	size_t len = encode(&env, buf);
	CHECK_EQ(kp_frame_decode(buf + 4, len - 4, SUP_TO_WORKER, 0, &out, &reason), 0);
	CHECK_EQ(kp_frame_decode(buf + 4, len - 4, PEER_TO_PEER, 0, &out, &reason), -EPERM);
	CHECK_STR_CONTAINS(reason, "not accepted");
	CHECK_EQ(kp_frame_decode(buf + 4, len - 4, WORKER_TO_SUP, 0, &out, &reason), -EPERM);
	CHECK_EQ(kp_frame_decode(buf + 4, len - 4, CTL_TO_SUP, 0, &out, &reason), -EPERM);
}

static void test_tail_and_fds(void)
{
	uint8_t buf[KP_FRAME_HEAD_MAX];
	kp_Envelope env = kp_Envelope_init_zero, out;
	const char *reason = NULL;
	env.which_msg = kp_Envelope_peer_hello_tag;
	env.tail_len = KP_IPC_TAIL_MAX_PEER;
	size_t len = encode(&env, buf);
	CHECK_EQ(kp_frame_decode(buf + 4, len - 4, PEER_TO_PEER, KP_IPC_TAIL_MAX_PEER, &out, &reason), 0);
	env.tail_len = KP_IPC_TAIL_MAX_PEER + 1;
	len = encode(&env, buf);
	CHECK_EQ(kp_frame_decode(buf + 4, len - 4, PEER_TO_PEER, KP_IPC_TAIL_MAX_PEER, &out, &reason), -EMSGSIZE);
	CHECK_STR_CONTAINS(reason, "tail");
	env.tail_len = 0;
	env.fd_count = 1;
	len = encode(&env, buf);
	CHECK_EQ(kp_frame_decode(buf + 4, len - 4, PEER_TO_PEER, 0, &out, &reason), -EBADMSG);
	CHECK_STR_CONTAINS(reason, "descriptor");
	kp_Envelope ln = kp_Envelope_init_zero;
	ln.which_msg = kp_Envelope_link_new_tag;
	len = encode(&ln, buf);
	CHECK_EQ(kp_frame_decode(buf + 4, len - 4, SUP_TO_WORKER, 0, &out, &reason), -EBADMSG);
	ln.fd_count = 1;
	len = encode(&ln, buf);
	CHECK_EQ(kp_frame_decode(buf + 4, len - 4, SUP_TO_WORKER, 0, &out, &reason), 0);
	/* A backup request carries exactly the catalog copy's file; only the supervisor sends it. */
	kp_Envelope br = kp_Envelope_init_zero;
	br.which_msg = kp_Envelope_backup_request_tag;
	len = encode(&br, buf);
	CHECK_EQ(kp_frame_decode(buf + 4, len - 4, SUP_TO_WORKER, 0, &out, &reason), -EBADMSG);
	br.fd_count = 1;
	len = encode(&br, buf);
	CHECK_EQ(kp_frame_decode(buf + 4, len - 4, SUP_TO_WORKER, 0, &out, &reason), 0);
	CHECK_EQ(kp_frame_decode(buf + 4, len - 4, PEER_TO_PEER, 0, &out, &reason), -EPERM);
	/* A control request at most one (backup's directory). */
	kp_Envelope cr = kp_Envelope_init_zero;
	cr.which_msg = kp_Envelope_control_request_tag;
	cr.fd_count = 1;
	len = encode(&cr, buf);
	CHECK_EQ(kp_frame_decode(buf + 4, len - 4, CTL_TO_SUP, 0, &out, &reason), 0);
	cr.fd_count = 2;
	len = encode(&cr, buf);
	CHECK_EQ(kp_frame_decode(buf + 4, len - 4, CTL_TO_SUP, 0, &out, &reason), -EBADMSG);
	/* Recorderd reports its catalog to the supervisor, not to a peer. */
	kp_Envelope cs = kp_Envelope_init_zero;
	cs.which_msg = kp_Envelope_catalog_status_tag;
	len = encode(&cs, buf);
	CHECK_EQ(kp_frame_decode(buf + 4, len - 4, WORKER_TO_SUP, 0, &out, &reason), 0);
	CHECK_EQ(kp_frame_decode(buf + 4, len - 4, PEER_TO_PEER, 0, &out, &reason), -EPERM);
}

static void test_malformed_envelopes(void)
{
	kp_Envelope out;
	const char *reason = NULL;
	/* A length-delimited field that claims more bytes than the frame has. */
	const uint8_t crossing[] = {0x82, 0x01, 0x20, 0x08, 0x01};
	CHECK_EQ(kp_frame_decode(crossing, sizeof crossing, SUP_TO_WORKER, 0, &out, &reason), -EBADMSG);
	CHECK_STR_CONTAINS(reason, "does not decode");
	/* A wire type that does not exist. */
	const uint8_t badwire[] = {0x0f, 0x01};
	CHECK_EQ(kp_frame_decode(badwire, sizeof badwire, SUP_TO_WORKER, 0, &out, &reason), -EBADMSG);
	/* A string longer than its static maximum. */
	uint8_t longstr[300] = {0xa2, 0x01, 0xb0, 0x01, 0x0a, 0xad, 0x01};
	memset(longstr + 7, 'x', 173);
	CHECK_EQ(kp_frame_decode(longstr, 180, CTL_TO_SUP, 0, &out, &reason), -EBADMSG);
	/* Only scalars, no message. */
	const uint8_t nomsg[] = {0x08, 0x00};
	CHECK_EQ(kp_frame_decode(nomsg, sizeof nomsg, SUP_TO_WORKER, 0, &out, &reason), -EBADMSG);
	CHECK_STR_CONTAINS(reason, "no message");
	/* Truncated varint. */
	const uint8_t trunc[] = {0x08, 0xff};
	CHECK_EQ(kp_frame_decode(trunc, sizeof trunc, SUP_TO_WORKER, 0, &out, &reason), -EBADMSG);
}

static void test_peer_names(void)
{
	CHECK(!strcmp(kp_peer_name(kp_Peer_PEER_RTCD), "rtcd"));
	CHECK_EQ(kp_peer_from_name("recorderd"), kp_Peer_PEER_RECORDERD);
	CHECK_EQ(kp_peer_from_name("nope"), kp_Peer_PEER_NONE);
	CHECK(!strcmp(kp_peer_name((kp_Peer)99), "unknown"));
}

int main(void)
{
	RUN(test_header_limits);
	RUN(test_round_trip);
	RUN(test_largest_message_fits);
	RUN(test_sender_policy);
	RUN(test_tail_and_fds);
	RUN(test_malformed_envelopes);
	RUN(test_peer_names);
	return TEST_EXIT();
}
