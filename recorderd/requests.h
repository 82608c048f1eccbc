/* recorderd's answers to the keeppeekctl questions the supervisor relays: check (on its
 * own thread with one read transaction per stream, so the loop keeps recording and the
 * commit thread keeps committing; one check at a time), coverage snapshots and keyframes
 * (on the loop thread: a few catalog reads and one pread). An answer is at most
 * REC_ANSWER_MAX bytes and goes back as RecorderReply pieces of at most REC_ANSWER_PIECE
 * bytes, the last one marked done with the exit code. */
#ifndef KP_REC_REQUESTS_H
#define KP_REC_REQUESTS_H

#include "kp_limits.h"
#include "worker.h"

#define REC_ANSWER_PIECE (60 * KP_KIB)
#define REC_ANSWER_MAX   (KP_IPC_TAIL_MAX_CONTROL - 4 * KP_KIB)

struct cat;

/* What the answers hand on to the recording core (recorder.c) and the event search
 * (requests_events.c): handed in by main.c before the loop runs, so that this file
 * includes neither. */
struct jbuf;

struct rec_request_hooks {
	const char *(*catalog_error)(void);
	void (*rebuild)(struct kp_worker *w, uint32_t id, int json);
	void (*event_search)(struct kp_worker *w, struct cat *cat, const kp_EventSearch *s);
	/* keeppeekctl tier status: the text (or JSON) into b. */
	void (*tier_status)(struct jbuf *b, struct cat *cat, int json);
};

void rec_requests_hooks(const struct rec_request_hooks *h);

/* The catalog is open: questions get answers from now on. */
void rec_requests_open(struct kp_worker *w, struct cat *cat, int data_dirfd);
void rec_request(struct kp_worker *w, const kp_Envelope *env);
/* Every frame from the supervisor that the worker runtime does not handle: a
 * BackupRequest with its file, or rec_request's questions. */
void rec_request_frame(struct kp_worker *w, struct kp_ipc_frame *f);
/* An answer to the supervisor's request id: RecorderReply pieces, the last with done. */
void rec_send_answer(struct kp_worker *w, uint32_t id, int code, const void *data, size_t len);
void rec_send_text(struct kp_worker *w, uint32_t id, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Cancels a running check and waits for it; before the catalog closes. */
void rec_requests_close(void);

#endif
