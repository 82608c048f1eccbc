/* Reads the IPC table (common/ipc_frame.c): every message kind of the Envelope has one
 * row with a sender and a receiver column naming real processes, and the one check on
 * received frames (kp_frame_decode) refuses each kind from every process not in its
 * sender column, or to one not in its receiver column, and accepts the rest. Also: a
 * frame encoded from the message alone (kp_frame_encode_msg) is byte for byte the one
 * kp_frame_encode gives for the envelope, for every kind. */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include <pb_common.h>

#include "ipc_frame.h"
#include "test.h"

#define FIRST_PEER kp_Peer_PEER_SUPERVISOR
#define LAST_PEER  kp_Peer_PEER_TIER
#define ALL_PEERS  ((KP_PEER_BIT(LAST_PEER) << 1) - KP_PEER_BIT(FIRST_PEER))

static const struct kp_ipc_rule *row_of(pb_size_t which)
{
	size_t n;
	const struct kp_ipc_rule *rules = kp_ipc_rules(&n);
	const struct kp_ipc_rule *found = NULL;
	for (size_t i = 0; i < n; i++)
		if (rules[i].which == which) {
			CHECK(found == NULL); /* one row per kind */
			found = &rules[i];
		}
	return found;
}

/* Calls fn with the tag of each message the Envelope's oneof can carry; returns how many. */
static unsigned each_kind(void (*fn)(pb_size_t which))
{
	pb_field_iter_t it;
	kp_Envelope env;
	unsigned n = 0;
	if (!pb_field_iter_begin(&it, kp_Envelope_fields, &env))
		return 0;
	do {
		if (PB_HTYPE(it.type) == PB_HTYPE_ONEOF) {
			fn((pb_size_t)it.tag);
			n++;
		}
	} while (pb_field_iter_next(&it));
	return n;
}

static void has_columns(pb_size_t which)
{
	const struct kp_ipc_rule *r = row_of(which);
	if (!r) {
		fprintf(stderr, "message kind %u has no row in the IPC table\n", (unsigned)which);
		CHECK(r != NULL);
		return;
	}
	CHECK(r->from != 0);
	CHECK(r->to != 0);
	CHECK_EQ(r->from & ~ALL_PEERS, 0);
	CHECK_EQ(r->to & ~ALL_PEERS, 0);
}

/* Each row names a kind the Envelope carries. */
static void test_rows_are_kinds(void)
{
	size_t n;
	const struct kp_ipc_rule *rules = kp_ipc_rules(&n);
	for (size_t i = 0; i < n; i++) {
		kp_Envelope env = kp_Envelope_init_zero;
		env.which_msg = rules[i].which;
		uint8_t buf[KP_FRAME_HEAD_MAX];
		size_t len;
		CHECK_EQ(kp_frame_encode(&env, buf, sizeof buf, &len), 0);
	}
	CHECK_EQ(each_kind(has_columns), n);
}

static size_t frame_of(pb_size_t which, uint8_t *buf)
{
	kp_Envelope env = kp_Envelope_init_zero;
	env.which_msg = which;
	/* The kinds that must carry a descriptor declare one. */
	env.fd_count = which == kp_Envelope_link_new_tag || which == kp_Envelope_backup_request_tag ||
		       which == kp_Envelope_tier_upload_tag || which == kp_Envelope_tier_fetch_tag;
	size_t len = 0;
	CHECK_EQ(kp_frame_encode(&env, buf, KP_FRAME_HEAD_MAX, &len), 0);
	return len;
}

static unsigned accepted, refused;

static void drive_check(pb_size_t which)
{
	const struct kp_ipc_rule *r = row_of(which);
	if (!r)
		return;
	uint8_t buf[KP_FRAME_HEAD_MAX];
	size_t len = frame_of(which, buf);
	for (int from = FIRST_PEER; from <= LAST_PEER; from++)
		for (int to = FIRST_PEER; to <= LAST_PEER; to++) {
			kp_Envelope out;
			const char *reason = NULL;
			int got = kp_frame_decode(buf + 4, len - 4, (kp_Peer)from, (kp_Peer)to, 0, &out, &reason);
			bool allowed = (r->from & KP_PEER_BIT(from)) && (r->to & KP_PEER_BIT(to));
			if (got != (allowed ? 0 : -EPERM))
				fprintf(stderr, "kind %u from %s to %s: %d (%s)\n", (unsigned)which,
					kp_peer_name((kp_Peer)from), kp_peer_name((kp_Peer)to), got,
					reason ? reason : "accepted");
			if (allowed) {
				CHECK_EQ(got, 0);
				CHECK_EQ(out.which_msg, which);
				accepted++;
			} else {
				CHECK_EQ(got, -EPERM);
				CHECK_STR_CONTAINS(reason, "not accepted from this sender");
				refused++;
			}
		}
}

