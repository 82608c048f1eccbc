/* libFuzzer harness for recorderd's request handlers: arbitrary bytes are decoded as an
 * Envelope exactly as recorderd's peer links decode them (nanopb, bounded) and, when they
 * are a query (coverage, recordings, event search, event get, media open for playback or
 * export, metrics), handed to recorderd's own dispatcher (queries.c: rec_query_frame)
 * from webd or rtcd, against a real catalog: the fixtures main.h264 and sub.h265 recorded
 * through recorderd's stream, committer and catalog into 4-second files, around
 * WALL0. The first input byte picks the sender. Answers go to reply_capture.c (there
 * are no peer links here); every answer must be a result recorderd documents, and its
 * records must read.
 * Publications and deletes need the commit thread and are fuzzed through webd's
 * validator (fuzz_webd_publish) instead. */
#include <pb_decode.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "keeppeek.pb.h"
#include "queries.h"
#include "catalog_records.h"
#include "reply_capture.h"
#include "test_rec_fixture.h"

#define WALL0 1700000000000ll

static int any_record(void *arg, const kp_CatalogRecord *rec)
{
	(void)arg;
	(void)rec;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct rec_setup rs;
static int ready;

static void done(void)
{
	rec_queries_close();
	rec_setup_close(&rs);
	capture_free();
}

static void setup(void)
{
	static struct fixture fx[2];
	static struct rec_stream s[2];
	if (fixture_load("main.h264", &fx[0]) < 0 || fixture_load("sub.h265", &fx[1]) < 0 ||
	    rec_setup_open(&rs, "cam") < 0)
		abort();
	rs.env.rollover_ms = 4000;
	for (uint32_t i = 0; i < 2; i++) {
		uint64_t seq = 0;
		rec_stream_init(&s[i], &rs.env, "cam", i, rs.camera_id);
		rec_feed(&s[i], &fx[i], 2, WALL0, &seq);
		rec_stream_close(&s[i]);
		fixture_free(&fx[i]);
	}
	rec_commit_free(rs.env.commit);
	rs.env.commit = NULL;
	rec_queries_open(NULL, rs.cat, rs.dirfd);
	atexit(done);
	ready = 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!ready)
		setup();
	if (size < 1)
		return 0;
	static kp_Envelope env;
	memset(&env, 0, sizeof env);
	pb_istream_t in = pb_istream_from_buffer(data + 1, size - 1);
	if (!pb_decode(&in, kp_Envelope_fields, &env))
		return 0;
	switch (env.which_msg) {
	case kp_Envelope_coverage_query_tag:
	case kp_Envelope_recordings_query_tag:
	case kp_Envelope_event_search_tag:
	case kp_Envelope_event_get_tag:
	case kp_Envelope_picture_query_tag:
	case kp_Envelope_media_open_tag:
	case kp_Envelope_topic_query_tag:
		break;
	default:
		return 0;
	}
	struct kp_ipc_frame f = {.env = &env};
	for (unsigned i = 0; i < KP_IPC_MAX_FDS; i++)
		f.fds[i] = -1;
	capture_free();
	rec_query_frame(data[0] & 1 ? kp_Peer_PEER_RTCD : kp_Peer_PEER_WEBD, &f);
	const struct capture *c = capture_last();
	if (c->result < kp_CatalogResult_CATALOG_OK || c->result > kp_CatalogResult_CATALOG_UNAVAILABLE)
		abort(); /* an answer recorderd does not document (docs/queries.md) */
	static kp_CatalogRecord rec;
	if (c->result == kp_CatalogResult_CATALOG_OK && c->kind == kp_CatalogBody_CATALOG_BODY_RECORDS &&
	    catrec_each((const uint8_t *)c->body, c->len, &rec, any_record, NULL) < 0)
		abort(); /* records webd cannot read */
	return 0;
}
