/* Questions relayed to recorderd for keeppeekctl (docs/ipc.md, questions relayed to a
 * worker): at most one waiting per control client, recorderd's RecorderReply pieces
 * joined up to the control reply ceiling, and a failure for each when recorderd goes. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "kp_limits.h"
#include "log.h"
#include "supervisor.h"

/* Questions waiting for recorderd: at most one per control client. */
static struct relay {
	uint32_t id; /* 0: free */
	uint64_t ticket;
	char *buf;
	size_t len;
	int truncated;
} relays[KP_CONTROL_MAX_CLIENTS];
static uint32_t next_relay_id;

static void relay_end(struct supervisor *s, struct relay *r, int code)
{
	static const char note[] = "\n(answer truncated at the control reply ceiling)\n";
	if (r->truncated && r->len + sizeof note <= KP_IPC_TAIL_MAX_CONTROL) {
		memcpy(r->buf + r->len, note, sizeof note - 1);
		r->len += sizeof note - 1;
	}
	int e = control_answer(s, r->ticket, r->truncated ? 1 : code, r->buf, r->len);
	if (e < 0 && e != -ENOENT)
		kp_warn("control client: answer from recorderd not delivered: %s", strerror(-e));
	free(r->buf);
	*r = (struct relay){0};
}

int control_relay(struct supervisor *s, kp_Envelope *env, uint32_t *id, uint64_t ticket, struct kp_out *o, int fd,
		  const char *prefix)
{
	struct proc *p = proc_by_peer(s, kp_Peer_PEER_RECORDERD);
	if (!p || p->state != PROC_RUNNING || !p->ipc) {
		kp_out_put(o, "recorderd is not running (%s); try again\n", p ? proc_state_name(p->state) : "?");
		return 1;
	}
	struct relay *r = NULL;
	for (unsigned i = 0; i < KP_CONTROL_MAX_CLIENTS && !r; i++)
		if (!relays[i].id)
			r = &relays[i];
	if (!r) {
		kp_out_put(o, "too many questions are waiting for recorderd; try again\n");
		return 1;
	}
	if (++next_relay_id == 0)
		next_relay_id = 1;
	*id = next_relay_id;
	char *head = NULL;
	if (prefix && !(head = strdup(prefix))) {
		kp_out_put(o, "asking recorderd failed: %s\n", strerror(ENOMEM));
		return 1;
	}
	int e = kp_ipc_send(p->ipc, env, NULL, 0, fd >= 0 ? &fd : NULL, fd >= 0);
	if (e < 0) {
		free(head);
		kp_out_put(o, "asking recorderd failed: %s\n", strerror(-e));
		return 1;
	}
	*r = (struct relay){.id = *id, .ticket = ticket, .buf = head, .len = head ? strlen(head) : 0};
	return CONTROL_PENDING;
}

void control_relay_reply(struct supervisor *s, const kp_RecorderReply *rr, const uint8_t *tail, size_t len)
{
	struct relay *r = NULL;
	for (unsigned i = 0; i < KP_CONTROL_MAX_CLIENTS && !r; i++)
		if (rr->id && relays[i].id == rr->id)
			r = &relays[i];
	if (!r)
		return; /* a question whose answer was already given up on */
	if (len && !r->truncated) {
		size_t room = KP_IPC_TAIL_MAX_CONTROL - 64 - r->len;
		size_t n = len < room ? len : room;
		char *nb = realloc(r->buf, r->len + n + 64);
		if (!nb || n < len)
			r->truncated = 1;
		if (nb) {
			r->buf = nb;
			memcpy(r->buf + r->len, tail, n);
			r->len += n;
		}
	}
	if (rr->done)
		relay_end(s, r, rr->exit_code);
}

void control_relay_lost(struct supervisor *s)
{
	static const char msg[] = "recorderd stopped before it answered; try again\n";
	for (unsigned i = 0; i < KP_CONTROL_MAX_CLIENTS; i++) {
		struct relay *r = &relays[i];
		if (!r->id)
			continue;
		free(r->buf);
		int e = control_answer(s, r->ticket, 1, msg, sizeof msg - 1);
		if (e < 0 && e != -ENOENT)
			kp_warn("control client: answer not delivered: %s", strerror(-e));
		*r = (struct relay){0};
	}
}