static void test_one_check(void)
{
	unsigned kinds = each_kind(drive_check);
	CHECK(kinds > 0);
	CHECK(accepted > 0);
	CHECK(refused > 0);
	CHECK_EQ(accepted + refused, kinds * (LAST_PEER - FIRST_PEER + 1) * (LAST_PEER - FIRST_PEER + 1));
	const char *reason = NULL;
	/* A process that is none of the table's, or a kind that is not in it. */
	CHECK_EQ(kp_ipc_allowed(kp_Envelope_ready_tag, kp_Peer_PEER_NONE, kp_Peer_PEER_SUPERVISOR, &reason), -EPERM);
	CHECK_EQ(kp_ipc_allowed(kp_Envelope_ready_tag, (kp_Peer)77, kp_Peer_PEER_SUPERVISOR, &reason), -EPERM);
	CHECK_EQ(kp_ipc_allowed(0, kp_Peer_PEER_SUPERVISOR, kp_Peer_PEER_INGESTD, &reason), -EPERM);
}

/* Spot checks that the table says what the processes do. */
static void test_known_senders(void)
{
	const char *reason = NULL;
	CHECK_EQ(kp_ipc_allowed(kp_Envelope_stream_state_tag, kp_Peer_PEER_INGESTD, kp_Peer_PEER_SUPERVISOR, &reason),
		 0);
	CHECK_EQ(kp_ipc_allowed(kp_Envelope_stream_state_tag, kp_Peer_PEER_WEBD, kp_Peer_PEER_SUPERVISOR, &reason),
		 -EPERM);
	CHECK_EQ(kp_ipc_allowed(kp_Envelope_auth_request_tag, kp_Peer_PEER_RTCD, kp_Peer_PEER_SUPERVISOR, &reason),
		 -EPERM);
	CHECK_EQ(kp_ipc_allowed(kp_Envelope_topic_query_tag, kp_Peer_PEER_RECORDERD, kp_Peer_PEER_SUPERVISOR, &reason),
		 -EPERM);
	CHECK_EQ(kp_ipc_allowed(kp_Envelope_recorder_reply_tag, kp_Peer_PEER_INGESTD, kp_Peer_PEER_SUPERVISOR, &reason),
		 -EPERM);
	CHECK_EQ(kp_ipc_allowed(kp_Envelope_event_publish_tag, kp_Peer_PEER_WEBD, kp_Peer_PEER_RECORDERD, &reason), 0);
	/* MSE pieces go from rtcd to webd only (decision 0016). */
	CHECK_EQ(kp_ipc_allowed(kp_Envelope_rtc_media_tag, kp_Peer_PEER_RTCD, kp_Peer_PEER_WEBD, &reason), 0);
	CHECK_EQ(kp_ipc_allowed(kp_Envelope_rtc_media_tag, kp_Peer_PEER_WEBD, kp_Peer_PEER_RTCD, &reason), -EPERM);
	CHECK_EQ(kp_ipc_allowed(kp_Envelope_event_publish_tag, kp_Peer_PEER_RTCD, kp_Peer_PEER_RECORDERD, &reason),
		 -EPERM);
	CHECK_EQ(kp_ipc_allowed(kp_Envelope_shutdown_tag, kp_Peer_PEER_INGESTD, kp_Peer_PEER_RECORDERD, &reason),
		 -EPERM);
	CHECK_EQ(kp_ipc_allowed(kp_Envelope_control_request_tag, kp_Peer_PEER_WEBD, kp_Peer_PEER_SUPERVISOR, &reason),
		 -EPERM);
	/* The transcoder talks to rtcd and recorderd (event pictures, decision 0021): jobs in
	 * from them, output back to them; webd never. */
	CHECK_EQ(kp_ipc_allowed(kp_Envelope_transcode_input_tag, kp_Peer_PEER_RTCD, kp_Peer_PEER_TRANSCODER, &reason),
		 0);
	CHECK_EQ(kp_ipc_allowed(kp_Envelope_transcode_input_tag, kp_Peer_PEER_WEBD, kp_Peer_PEER_TRANSCODER, &reason),
		 -EPERM);
	CHECK_EQ(kp_ipc_allowed(kp_Envelope_transcode_output_tag, kp_Peer_PEER_TRANSCODER, kp_Peer_PEER_RTCD, &reason),
		 0);
	CHECK_EQ(kp_ipc_allowed(kp_Envelope_transcode_output_tag, kp_Peer_PEER_INGESTD, kp_Peer_PEER_RTCD, &reason),
		 -EPERM);
	CHECK_EQ(kp_ipc_allowed(kp_Envelope_access_unit_tag, kp_Peer_PEER_TRANSCODER, kp_Peer_PEER_RTCD, &reason),
		 -EPERM);
	CHECK_EQ(kp_ipc_allowed(kp_Envelope_transcoder_demand_tag, kp_Peer_PEER_TRANSCODER, kp_Peer_PEER_SUPERVISOR,
				&reason),
		 -EPERM);
	CHECK_EQ(kp_ipc_allowed(kp_Envelope_transcoder_demand_tag, kp_Peer_PEER_RTCD, kp_Peer_PEER_SUPERVISOR, &reason),
		 0);
	CHECK_EQ(
	    kp_ipc_allowed(kp_Envelope_transcoder_demand_tag, kp_Peer_PEER_RECORDERD, kp_Peer_PEER_SUPERVISOR, &reason),
	    0);
	CHECK_EQ(
	    kp_ipc_allowed(kp_Envelope_transcode_open_tag, kp_Peer_PEER_RECORDERD, kp_Peer_PEER_TRANSCODER, &reason),
	    0);
	CHECK_EQ(
	    kp_ipc_allowed(kp_Envelope_transcode_output_tag, kp_Peer_PEER_TRANSCODER, kp_Peer_PEER_RECORDERD, &reason),
	    0);
	/* tierd talks to recorderd only (decision 0035): a recording in, reports out; webd
	 * can neither hand it a file nor forge a report to recorderd. */
	CHECK_EQ(kp_ipc_allowed(kp_Envelope_tier_upload_tag, kp_Peer_PEER_RECORDERD, kp_Peer_PEER_TIER, &reason), 0);
	CHECK_EQ(kp_ipc_allowed(kp_Envelope_tier_upload_tag, kp_Peer_PEER_WEBD, kp_Peer_PEER_TIER, &reason), -EPERM);
	CHECK_EQ(kp_ipc_allowed(kp_Envelope_tier_uploaded_tag, kp_Peer_PEER_TIER, kp_Peer_PEER_RECORDERD, &reason), 0);
	CHECK_EQ(kp_ipc_allowed(kp_Envelope_tier_uploaded_tag, kp_Peer_PEER_WEBD, kp_Peer_PEER_RECORDERD, &reason),
		 -EPERM);
	CHECK_EQ(kp_ipc_allowed(kp_Envelope_tier_failed_tag, kp_Peer_PEER_TIER, kp_Peer_PEER_WEBD, &reason), -EPERM);
	/* The delete of a recording's object: recorderd's to ask (decision 0036), no one else's. */
	CHECK_EQ(kp_ipc_allowed(kp_Envelope_tier_delete_tag, kp_Peer_PEER_RECORDERD, kp_Peer_PEER_TIER, &reason), 0);
	CHECK_EQ(kp_ipc_allowed(kp_Envelope_tier_delete_tag, kp_Peer_PEER_WEBD, kp_Peer_PEER_TIER, &reason), -EPERM);
	CHECK_EQ(kp_ipc_allowed(kp_Envelope_tier_delete_tag, kp_Peer_PEER_SUPERVISOR, kp_Peer_PEER_TIER, &reason),
		 -EPERM);
	CHECK_EQ(kp_ipc_allowed(kp_Envelope_tier_deleted_tag, kp_Peer_PEER_TIER, kp_Peer_PEER_RECORDERD, &reason), 0);
	CHECK_EQ(kp_ipc_allowed(kp_Envelope_tier_deleted_tag, kp_Peer_PEER_TIER, kp_Peer_PEER_WEBD, &reason), -EPERM);
	/* A fetch for playback: recorderd hands tierd the cache file; webd and rtcd, which
	 * read recordings, cannot ask tierd for anything. */
	CHECK_EQ(kp_ipc_allowed(kp_Envelope_tier_fetch_tag, kp_Peer_PEER_RECORDERD, kp_Peer_PEER_TIER, &reason), 0);
	CHECK_EQ(kp_ipc_allowed(kp_Envelope_tier_fetch_tag, kp_Peer_PEER_WEBD, kp_Peer_PEER_TIER, &reason), -EPERM);
	CHECK_EQ(kp_ipc_allowed(kp_Envelope_tier_fetch_tag, kp_Peer_PEER_RTCD, kp_Peer_PEER_TIER, &reason), -EPERM);
	CHECK_EQ(kp_ipc_allowed(kp_Envelope_tier_fetched_tag, kp_Peer_PEER_TIER, kp_Peer_PEER_RECORDERD, &reason), 0);
	CHECK_EQ(kp_ipc_allowed(kp_Envelope_tier_fetched_tag, kp_Peer_PEER_TIER, kp_Peer_PEER_RTCD, &reason), -EPERM);
	CHECK_EQ(kp_ipc_allowed(kp_Envelope_transcode_output_tag, kp_Peer_PEER_TRANSCODER, kp_Peer_PEER_WEBD, &reason),
		 -EPERM);
}

