/* The link mesh between workers: one socketpair per pair of peers, created when both
 * ends are running and re-created (next generation) when either end reports it lost, so
 * that a worker's restart or a malformed frame never restarts its neighbours. A link lost
 * again soon after it was made (an end that refuses it, or sends garbage on every new
 * one) is re-made after a delay doubling from KP_LINK_RELINK_MIN_MS to
 * KP_LINK_RELINK_MAX_MS, not at once: without it a refusing end had keeppeekd hand over
 * tens of thousands of generations a second. */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "kp_limits.h"
#include "kp_time.h"
#include "log.h"
#include "supervisor.h"

static const kp_Peer mesh[KP_NLINKS][2] = {
    {kp_Peer_PEER_INGESTD, kp_Peer_PEER_RECORDERD},
    {kp_Peer_PEER_INGESTD, kp_Peer_PEER_RTCD},
    {kp_Peer_PEER_RECORDERD, kp_Peer_PEER_WEBD},
    {kp_Peer_PEER_RECORDERD, kp_Peer_PEER_RTCD},
    {kp_Peer_PEER_WEBD, kp_Peer_PEER_RTCD},
    {kp_Peer_PEER_RTCD, kp_Peer_PEER_TRANSCODER},
    {kp_Peer_PEER_RECORDERD, kp_Peer_PEER_TRANSCODER},
    {kp_Peer_PEER_RECORDERD, kp_Peer_PEER_TIER},
};

void links_init(struct supervisor *s)
{
	for (unsigned i = 0; i < KP_NLINKS; i++) {
		s->links[i].a = mesh[i][0];
		s->links[i].b = mesh[i][1];
		s->links[i].generation = 0;
	}
	uv_timer_init(s->loop, &s->link_timer);
	s->link_timer.data = s;
}

void links_close(struct supervisor *s)
{
	if (s->link_timer.data)
		uv_close((uv_handle_t *)&s->link_timer, NULL);
}

static struct link *find(struct supervisor *s, kp_Peer x, kp_Peer y)
{
	for (unsigned i = 0; i < KP_NLINKS; i++) {
		struct link *l = &s->links[i];
		if ((l->a == x && l->b == y) || (l->a == y && l->b == x))
			return l;
	}
	return NULL;
}

const struct link *links_between(const struct supervisor *s, kp_Peer a, kp_Peer b)
{
	return find((struct supervisor *)s, a, b);
}

static int hand_over(struct proc *p, kp_Peer other, uint32_t generation, int fd)
{
	kp_Envelope env = kp_Envelope_init_zero;
	env.which_msg = kp_Envelope_link_new_tag;
	env.msg.link_new.peer = other;
	env.msg.link_new.generation = generation;
	if (!p->ipc)
		return -EPIPE;
	return kp_ipc_send(p->ipc, &env, NULL, 0, &fd, 1);
}

static void make_link(struct supervisor *s, struct link *l)
{
	struct proc *pa = proc_by_peer(s, l->a), *pb = proc_by_peer(s, l->b);
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
		kp_err("link %s<->%s: socketpair failed: %s", pa->name, pb->name, strerror(errno));
		return;
	}
	l->generation++;
	l->made_ms = kp_mono_ms();
	l->due_ms = 0;
	int ra = hand_over(pa, l->b, l->generation, sv[0]);
	int rb = hand_over(pb, l->a, l->generation, sv[1]);
	close(sv[0]);
	close(sv[1]);
	if (ra < 0 || rb < 0)
		kp_err("link %s<->%s (generation %u): handing over failed: %s", pa->name, pb->name,
		       (unsigned)l->generation, strerror(-(ra < 0 ? ra : rb)));
	else
		kp_debug("link %s<->%s generation %u handed over", pa->name, pb->name, (unsigned)l->generation);
}

static bool both_running(struct supervisor *s, const struct link *l)
{
	return !s->stopping && proc_by_peer(s, l->a)->state == PROC_RUNNING &&
	       proc_by_peer(s, l->b)->state == PROC_RUNNING;
}

/* Makes the re-links that are due; the timer waits for the next one. */
static void on_link_timer(uv_timer_t *t)
{
	struct supervisor *s = t->data;
	uint64_t now = kp_mono_ms(), next = 0;
	for (unsigned i = 0; i < KP_NLINKS; i++) {
		struct link *l = &s->links[i];
		if (!l->due_ms)
			continue;
		if (l->due_ms <= now) {
			l->due_ms = 0;
			if (both_running(s, l))
				make_link(s, l);
		} else if (!next || l->due_ms < next) {
			next = l->due_ms;
		}
	}
	if (next)
		uv_timer_start(&s->link_timer, on_link_timer, next - now, 0);
}

void links_on_ready(struct supervisor *s, struct proc *p)
{
	for (unsigned i = 0; i < KP_NLINKS; i++) {
		struct link *l = &s->links[i];
		if (l->a != p->peer && l->b != p->peer)
			continue;
		l->quick = 0; /* a new process at one end: a new start */
		struct proc *other = proc_by_peer(s, l->a == p->peer ? l->b : l->a);
		if (other->state == PROC_RUNNING)
			make_link(s, l);
	}
}

void links_on_lost(struct supervisor *s, struct proc *p, const kp_LinkLost *lost)
{
	struct link *l = find(s, p->peer, lost->peer);
	if (!l) {
		kp_warn("%s reported a lost link to %s, which is not in the mesh", p->name, kp_peer_name(lost->peer));
		return;
	}
	if (lost->generation != l->generation)
		return; /* already replaced */
	struct proc *other = proc_by_peer(s, lost->peer);
	if (s->stopping || p->state != PROC_RUNNING || other->state != PROC_RUNNING)
		return; /* re-created when the other end is running again */
	if (l->due_ms)
		return; /* a re-link is waiting already */
	l->relinks++;
	uint64_t now = kp_mono_ms();
	l->quick = now - l->made_ms < KP_LINK_STABLE_MS ? l->quick + 1 : 0;
	if (!l->quick) {
		kp_warn("link %s<->%s (generation %u) lost: %s; re-linking", p->name, other->name,
			(unsigned)lost->generation, lost->reason);
		make_link(s, l);
		return;
	}
	uint64_t delay = KP_LINK_RELINK_MIN_MS;
	for (unsigned i = 1; i < l->quick && delay < KP_LINK_RELINK_MAX_MS; i++)
		delay *= 2;
	if (delay > KP_LINK_RELINK_MAX_MS)
		delay = KP_LINK_RELINK_MAX_MS;
	kp_warn("link %s<->%s (generation %u) lost: %s; lost within %d ms of its making (%u in a row): re-linking "
		"in %llu ms",
		p->name, other->name, (unsigned)lost->generation, lost->reason, KP_LINK_STABLE_MS, l->quick,
		(unsigned long long)delay);
	l->due_ms = now + delay;
	uint64_t due = uv_timer_get_due_in(&s->link_timer);
	if (!uv_is_active((uv_handle_t *)&s->link_timer) || delay < due)
		uv_timer_start(&s->link_timer, on_link_timer, delay, 0);
}
