/* libFuzzer harness for the BCUDP windows: the input is a script of operations (writes,
 * received data packets, received ACKs, clock steps, reads) applied to a send window,
 * a receive window and a channel, with their invariants checked after every step. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bcudp_window.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct bcudp_send tx;
static struct bcudp_recv rx;
static struct bcudp_chan chan;

static void check(int ok)
{
	if (!ok)
		abort();
}

static void check_invariants(void)
{
	check(bcudp_send_inflight(&tx) <= KP_BCUDP_MAX_INFLIGHT);
	check((uint32_t)(rx.contig_id - rx.deliver_id) <= KP_BCUDP_RECV_WINDOW);
	check((uint32_t)(rx.end_id - rx.contig_id) <= KP_BCUDP_RECV_WINDOW);
	check(chan.count <= KP_BCUDP_CHANNEL_ITEMS);
	for (uint32_t id = tx.base_id; id != tx.next_id; id++) {
		const struct bcudp_send_slot *s = &tx.slot[id % KP_BCUDP_MAX_INFLIGHT];
		check(s->acked || (s->data && s->len <= BCUDP_CHUNK));
	}
	if (tx.base_id != tx.next_id)
		check(!tx.slot[tx.base_id % KP_BCUDP_MAX_INFLIGHT].acked);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t buf[BCUDP_CHUNK * 8];
	uint64_t now = 0;
	uint32_t expect_id = 0;
	const char *reason;
	bcudp_send_init(&tx);
	bcudp_recv_init(&rx);
	bcudp_chan_init(&chan);
	size_t i = 0;
	while (i + 3 <= size) {
		uint8_t op = data[i];
		uint16_t arg = (uint16_t)(data[i + 1] | data[i + 2] << 8);
		i += 3;
		switch (op % 5) {
		case 0: /* the session writes arg bytes */
			memset(buf, op, sizeof buf);
			bcudp_send_write(&tx, buf, arg % sizeof buf);
			break;
		case 1: { /* a data packet arrives, its payload filled with its id's low byte */
			uint32_t id = rx.deliver_id + (uint32_t)(int16_t)arg;
			memset(buf, (uint8_t)id, BCUDP_CHUNK);
			bcudp_recv_input(&rx, id, buf, op % 4 == 0 ? BCUDP_CHUNK + 1 : 1 + op % 16, &reason);
			break;
		}
		case 2: { /* an ACK arrives: last id near base, the SACK vector from the input */
			uint32_t last = tx.base_id + (uint32_t)(int8_t)(arg & 0xff);
			size_t n = (size_t)(arg >> 8) % 64;
			if (n > size - i)
				n = size - i;
			bcudp_send_ack(&tx, op & 0x80 ? BCUDP_NONE : 0, last, data + i, n, &reason);
			i += n;
			break;
		}
		case 3: { /* the clock moves; everything due goes out */
			now += arg % 2000;
			struct bcudp_tx t;
			unsigned sent = 0;
			while (bcudp_send_next(&tx, now, &t) == 0) {
				check((uint32_t)(t.id - tx.base_id) < BCUDP_SEND_WINDOW);
				check(t.len <= BCUDP_CHUNK && t.data);
				check(++sent <= BCUDP_SEND_WINDOW);
			}
			check(bcudp_send_next_due(&tx) > now);
			break;
		}
		default: { /* the reader drains; payloads come out in id order */
			const uint8_t *d;
			size_t len;
			bcudp_chan_fill(&chan, &rx);
			for (unsigned k = 0; k < arg % 80 && bcudp_chan_pop(&chan, &d, &len) == 0; k++)
				check(len >= 1 && d[0] == (uint8_t)expect_id++);
			break;
		}
		}
		check_invariants();
	}
	bcudp_send_free(&tx);
	return 0;
}
