/* The data routes' table (events, coverage, recordings, a camera's picture at a time,
 * export, delete), and the handlers that are one question to recorderd each: coverage,
 * recordings, picture at a time, delete. */
#include "routes_data.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "json.h"
#include "log.h"
#include "params.h"
#include "relay.h"

#define DELETE_TOKS (KP_HTTP_MAX_DELETE_BODY / 2)

static void route_coverage(struct web_req *r)
{
	kp_Envelope env = kp_Envelope_init_zero;
	env.which_msg = kp_Envelope_coverage_query_tag;
	kp_CoverageQuery *q = &env.msg.coverage_query;
	q->stream = -1;
	if (webd_param_ms(r, "from", true, &q->from_ms) < 0 || webd_param_ms(r, "to", true, &q->to_ms) < 0 ||
	    webd_param_duration(r, "bucket", &q->bucket_ms) < 0 ||
	    webd_param_str(r, "camera", false, q->camera, sizeof(q->camera)) < 0 ||
	    webd_param_stream(r, "stream", false, &q->stream) < 0 ||
	    webd_param_uint(r, "offset", UINT32_MAX, &q->offset) < 0 ||
	    webd_param_uint(r, "limit", UINT32_MAX, &q->limit) < 0)
		return;
	webd_relay(r, &env, &q->id, CATJ_COVERAGE, NULL);
}

static void route_recordings(struct web_req *r)
{
	kp_Envelope env = kp_Envelope_init_zero;
	env.which_msg = kp_Envelope_recordings_query_tag;
	kp_RecordingsQuery *q = &env.msg.recordings_query;
	q->stream = -1;
	if (webd_param_str(r, "camera", false, q->camera, sizeof(q->camera)) < 0 ||
	    webd_param_stream(r, "stream", false, &q->stream) < 0 || webd_param_ms(r, "from", true, &q->from_ms) < 0 ||
	    webd_param_ms(r, "to", true, &q->to_ms) < 0 || webd_param_uint(r, "limit", UINT32_MAX, &q->limit) < 0)
		return;
	webd_relay(r, &env, &q->id, CATJ_RECORDINGS, NULL);
}

/* GET /api/v1/cameras/CAM/thumbnail?t=MS[&stream=main|sub]: the timeline's hover
 * preview (decision 0025). recorderd answers the JPEG with the span of its keyframe's
 * GOP, which the relay passes on as Keyframe-Time and Keyframe-Until. */
static void route_picture_at(struct web_req *r)
{
	static const char prefix[] = "/api/v1/cameras/", part[] = "/thumbnail";
	const char *cam = web_req_path(r) + sizeof(prefix) - 1;
	const char *slash = strchr(cam, '/');
	size_t n = slash ? (size_t)(slash - cam) : 0;
	if (!slash || strcmp(slash, part) != 0) {
		web_reply_error(r, 404, "not_found", "a camera has the part thumbnail?t=MS");
		return;
	}
	kp_Envelope env = kp_Envelope_init_zero;
	env.which_msg = kp_Envelope_picture_query_tag;
	kp_PictureQuery *q = &env.msg.picture_query;
	if (n < 1 || n >= sizeof(q->camera) ||
	    strspn(cam, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
			"0123456789-_") != n) {
		web_reply_error(r, 400, "bad_camera", "camera names are 1 to %zu of letters, digits, - and _",
				sizeof(q->camera) - 1);
		return;
	}
	memcpy(q->camera, cam, n);
	q->stream = -1;
	if (webd_param_ms(r, "t", true, &q->time_ms) < 0 || webd_param_stream(r, "stream", false, &q->stream) < 0)
		return;
	webd_relay(r, &env, &q->id, CATJ_EVENT, NULL);
}

