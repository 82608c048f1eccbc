/* The supervisor's view of every camera stream: state and counters reported by ingestd
 * (StreamState) and what recorderd received (StreamReceived), rendered for
 * `keeppeekctl cameras` as a table or as the JSON shape of SPEC section 7. */
#include <stdio.h>
#include <string.h>

#include "kp_time.h"
#include "supervisor.h"

static struct camera_row *row(struct supervisor *s, const char *camera, uint32_t stream)
{
	if (stream > 1)
		return NULL;
	for (unsigned i = 0; i < s->ncamera_rows; i++)
		if (s->camera_rows[i].stream == stream && !strcmp(s->camera_rows[i].camera, camera))
			return &s->camera_rows[i];
	if (s->ncamera_rows >= KP_MAX_CAMERAS * 2)
		return NULL;
	struct camera_row *r = &s->camera_rows[s->ncamera_rows++];
	memset(r, 0, sizeof *r);
	snprintf(r->camera, sizeof r->camera, "%s", camera);
	r->stream = stream;
	return r;
}

void cameras_on_state(struct supervisor *s, const kp_StreamState *st)
{
	struct camera_row *r = row(s, st->camera, st->stream);
	if (r) {
		bool changed = !r->have_state || strcmp(r->state.state, st->state);
		r->state = *st;
		r->have_state = true;
		if (changed)
			integrations_send_states(s);
	}
}

void cameras_on_received(struct supervisor *s, const kp_StreamReceived *rec)
{
	struct camera_row *r = row(s, rec->camera, rec->stream);
	if (r)
		r->received = *rec;
}

void cameras_on_recording(struct supervisor *s, const kp_RecordingStatus *rs)
{
	struct camera_row *r = row(s, rs->camera, rs->stream);
	if (r) {
		r->recording = *rs;
		r->have_recording = true;
	}
}

static const char *codec_name(kp_Codec c)
{
	return c == kp_Codec_CODEC_H264 ? "h264" : c == kp_Codec_CODEC_H265 ? "h265" : "";
}

static const struct camera_row *find(const struct supervisor *s, const char *camera, uint32_t stream)
{
	for (unsigned i = 0; i < s->ncamera_rows; i++)
		if (s->camera_rows[i].stream == stream && !strcmp(s->camera_rows[i].camera, camera))
			return &s->camera_rows[i];
	return NULL;
}

static const char *recording_state(const struct camera_row *r)
{
	return r && r->have_recording ? r->recording.state : "idle";
}

static const char *stream_state(const struct camera_row *r)
{
	return r && r->have_state ? r->state.state : "connecting";
}

/* A camera is as good as its worst configured stream. */
static const char *camera_state(const struct supervisor *s, const struct kp_camera_conf *c)
{
	const char *worst = "streaming";
	for (uint32_t k = 0; k < 2; k++) {
		if (!(c->streams & (1u << k)))
			continue;
		const char *st = stream_state(find(s, c->name, k));
		if (strcmp(st, "streaming"))
			worst = st;
	}
	return worst;
}

/* Milliseconds until a stream's own retry (state retrying), 0 when none is scheduled or
 * it is due. */
static int64_t retry_in_ms(const kp_StreamState *st, int64_t now)
{
	return st->retry_at_ms > now ? st->retry_at_ms - now : 0;
}

