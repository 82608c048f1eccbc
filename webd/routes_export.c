/* GET /api/v1/export?camera=&stream=&from=&to=: a clip as one MP4 file, no transcoding.
 * recorderd answers MediaOpen(for_export) with MediaPiece frames, each a byte range of a
 * recording file whose descriptor travels with it; their concatenation is one valid MP4
 * (docs/queries.md). Pieces are held until done (at most EXPORT_HOLD), so the answer
 * has a Content-Length; beyond that the answer starts chunked and streams as they come.
 * The descriptors go to web_stream_fd, which sends the ranges without copying them. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "params.h"
#include "relay.h"
#include "routes_data.h"

#define EXPORT_HOLD 16

struct piece {
	int fd;
	uint64_t offset, length;
};

struct export_state {
	uint64_t req;
	bool begun, failed;
	uint32_t next_index;
	unsigned held;
	struct piece pieces[EXPORT_HOLD];
	char headers[200];
};

static void release(struct export_state *st)
{
	for (unsigned i = 0; i < st->held; i++)
		close(st->pieces[i].fd);
	st->held = 0;
}

static int begin(struct web_req *r, struct export_state *st, uint64_t length)
{
	if (web_stream_begin(r, 200, "video/mp4", length, st->headers) < 0)
		return -1;
	st->begun = true;
	return 0;
}

static int flush(struct web_req *r, struct export_state *st)
{
	for (unsigned i = 0; i < st->held; i++) {
		struct piece *p = &st->pieces[i];
		int fd = p->fd;
		p->fd = -1;
		if (web_stream_fd(r, fd, p->offset, p->length) < 0) {
			for (unsigned k = i + 1; k < st->held; k++)
				close(st->pieces[k].fd);
			st->held = 0;
			return -1;
		}
	}
	st->held = 0;
	return 0;
}

static void fail(struct web_req *r, struct export_state *st, int status, const char *code, const char *why)
{
	release(st);
	st->failed = true;
	if (r && !st->begun)
		web_reply_error(r, status, code, "%s", why);
	else if (r)
		web_stream_end(r); /* the client sees a short body */
}

static void export_cb(void *arg, struct kp_ipc_frame *f)
{
	struct export_state *st = arg;
	struct web_req *r = web_req_find(st->req);
	if (!f) {
		if (!st->failed)
			fail(r, st, 504, "no_answer", "recorderd did not answer in time");
		free(st);
		return;
	}
	if (f->env->which_msg != kp_Envelope_media_piece_tag)
		return;
	const kp_MediaPiece *m = &f->env->msg.media_piece;
	if (!st->failed) {
		if (m->status && (m->status < 200 || m->status > 299)) {
			char why[96];
			snprintf(why, sizeof(why), "recorderd: %s", m->error_code[0] ? m->error_code : "error");
			fail(r, st, (int)m->status, m->error_code[0] ? m->error_code : "error", why);
		} else if (m->index != st->next_index && m->length) {
			kp_err("export: piece %u arrived where %u was expected", (unsigned)m->index, st->next_index);
			fail(r, st, 502, "bad_answer", "recorderd's pieces arrived out of order");
		} else if (m->length && (f->nfds < 1 || f->fds[0] < 0)) {
			fail(r, st, 502, "bad_answer", "a piece came without its descriptor");
		} else if (!r) {
			release(st);
			st->failed = true;
		} else {
			if (m->length) {
				st->next_index++;
				st->pieces[st->held++] = (struct piece){f->fds[0], m->offset, m->length};
				f->fds[0] = -1; /* ours now */
			}
			int rc = 0;
			if (m->done && !st->begun) {
				uint64_t total = 0;
				for (unsigned i = 0; i < st->held; i++)
					total += st->pieces[i].length;
				if (total == 0)
					fail(r, st, 404, "nothing_recorded", "nothing recorded in that range");
				else
					rc = begin(r, st, total);
			} else if (st->held == EXPORT_HOLD && !st->begun) {
				rc = begin(r, st, UINT64_MAX);
			}
			if (rc == 0 && st->begun && !st->failed)
				rc = flush(r, st);
			if (rc < 0) {
				kp_warn("export: request %" PRIu64 ": cannot stream the clip", st->req);
				release(st);
				st->failed = true;
			} else if (m->done && st->begun) {
				web_stream_end(r);
			}
		}
	}
	if (m->done)
		free(st);
}

static void safe_name(char *s)
{
	for (; *s; s++)
		if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '-' ||
		      *s == '_' || *s == '.'))
			*s = '_';
}

void webd_route_export(struct web_req *r)
{
	kp_Envelope env = kp_Envelope_init_zero;
	env.which_msg = kp_Envelope_media_open_tag;
	kp_MediaOpen *q = &env.msg.media_open;
	int32_t stream = 0;
	if (webd_param_str(r, "camera", true, q->camera, sizeof(q->camera)) < 0 ||
	    webd_param_stream(r, "stream", false, &stream) < 0 || webd_param_ms(r, "from", true, &q->from_ms) < 0 ||
	    webd_param_ms(r, "to", true, &q->to_ms) < 0)
		return;
	if (q->to_ms <= q->from_ms) {
		web_reply_error(r, 400, "bad_parameter", "to must be after from");
		return;
	}
	q->stream = (uint32_t)stream;
	q->for_export = true;
	struct export_state *st = calloc(1, sizeof(*st));
	if (!st) {
		web_reply_error(r, 503, "out_of_memory", "out of memory");
		return;
	}
	st->req = web_req_id(r);
	char name[sizeof(q->camera)];
	snprintf(name, sizeof(name), "%s", q->camera);
	safe_name(name);
	snprintf(st->headers, sizeof(st->headers),
		 "Content-Disposition: attachment; filename=\"%s-%s-%" PRId64 ".mp4\"\r\n", name,
		 stream ? "sub" : "main", q->from_ms);
	if (webd_relay_send(r, &env, &q->id, NULL, 0, export_cb, st) == 0)
		free(st);
}