/* {"recordings":[17,18],"events":["det-42"]}: either list may be absent. */
static void route_delete(struct web_req *r)
{
	static struct json_tok toks[DELETE_TOKS];
	static kp_Envelope env;
	memset(&env, 0, sizeof(env));
	env.which_msg = kp_Envelope_delete_request_tag;
	kp_DeleteRequest *q = &env.msg.delete_request;
	size_t len;
	const uint8_t *body = web_req_body(r, &len);
	struct json_doc d;
	int rc = json_parse(&d, (const char *)body, len, toks, DELETE_TOKS);
	if (rc < 0) {
		web_reply_error(r, 400, "bad_json", "the body is not JSON: %s at byte %zu", d.err_why, d.err_at);
		return;
	}
	if (d.toks[0].type != JSON_OBJECT) {
		web_reply_error(r, 400, "bad_json", "the body must be a JSON object");
		return;
	}
	int recs = json_obj_get(&d, 0, "recordings");
	int evs = json_obj_get(&d, 0, "events");
	if ((recs >= 0 && d.toks[recs].type != JSON_ARRAY) || (evs >= 0 && d.toks[evs].type != JSON_ARRAY)) {
		web_reply_error(r, 400, "bad_json", "recordings and events must be arrays");
		return;
	}
	unsigned nrec = recs >= 0 ? d.toks[recs].size : 0, nev = evs >= 0 ? d.toks[evs].size : 0;
	if (nrec > sizeof(q->recordings) / sizeof(q->recordings[0]) || nev > sizeof(q->events) / sizeof(q->events[0])) {
		web_reply_error(r, 413, "too_many_ids", "at most %zu recordings and %zu events per request",
				sizeof(q->recordings) / sizeof(q->recordings[0]),
				sizeof(q->events) / sizeof(q->events[0]));
		return;
	}
	if (nrec + nev == 0) {
		web_reply_error(r, 400, "bad_json", "nothing to delete");
		return;
	}
	for (unsigned i = 0; i < nrec; i++) {
		int64_t v;
		if (json_get_int(&d, json_arr_get(&d, recs, i), &v) < 0 || v < 0) {
			web_reply_error(r, 400, "bad_json", "recording ids are non-negative integers");
			return;
		}
		q->recordings[i] = (uint64_t)v;
	}
	q->recordings_count = (pb_size_t)nrec;
	for (unsigned i = 0; i < nev; i++) {
		if (json_get_str(&d, json_arr_get(&d, evs, i), q->events[i], sizeof(q->events[i])) < 1) {
			web_reply_error(r, 400, "bad_json", "event ids are strings of 1 to %zu bytes",
					sizeof(q->events[i]) - 1);
			return;
		}
	}
	q->events_count = (pb_size_t)nev;
	snprintf(q->principal, sizeof(q->principal), "%s", web_req_principal(r)->name);
	kp_notice("delete: %s asks to delete %u recordings and %u events", q->principal, nrec, nev);
	webd_relay(r, &env, &q->id, CATJ_DELETE, NULL);
}

const struct web_route webd_data_routes[] = {
    /* Two entries for one path: the server takes the first whose method matches, so
     * only the publication carries the CSRF check and the large body ceiling. */
    {WEB_GET | WEB_HEAD, "/api/v1/events", 0, 0, webd_route_events_search},
    {WEB_POST, "/api/v1/events", WEB_PUBLISH | WEB_CHANGES, WEBD_PUBLISH_MAX_BODY, webd_route_events_publish},
    {WEB_GET | WEB_HEAD, "/api/v1/events/", WEB_PREFIX, 0, webd_route_event_get},
    {WEB_GET | WEB_HEAD, "/api/v1/export", 0, 0, webd_route_export},
    {WEB_GET | WEB_HEAD, "/api/v1/coverage", 0, 0, route_coverage},
    {WEB_GET | WEB_HEAD, "/api/v1/recordings", 0, 0, route_recordings},
    {WEB_GET | WEB_HEAD, "/api/v1/cameras/", WEB_PREFIX, 0, route_picture_at},
    {WEB_POST, "/delete", WEB_ADMIN | WEB_CHANGES, KP_HTTP_MAX_DELETE_BODY, route_delete},
    {0, NULL, 0, 0, NULL},
};