static unsigned same_bytes;

/* Both encoders on one envelope, with and without tail and descriptor counts. */
static void both_encoders(const kp_Envelope *env)
{
	static uint8_t a[KP_FRAME_HEAD_MAX], b[KP_FRAME_HEAD_MAX];
	static const uint32_t counts[][2] = {{0, 0}, {300, 0}, {0, 1}, {70000, 3}};
	struct kp_frame_msg m;
	CHECK_EQ(kp_frame_msg_of(env, &m), 0);
	CHECK_EQ(m.which, env->which_msg);
	for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++) {
		static kp_Envelope e;
		e = *env;
		e.tail_len = counts[i][0];
		e.fd_count = counts[i][1];
		size_t la = 0, lb = 0;
		CHECK_EQ(kp_frame_encode(&e, a, sizeof a, &la), 0);
		CHECK_EQ(kp_frame_encode_msg(&m, counts[i][0], counts[i][1], b, sizeof b, &lb), 0);
		CHECK_EQ(la, lb);
		if (la == lb && !memcmp(a, b, la))
			same_bytes++;
		else
			fprintf(stderr, "kind %u: the two encoders differ\n", (unsigned)env->which_msg);
	}
}

static void empty_kind(pb_size_t which)
{
	static kp_Envelope env;
	memset(&env, 0, sizeof env);
	env.which_msg = which;
	both_encoders(&env);
}

