/* BCUDP receive window, send window and delivered-payload channel. Packet ids are
 * compared with serial arithmetic (they are u32 and may wrap). No clock is read here:
 * callers pass now_ms. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "bcudp_window.h"

#define RW KP_BCUDP_RECV_WINDOW
#define SW KP_BCUDP_MAX_INFLIGHT

/* a - b as a signed distance. */
static int64_t id_diff(uint32_t a, uint32_t b)
{
	return (int32_t)(a - b);
}

void bcudp_recv_init(struct bcudp_recv *r)
{
	r->deliver_id = r->contig_id = r->end_id = 0;
	r->any = false;
	r->duplicates = r->beyond_window = 0;
	memset(r->have, 0, sizeof r->have);
}

int bcudp_recv_input(struct bcudp_recv *r, uint32_t packet_id, const uint8_t *data, size_t len, const char **ret_reason)
{
	if (len > BCUDP_CHUNK) {
		*ret_reason = "data payload larger than the advertised MTU";
		return -EMSGSIZE;
	}
	int64_t off = id_diff(packet_id, r->deliver_id);
	if (off >= RW) {
		r->beyond_window++;
		*ret_reason = "data packet beyond the receive window";
		return -ERANGE;
	}
	unsigned i = packet_id % RW;
	if (off < 0 || id_diff(packet_id, r->contig_id) < 0 || r->have[i]) {
		r->duplicates++;
		*ret_reason = "duplicate data packet";
		return -EALREADY;
	}
	r->have[i] = true;
	r->len[i] = (uint16_t)len;
	if (len)
		memcpy(r->data[i], data, len);
	if (!r->any || id_diff(packet_id + 1, r->end_id) > 0)
		r->end_id = packet_id + 1;
	r->any = true;
	while (id_diff(r->end_id, r->contig_id) > 0 && r->have[r->contig_id % RW])
		r->contig_id++;
	return 0;
}

int bcudp_recv_pop(struct bcudp_recv *r, const uint8_t **ret_data, size_t *ret_len)
{
	if (id_diff(r->contig_id, r->deliver_id) <= 0)
		return -EAGAIN;
	unsigned i = r->deliver_id % RW;
	r->have[i] = false;
	r->deliver_id++;
	*ret_data = r->data[i];
	*ret_len = r->len[i];
	return 0;
}

void bcudp_recv_ack(const struct bcudp_recv *r, uint32_t *ret_group, uint32_t *ret_last, uint8_t *sack,
		    size_t *ret_sack_len)
{
	if (!r->any) {
		*ret_group = BCUDP_NONE;
		*ret_last = BCUDP_NONE;
		*ret_sack_len = 0;
		return;
	}
	size_t n = (size_t)id_diff(r->end_id, r->contig_id);
	/* Packets past the vector stay buffered; the cumulative id covers them once the
	 * hole before them is filled. */
	if (n > KP_BCUDP_ACK_VECTOR_MAX)
		n = KP_BCUDP_ACK_VECTOR_MAX;
	for (size_t k = 0; k < n; k++)
		sack[k] = r->have[(r->contig_id + k) % RW] ? 1 : 0;
	*ret_group = 0;
	*ret_last = r->contig_id - 1;
	*ret_sack_len = n;
}

void bcudp_send_init(struct bcudp_send *s)
{
	memset(s, 0, sizeof *s);
	s->window = BCUDP_SEND_WINDOW;
}

void bcudp_send_free(struct bcudp_send *s)
{
	for (size_t i = 0; i < SW; i++) {
		free(s->slot[i].data);
		s->slot[i].data = NULL;
	}
}

size_t bcudp_send_inflight(const struct bcudp_send *s)
{
	return (size_t)(s->next_id - s->base_id);
}

static struct bcudp_send_slot *slot_of(struct bcudp_send *s, uint32_t id)
{
	return &s->slot[id % SW];
}

int bcudp_send_write(struct bcudp_send *s, const uint8_t *data, size_t len)
{
	struct bcudp_send_slot *tail = NULL;
	size_t room = 0;
	if (s->next_id != s->base_id) {
		tail = slot_of(s, s->next_id - 1);
		if (tail->tx_count == 0 && !tail->acked)
			room = BCUDP_CHUNK - tail->len;
	}
	size_t rest = len > room ? len - room : 0;
	size_t need = (rest + BCUDP_CHUNK - 1) / BCUDP_CHUNK;
	if (bcudp_send_inflight(s) + need > SW)
		return -ENOBUFS;
	/* Allocate every new packet first so that a failure changes nothing. */
	for (size_t k = 0; k < need; k++) {
		struct bcudp_send_slot *sl = slot_of(s, s->next_id + (uint32_t)k);
		sl->data = malloc(BCUDP_CHUNK);
		if (!sl->data) {
			while (k-- > 0) {
				sl = slot_of(s, s->next_id + (uint32_t)k);
				free(sl->data);
				sl->data = NULL;
			}
			return -ENOMEM;
		}
	}
	size_t take = len < room ? len : room;
	if (take) {
		memcpy(tail->data + tail->len, data, take);
		tail->len = (uint16_t)(tail->len + take);
		data += take;
		len -= take;
	}
	while (len) {
		struct bcudp_send_slot *sl = slot_of(s, s->next_id++);
		size_t n = len < BCUDP_CHUNK ? len : BCUDP_CHUNK;
		memcpy(sl->data, data, n);
		sl->len = (uint16_t)n;
		sl->tx_count = 0;
		sl->rto_ms = BCUDP_RTO_INITIAL_MS;
		sl->due_ms = 0;
		sl->acked = false;
		data += n;
		len -= n;
	}
	return 0;
}