void cameras_render(const struct supervisor *s, bool json, struct kp_out *o)
{
	static const char *const names[2] = {"main", "sub"};
	int64_t now = kp_wall_ms();
	if (json)
		kp_out_put(o, "{\"cameras\":[");
	else
		kp_out_put(o, "%-16s %-5s %-12s %-5s %-10s %7s %10s %12s %5s %10s %-12s  %s\n", "CAMERA", "STREAM",
			   "STATE", "CODEC", "SIZE", "FPS", "FRAMES", "BYTES", "RECON", "RECEIVED", "RECORDING",
			   "LAST-ERROR");
	for (unsigned i = 0; i < s->cfg.ncameras; i++) {
		const struct kp_camera_conf *c = &s->cfg.cameras[i];
		if (json) {
			kp_out_put(o, "%s{\"name\":", i ? "," : "");
			kp_out_json_string(o, c->name);
			kp_out_put(o, ",\"state\":\"%s\",\"streams\":[", camera_state(s, c));
		}
		unsigned n = 0;
		for (uint32_t k = 0; k < 2; k++) {
			if (!(c->streams & (1u << k)))
				continue;
			const struct camera_row *r = find(s, c->name, k);
			static const kp_StreamState none = kp_StreamState_init_zero;
			static const kp_StreamReceived no_rec = kp_StreamReceived_init_zero;
			const kp_StreamState *st = r && r->have_state ? &r->state : &none;
			const kp_StreamReceived *rec = r ? &r->received : &no_rec;
			if (!json) {
				char size[24], retry[48] = "";
				snprintf(size, sizeof size, "%ux%u", (unsigned)st->width, (unsigned)st->height);
				if (st->retry_at_ms)
					snprintf(retry, sizeof retry, " (retry %u in %.1f s)",
						 (unsigned)st->retries + 1, retry_in_ms(st, now) / 1000.0);
				kp_out_put(o,
					   "%-16s %-5s %-12s %-5s %-10s %7.2f %10llu %12llu %5u %10llu %-12s  %s%s\n",
					   c->name, names[k], stream_state(r), codec_name(st->codec), size,
					   st->fps_milli / 1000.0, (unsigned long long)st->frames,
					   (unsigned long long)st->bytes, (unsigned)st->reconnects,
					   (unsigned long long)rec->frames, recording_state(r),
					   st->last_error[0]                 ? st->last_error
					   : r && r->recording.last_error[0] ? r->recording.last_error
									     : "-",
					   retry);
				continue;
			}
			kp_out_put(o,
				   "%s{\"name\":\"%s\",\"codec\":\"%s\",\"width\":%u,\"height\":%u,\"state\":\"%s\","
				   "\"fps\":%.3f,\"frames\":%llu,\"bytes\":%llu,\"reconnects\":%u,\"events\":%llu,"
				   "\"send_rejected\":%llu,\"recorded_frames\":%llu,\"recorded_bytes\":%llu,"
				   "\"recorded_gaps\":%llu,\"recording\":{\"state\":\"%s\",\"fragments\":%llu,"
				   "\"bytes_written\":%llu,\"frames_dropped\":%llu,\"last_error\":",
				   n++ ? "," : "", names[k], codec_name(st->codec), (unsigned)st->width,
				   (unsigned)st->height, stream_state(r), st->fps_milli / 1000.0,
				   (unsigned long long)st->frames, (unsigned long long)st->bytes,
				   (unsigned)st->reconnects, (unsigned long long)st->events,
				   (unsigned long long)st->send_rejected, (unsigned long long)rec->frames,
				   (unsigned long long)rec->bytes, (unsigned long long)rec->gaps, recording_state(r),
				   (unsigned long long)(r ? r->recording.fragments : 0),
				   (unsigned long long)(r ? r->recording.bytes_written : 0),
				   (unsigned long long)(r ? r->recording.frames_dropped : 0));
			kp_out_json_string(o, r ? r->recording.last_error : "");
			kp_out_put(o, "},\"last_error\":");
			kp_out_json_string(o, st->last_error);
			kp_out_put(o,
				   ",\"retries\":%u,\"retry_at_ms\":%lld,\"retry_in_ms\":%lld,\"transport\":\"%s\","
				   "\"rtp_lost_packets\":%llu,\"loss_dropped\":%llu,\"truncated_dropped\":%llu,"
				   "\"overrun_dropped\":%llu,\"rtp_foreign_dropped\":%llu,\"rtp_resyncs\":%llu,"
				   "\"rtp_malformed\":%llu,\"audio_dropped\":%llu}",
				   (unsigned)st->retries, (long long)st->retry_at_ms, (long long)retry_in_ms(st, now),
				   st->transport, (unsigned long long)st->rtp_lost_packets,
				   (unsigned long long)st->loss_dropped, (unsigned long long)st->truncated_dropped,
				   (unsigned long long)st->overrun_dropped, (unsigned long long)st->rtp_foreign_dropped,
				   (unsigned long long)st->rtp_resyncs, (unsigned long long)st->rtp_malformed,
				   (unsigned long long)st->audio_dropped);
		}
		if (json)
			kp_out_put(o, "]}");
	}
	if (json)
		kp_out_put(o, "]}\n");
}
