/* GET /api/v1/export?camera=&stream=&from=&to=: a clip as one MP4 file, no transcoding.
 * recorderd answers MediaOpen(for_export) with MediaPiece frames, each a byte range of a
 * file whose descriptor travels with it (the recording, or recorderd's rewritten
 * fragment headers); their concatenation is one valid MP4 (docs/queries.md).
 *
 * Pieces are held until the last arrives, so the answer has a Content-Length: small
 * ones (init segments, fragment headers: at most EXPORT_COPY_PIECE bytes each,
 * EXPORT_COPY_TOTAL in all) are read into memory at once and their descriptors closed;
 * the others keep their descriptor and go to web_stream_fd, which sends the range
 * without holding it in memory. Past EXPORT_MAX_PIECES the answer starts chunked and
 * streams as pieces come. At most EXPORT_CONCURRENT exports are served at a time (each
 * holds up to a few hundred descriptors until sent); more get 503. */
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

#define EXPORT_MAX_PIECES  600 /* recorderd sends at most 1 + 2 x 256 */
#define EXPORT_COPY_PIECE  (64 * KP_KIB)
#define EXPORT_COPY_TOTAL  (4 * KP_MIB)
#define EXPORT_CONCURRENT  2
#define EXPORT_RETRY_AFTER "Retry-After: 5\r\n"

struct piece {
	int fd;         /* -1: bytes */
	uint8_t *bytes; /* a copy of the range */
	uint64_t offset, length;
};

struct export_state {
	uint64_t req;
	bool begun, failed;
	uint32_t next_index;
	unsigned held;
	size_t copied;
	struct piece pieces[EXPORT_MAX_PIECES];
	char headers[200];
};

/* The requests being exported: a slot is free again once its request is finished. */
static uint64_t active[EXPORT_CONCURRENT];

static void release(struct export_state *st)
{
	for (unsigned i = 0; i < st->held; i++) {
		if (st->pieces[i].fd >= 0)
			close(st->pieces[i].fd);
		free(st->pieces[i].bytes);
	}
	st->held = 0;
}

static int begin(struct web_req *r, struct export_state *st, uint64_t length)
{
	if (web_stream_begin(r, 200, "video/mp4", length, st->headers) < 0)
		return -1;
	st->begun = true;
	return 0;
}

/* Hands the held pieces to the stream, in order. */
static int flush(struct web_req *r, struct export_state *st)
{
	int rc = 0;
	for (unsigned i = 0; i < st->held; i++) {
		struct piece *p = &st->pieces[i];
		if (rc < 0) {
			if (p->fd >= 0)
				close(p->fd);
		} else if (p->fd >= 0) {
			rc = web_stream_fd(r, p->fd, p->offset, p->length);
		} else {
			rc = web_stream_bytes(r, p->bytes, p->length);
		}
		free(p->bytes);
	}
	st->held = 0;
	return rc;
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

/* Keeps one piece: a copy when small, else its descriptor (taken from the frame). */
static int hold(struct export_state *st, struct kp_ipc_frame *f, const kp_MediaPiece *m)
{
	struct piece *p = &st->pieces[st->held];
	*p = (struct piece){.fd = -1, .offset = m->offset, .length = m->length};
	if (m->length <= EXPORT_COPY_PIECE && st->copied + m->length <= EXPORT_COPY_TOTAL) {
		p->bytes = malloc(m->length);
		if (!p->bytes)
			return -ENOMEM;
		size_t got = 0;
		while (got < m->length) {
			ssize_t n = pread(f->fds[0], p->bytes + got, m->length - got, (off_t)(m->offset + got));
			if (n <= 0) {
				int err = n < 0 ? errno : EIO;
				free(p->bytes);
				return -err;
			}
			got += (size_t)n;
		}
		st->copied += m->length;
	} else {
		p->fd = f->fds[0];
		f->fds[0] = -1; /* ours now */
	}
	st->held++;
	return 0;
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
	if (st->failed) {
		/* what follows a failure is dropped (the frame's descriptors are closed) */
	} else if (m->result != kp_CatalogResult_CATALOG_OK) {
		char why[96];
		snprintf(why, sizeof(why), "recorderd: %s", m->error_code[0] ? m->error_code : "error");
		fail(r, st, webd_catalog_status(m->result), m->error_code[0] ? m->error_code : "error", why);
	} else if (!r) {
		release(st);
		st->failed = true;
	} else if (m->length && m->index != st->next_index) {
		kp_err("export: piece %u arrived where %u was expected", (unsigned)m->index, st->next_index);
		fail(r, st, 502, "bad_answer", "recorderd's pieces arrived out of order");
	} else if (m->length && (f->nfds < 1 || f->fds[0] < 0)) {
		fail(r, st, 502, "bad_answer", "a piece came without its descriptor");
	} else {
		int rc = 0;
		if (m->length) {
			st->next_index++;
			rc = hold(st, f, m);
			if (rc < 0) {
				kp_err("export: cannot read piece %u of recorderd's answer: %s", (unsigned)m->index,
				       strerror(-rc));
				fail(r, st, 500, "read_failed", "cannot read the recording");
			}
		}
		if (!st->failed) {
			if (m->done && !st->begun) {
				uint64_t total = 0;
				for (unsigned i = 0; i < st->held; i++)
					total += st->pieces[i].length;
				if (total == 0)
					fail(r, st, 404, "nothing_recorded", "nothing recorded in that range");
				else
					rc = begin(r, st, total);
			} else if (st->held == EXPORT_MAX_PIECES && !st->begun) {
				rc = begin(r, st, UINT64_MAX);
			}
			if (rc == 0 && st->begun && !st->failed && (m->done || st->held == EXPORT_MAX_PIECES))
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

/* A free slot among the exports being served, or -1. */
static int admit(void)
{
	for (int i = 0; i < EXPORT_CONCURRENT; i++)
		if (active[i] && !web_req_find(active[i]))
			active[i] = 0;
	for (int i = 0; i < EXPORT_CONCURRENT; i++)
		if (!active[i])
			return i;
	return -1;
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
	int slot = admit();
	if (slot < 0) {
		static const char busy[] = "{\"error\":\"two exports are being served; try again shortly\","
					   "\"code\":\"busy\"}";
		web_reply(r, 503, "application/json", busy, sizeof(busy) - 1, EXPORT_RETRY_AFTER);
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
	if (webd_relay_send(r, &env, &q->id, NULL, 0, export_cb, st) == 0) {
		free(st);
		return;
	}
	active[slot] = st->req;
}