/* End of the ids that may be on the wire now. */
static uint32_t window_end(const struct bcudp_send *s)
{
	uint32_t end = s->base_id + s->window;
	return id_diff(end, s->next_id) > 0 ? s->next_id : end;
}

int bcudp_send_next(struct bcudp_send *s, uint64_t now_ms, struct bcudp_tx *ret)
{
	uint32_t end = window_end(s);
	for (uint32_t id = s->base_id; id != end; id++) {
		struct bcudp_send_slot *sl = slot_of(s, id);
		if (sl->acked || sl->due_ms > now_ms)
			continue;
		ret->retransmit = sl->tx_count > 0;
		if (ret->retransmit)
			s->retransmits++;
		sl->tx_count++;
		sl->due_ms = now_ms + sl->rto_ms;
		sl->rto_ms = sl->rto_ms * 2 > BCUDP_RTO_MAX_MS ? BCUDP_RTO_MAX_MS : sl->rto_ms * 2;
		ret->id = id;
		ret->data = sl->data;
		ret->len = sl->len;
		return 0;
	}
	return -EAGAIN;
}

uint64_t bcudp_send_next_due(const struct bcudp_send *s)
{
	uint64_t due = UINT64_MAX;
	uint32_t end = window_end(s);
	for (uint32_t id = s->base_id; id != end; id++) {
		const struct bcudp_send_slot *sl = &s->slot[id % SW];
		if (!sl->acked && sl->due_ms < due)
			due = sl->due_ms;
	}
	return due;
}

static void ack_one(struct bcudp_send *s, uint32_t id)
{
	struct bcudp_send_slot *sl = slot_of(s, id);
	sl->acked = true;
	free(sl->data);
	sl->data = NULL;
}

int bcudp_send_ack(struct bcudp_send *s, uint32_t group, uint32_t last_id, const uint8_t *sack, size_t sack_len,
		   const char **ret_reason)
{
	if (group == BCUDP_NONE)
		return 0;             /* the peer has received nothing yet */
	uint32_t first = last_id + 1; /* id of sack[0] */
	if (id_diff(first, s->next_id) > 0) {
		*ret_reason = "ACK for a packet never sent";
		return -EBADMSG;
	}
	if (sack_len > SW) {
		*ret_reason = "SACK vector longer than the send window";
		return -EBADMSG;
	}
	for (size_t k = 0; k < sack_len; k++) {
		if (sack[k] > 1) {
			*ret_reason = "SACK entry neither 0 nor 1";
			return -EBADMSG;
		}
		if (sack[k] && id_diff(first + (uint32_t)k, s->next_id) >= 0) {
			*ret_reason = "ACK for a packet never sent";
			return -EBADMSG;
		}
	}
	/* Cumulative part: everything up to last_id. */
	while (id_diff(first, s->base_id) > 0) {
		if (!slot_of(s, s->base_id)->acked)
			ack_one(s, s->base_id);
		s->base_id++;
	}
	/* Selective part, and one early retransmission of holes well before a received id. */
	size_t last_received = 0;
	bool any_received = false;
	for (size_t k = 0; k < sack_len; k++) {
		uint32_t id = first + (uint32_t)k;
		if (!sack[k] || id_diff(id, s->base_id) < 0)
			continue;
		if (!slot_of(s, id)->acked)
			ack_one(s, id);
		last_received = k;
		any_received = true;
	}
	for (size_t k = 0; any_received && k + BCUDP_FAST_RETRANSMIT_GAP <= last_received; k++) {
		uint32_t id = first + (uint32_t)k;
		struct bcudp_send_slot *sl = slot_of(s, id);
		if (sack[k] || id_diff(id, s->base_id) < 0 || sl->acked || sl->tx_count != 1)
			continue;
		sl->due_ms = 0;
	}
	while (s->base_id != s->next_id && slot_of(s, s->base_id)->acked)
		s->base_id++;
	return 0;
}

void bcudp_chan_init(struct bcudp_chan *c)
{
	c->head = c->count = 0;
}

int bcudp_chan_push(struct bcudp_chan *c, const uint8_t *data, size_t len)
{
	if (len > BCUDP_CHUNK)
		return -EMSGSIZE;
	if (c->count == KP_BCUDP_CHANNEL_ITEMS)
		return -ENOBUFS;
	unsigned i = (c->head + c->count) % KP_BCUDP_CHANNEL_ITEMS;
	c->len[i] = (uint16_t)len;
	if (len)
		memcpy(c->data[i], data, len);
	c->count++;
	return 0;
}

int bcudp_chan_pop(struct bcudp_chan *c, const uint8_t **ret_data, size_t *ret_len)
{
	if (c->count == 0)
		return -EAGAIN;
	unsigned i = c->head;
	c->head = (c->head + 1) % KP_BCUDP_CHANNEL_ITEMS;
	c->count--;
	*ret_data = c->data[i];
	*ret_len = c->len[i];
	return 0;
}

unsigned bcudp_chan_fill(struct bcudp_chan *c, struct bcudp_recv *r)
{
	unsigned n = 0;
	const uint8_t *data;
	size_t len;
	while (c->count < KP_BCUDP_CHANNEL_ITEMS && bcudp_recv_pop(r, &data, &len) == 0) {
		bcudp_chan_push(c, data, len);
		n++;
	}
	return n;
}