/* A TierUpload carries its recording's file and nothing else: one descriptor, neither
 * none nor two; its reports carry none. */
static void test_tier_descriptors(void)
{
	uint8_t buf[KP_FRAME_HEAD_MAX];
	size_t len;
	const char *reason = NULL;
	kp_Envelope out;
	for (uint32_t fds = 0; fds < 3; fds++) {
		kp_Envelope env = kp_Envelope_init_zero;
		env.which_msg = kp_Envelope_tier_upload_tag;
		env.fd_count = fds;
		env.msg.tier_upload.recording = 7;
		snprintf(env.msg.tier_upload.key, sizeof env.msg.tier_upload.key, "recordings/cam/main/1.mp4");
		env.msg.tier_upload.size = 7010853;
		CHECK_EQ(kp_frame_encode(&env, buf, sizeof buf, &len), 0);
		int r = kp_frame_decode(buf + 4, len - 4, kp_Peer_PEER_RECORDERD, kp_Peer_PEER_TIER, 0, &out, &reason);
		CHECK_EQ(r, fds == 1 ? 0 : -EBADMSG);
		if (fds == 1)
			CHECK_EQ(out.msg.tier_upload.size, 7010853);
		else
			CHECK_STR_CONTAINS(reason, "descriptor count");
	}
	kp_Envelope env = kp_Envelope_init_zero;
	env.which_msg = kp_Envelope_tier_uploaded_tag;
	env.fd_count = 1;
	CHECK_EQ(kp_frame_encode(&env, buf, sizeof buf, &len), 0);
	CHECK_EQ(kp_frame_decode(buf + 4, len - 4, kp_Peer_PEER_TIER, kp_Peer_PEER_RECORDERD, 0, &out, &reason),
		 -EBADMSG);
}

