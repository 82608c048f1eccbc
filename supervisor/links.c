/* The link mesh between workers: one socketpair per pair of peers, created when both
 * ends are running and re-created (next generation) when either end reports it lost, so
 * that a worker's restart or a malformed frame never restarts its neighbours. */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

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

void links_on_ready(struct supervisor *s, struct proc *p)
{
	for (unsigned i = 0; i < KP_NLINKS; i++) {
		struct link *l = &s->links[i];
		if (l->a != p->peer && l->b != p->peer)
			continue;
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
	l->relinks++;
	kp_warn("link %s<->%s (generation %u) lost: %s; re-linking", p->name, other->name, (unsigned)lost->generation,
		lost->reason);
	make_link(s, l);
}