static void test_message_alone(void)
{
	unsigned kinds = each_kind(empty_kind);
	CHECK_EQ(same_bytes, kinds * 4);
	/* Filled messages of the hot path: an EventCommitted, a CatalogReply, an EventPublish. */
	static kp_Envelope env;
	memset(&env, 0, sizeof env);
	env.which_msg = kp_Envelope_event_committed_tag;
	kp_EventCommitted *ec = &env.msg.event_committed;
	ec->has_event = true;
	snprintf(ec->event.event_id, sizeof ec->event.event_id, "ev.42");
	snprintf(ec->event.camera, sizeof ec->event.camera, "front");
	ec->event.revision = 3;
	ec->event.start_ms = 1764633600000;
	ec->event.labels_count = 1;
	snprintf(ec->event.labels[0].name, sizeof ec->event.labels[0].name, "person");
	ec->event.labels[0].score = 0.5f;
	ec->keyframes_count = 2;
	ec->keyframes[1] = (kp_EventKeyframe){.stream = 1, .time_ms = 1764633599000};
	both_encoders(&env);
	memset(&env, 0, sizeof env);
	env.which_msg = kp_Envelope_catalog_reply_tag;
	env.msg.catalog_reply = (kp_CatalogReply){.id = 7, .done = true, .total_len = 123};
	snprintf(env.msg.catalog_reply.why, sizeof env.msg.catalog_reply.why, "a reason");
	both_encoders(&env);
	memset(&env, 0, sizeof env);
	env.which_msg = kp_Envelope_event_publish_tag;
	env.msg.event_publish.id = 9;
	env.msg.event_publish.has_event = true;
	snprintf(env.msg.event_publish.event.event_id, sizeof env.msg.event_publish.event.event_id, "x");
	both_encoders(&env);
	CHECK_EQ(same_bytes, kinds * 4 + 12);
	/* What a receiver reads back from the message-alone frame. */
	static uint8_t buf[KP_FRAME_HEAD_MAX];
	static kp_Envelope out;
	struct kp_frame_msg m = {
	    .which = kp_Envelope_event_committed_tag, .fields = kp_EventCommitted_fields, .msg = ec};
	memset(&env, 0, sizeof env);
	env.which_msg = kp_Envelope_event_committed_tag;
	*ec = (kp_EventCommitted){.has_event = true, .keyframes_count = 1};
	snprintf(ec->event.event_id, sizeof ec->event.event_id, "ev.7");
	size_t len = 0;
	const char *reason = NULL;
	CHECK_EQ(kp_frame_encode_msg(&m, 17153, 0, buf, sizeof buf, &len), 0);
	memset(&out, 0xa5, sizeof out); /* whatever was there before: the decoder sets it */
	CHECK_EQ(kp_frame_decode(buf + 4, len - 4, kp_Peer_PEER_RECORDERD, kp_Peer_PEER_WEBD, 1 << 20, &out, &reason),
		 0);
	CHECK_EQ(out.which_msg, kp_Envelope_event_committed_tag);
	CHECK_EQ(out.tail_len, 17153);
	CHECK_EQ(out.fd_count, 0);
	CHECK_STR_EQ(out.msg.event_committed.event.event_id, "ev.7");
	CHECK_EQ(out.msg.event_committed.event.revision, 0);
	CHECK_EQ(out.msg.event_committed.event.labels_count, 0);
	CHECK_EQ(out.msg.event_committed.keyframes_count, 1);
	/* An envelope with no message has none to name. */
	memset(&env, 0, sizeof env);
	CHECK_EQ(kp_frame_msg_of(&env, &m), -EINVAL);
}

int main(void)
{
	RUN(test_rows_are_kinds);
	RUN(test_message_alone);
	RUN(test_one_check);
	RUN(test_known_senders);
	RUN(test_tier_descriptors);
	return TEST_EXIT();
}
