/* Unit tests for the BCUDP reliability state machines: the receive window (delivery,
 * duplicates, the 256-packet ceiling, ACK vectors), the send window (chunking, the
 * 4096-packet ceiling, the 100 ms..1 s retransmission timer, ACK processing), the
 * 64-item channel, and 10,000 packets through a simulated lossy, reordering and
 * duplicating channel driven by now_ms. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bcudp_packet.h"
#include "bcudp_window.h"
#include "test.h"

static struct bcudp_recv rx;
static struct bcudp_send tx;
static struct bcudp_chan chan;

static uint8_t pattern(uint64_t offset)
{
	return (uint8_t)((offset * 131) ^ (offset >> 8) ^ (offset >> 17));
}

static void test_recv_in_order_and_duplicates(void)
{
	const char *reason = NULL;
	const uint8_t *data;
	size_t len;
	bcudp_recv_init(&rx);
	CHECK_EQ(bcudp_recv_pop(&rx, &data, &len), -EAGAIN);
	CHECK_EQ(bcudp_recv_input(&rx, 1, (const uint8_t *)"b", 1, &reason), 0);
	CHECK_EQ(bcudp_recv_pop(&rx, &data, &len), -EAGAIN); /* 0 is missing */
	CHECK_EQ(bcudp_recv_input(&rx, 1, (const uint8_t *)"b", 1, &reason), -EALREADY);
	CHECK_EQ(bcudp_recv_input(&rx, 0, (const uint8_t *)"a", 1, &reason), 0);
	CHECK_EQ(bcudp_recv_pop(&rx, &data, &len), 0);
	CHECK(len == 1 && data[0] == 'a');
	CHECK_EQ(bcudp_recv_pop(&rx, &data, &len), 0);
	CHECK(len == 1 && data[0] == 'b');
	CHECK_EQ(bcudp_recv_pop(&rx, &data, &len), -EAGAIN);
	/* Already delivered: a duplicate. */
	CHECK_EQ(bcudp_recv_input(&rx, 0, (const uint8_t *)"a", 1, &reason), -EALREADY);
	CHECK_EQ(rx.duplicates, 2);
	uint8_t big[BCUDP_CHUNK + 1] = {0};
	CHECK_EQ(bcudp_recv_input(&rx, 2, big, sizeof big, &reason), -EMSGSIZE);
}

static void test_recv_window_ceiling(void)
{
	const char *reason = NULL;
	const uint8_t *data;
	size_t len;
	uint8_t b = 7;
	bcudp_recv_init(&rx);
	/* Ids 1..511 fit (0 missing); 512 is one past the 512-packet window. */
	for (uint32_t id = 1; id < KP_BCUDP_RECV_WINDOW; id++)
		CHECK_EQ(bcudp_recv_input(&rx, id, &b, 1, &reason), 0);
	reason = NULL;
	CHECK_EQ(bcudp_recv_input(&rx, KP_BCUDP_RECV_WINDOW, &b, 1, &reason), -ERANGE);
	CHECK(reason && strstr(reason, "beyond the receive window"));
	CHECK_EQ(bcudp_recv_input(&rx, 0xfffffff0u, &b, 1, &reason), -EALREADY); /* behind: old */
	CHECK_EQ(rx.beyond_window, 1);
	uint8_t sack[KP_BCUDP_RECV_WINDOW];
	uint32_t group, last;
	size_t n;
	bcudp_recv_ack(&rx, &group, &last, sack, &n);
	CHECK_EQ(group, 0);
	CHECK_EQ(last, BCUDP_NONE);
	/* The longest vector: id 0 missing, then received ones up to the cap (cameras hang up
	 * at about 205 entries); the rest stay buffered. */
	CHECK_EQ(n, KP_BCUDP_ACK_VECTOR_MAX);
	CHECK(n < 200);
	CHECK_EQ(sack[0], 0);
	CHECK_EQ(sack[KP_BCUDP_ACK_VECTOR_MAX - 1], 1);
	CHECK_EQ(bcudp_recv_input(&rx, 0, &b, 1, &reason), 0);
	unsigned popped = 0;
	while (bcudp_recv_pop(&rx, &data, &len) == 0)
		popped++;
	CHECK_EQ(popped, KP_BCUDP_RECV_WINDOW);
	CHECK_EQ(bcudp_recv_input(&rx, KP_BCUDP_RECV_WINDOW, &b, 1, &reason), 0);
	CHECK_EQ(bcudp_recv_input(&rx, 2 * KP_BCUDP_RECV_WINDOW, &b, 1, &reason), -ERANGE);
}

static void test_recv_ack_vector(void)
{
	const char *reason = NULL;
	uint8_t b = 0, sack[KP_BCUDP_RECV_WINDOW];
	uint32_t group, last;
	size_t n;
	bcudp_recv_init(&rx);
	bcudp_recv_ack(&rx, &group, &last, sack, &n);
	CHECK_EQ(group, BCUDP_NONE);
	CHECK_EQ(last, BCUDP_NONE);
	CHECK_EQ(n, 0);
	uint32_t ids[] = {0, 1, 3, 5};
	for (size_t i = 0; i < 4; i++)
		bcudp_recv_input(&rx, ids[i], &b, 1, &reason);
	bcudp_recv_ack(&rx, &group, &last, sack, &n);
	CHECK_EQ(group, 0);
	CHECK_EQ(last, 1);
	CHECK_EQ(n, 4);
	CHECK(sack[0] == 0 && sack[1] == 1 && sack[2] == 0 && sack[3] == 1);
	/* Received but not yet popped still counts as received in the ACK. */
	bcudp_recv_input(&rx, 2, &b, 1, &reason);
	bcudp_recv_ack(&rx, &group, &last, sack, &n);
	CHECK_EQ(last, 3);
	CHECK_EQ(n, 2);
}

static void test_send_chunking(void)
{
	static uint8_t buf[3000];
	struct bcudp_tx t;
	for (size_t i = 0; i < sizeof buf; i++)
		buf[i] = pattern(i);
	bcudp_send_init(&tx);
	CHECK_EQ(bcudp_send_write(&tx, buf, sizeof buf), 0);
	CHECK_EQ(bcudp_send_inflight(&tx), 3);
	CHECK_EQ(bcudp_send_write(&tx, (const uint8_t *)"0123456789", 10), 0); /* fills the 340-byte tail */
	CHECK_EQ(bcudp_send_inflight(&tx), 3);
	size_t sizes[3];
	for (int i = 0; i < 3; i++) {
		CHECK_EQ(bcudp_send_next(&tx, 0, &t), 0);
		CHECK_EQ(t.id, (uint32_t)i);
		CHECK(!t.retransmit);
		sizes[i] = t.len;
		if (i < 2)
			CHECK(!memcmp(t.data, buf + i * BCUDP_CHUNK, t.len));
		else
			CHECK(!memcmp(t.data + 340, "0123456789", 10));
	}
	CHECK(sizes[0] == BCUDP_CHUNK && sizes[1] == BCUDP_CHUNK && sizes[2] == 350);
	/* After transmission a packet is never grown: new bytes open packet 3. */
	CHECK_EQ(bcudp_send_write(&tx, (const uint8_t *)"x", 1), 0);
	CHECK_EQ(bcudp_send_inflight(&tx), 4);
	bcudp_send_free(&tx);
}

static void test_send_inflight_ceiling(void)
{
	static uint8_t block[BCUDP_CHUNK * 64];
	bcudp_send_init(&tx);
	for (int i = 0; i < KP_BCUDP_MAX_INFLIGHT / 64; i++)
		CHECK_EQ(bcudp_send_write(&tx, block, sizeof block), 0);
	CHECK_EQ(bcudp_send_inflight(&tx), KP_BCUDP_MAX_INFLIGHT);
	/* One byte more needs packet 4097: refused, and nothing changes. */
	CHECK_EQ(bcudp_send_write(&tx, block, 1), -ENOBUFS);
	CHECK_EQ(bcudp_send_inflight(&tx), KP_BCUDP_MAX_INFLIGHT);
	/* Only BCUDP_SEND_WINDOW packets go on the wire before an ACK. */
	struct bcudp_tx t;
	unsigned sent = 0;
	while (bcudp_send_next(&tx, 0, &t) == 0)
		sent++;
	CHECK_EQ(sent, BCUDP_SEND_WINDOW);
	/* Acknowledging the first packet frees one slot and lets one more out. */
	const char *reason = NULL;
	CHECK_EQ(bcudp_send_ack(&tx, 0, 0, NULL, 0, &reason), 0);
	CHECK_EQ(bcudp_send_inflight(&tx), KP_BCUDP_MAX_INFLIGHT - 1);
	CHECK_EQ(bcudp_send_write(&tx, block, BCUDP_CHUNK), 0);
	CHECK_EQ(bcudp_send_write(&tx, block, 1), -ENOBUFS);
	CHECK_EQ(bcudp_send_next(&tx, 0, &t), 0);
	CHECK_EQ(t.id, BCUDP_SEND_WINDOW);
	CHECK_EQ(bcudp_send_next(&tx, 0, &t), -EAGAIN);
	bcudp_send_free(&tx);
}

static void test_send_retransmit_backoff(void)
{
	struct bcudp_tx t;
	bcudp_send_init(&tx);
	bcudp_send_write(&tx, (const uint8_t *)"hello", 5);
	CHECK_EQ(bcudp_send_next_due(&tx), 0);
	CHECK_EQ(bcudp_send_next(&tx, 1000, &t), 0);
	CHECK(!t.retransmit);
	/* The timer starts at 100 ms and doubles up to 1 s. */
	uint64_t expect[] = {1100, 1300, 1700, 2500, 3500, 4500};
	uint64_t now = 1000;
	for (size_t i = 0; i < sizeof expect / sizeof expect[0]; i++) {
		CHECK_EQ(bcudp_send_next_due(&tx), expect[i]);
		CHECK_EQ(bcudp_send_next(&tx, expect[i] - 1, &t), -EAGAIN);
		now = expect[i];
		CHECK_EQ(bcudp_send_next(&tx, now, &t), 0);
		CHECK(t.retransmit);
		CHECK_EQ(t.id, 0);
	}
	CHECK_EQ(tx.retransmits, 6);
	const char *reason = NULL;
	CHECK_EQ(bcudp_send_ack(&tx, 0, 0, NULL, 0, &reason), 0);
	CHECK_EQ(bcudp_send_inflight(&tx), 0);
	CHECK_EQ(bcudp_send_next_due(&tx), UINT64_MAX);
	CHECK_EQ(bcudp_send_next(&tx, now + 5000, &t), -EAGAIN);
	bcudp_send_free(&tx);
}

static void test_send_ack_processing(void)
{
	static uint8_t block[BCUDP_CHUNK * 10];
	struct bcudp_tx t;
	const char *reason = NULL;
	bcudp_send_init(&tx);
	bcudp_send_write(&tx, block, sizeof block); /* ids 0..9 */
	while (bcudp_send_next(&tx, 0, &t) == 0)
		;
	/* Nothing received yet: ignored. */
	CHECK_EQ(bcudp_send_ack(&tx, BCUDP_NONE, BCUDP_NONE, NULL, 0, &reason), 0);
	CHECK_EQ(bcudp_send_inflight(&tx), 10);
	/* Malformed ACKs change nothing. */
	CHECK_EQ(bcudp_send_ack(&tx, 0, 10, NULL, 0, &reason), -EBADMSG);
	CHECK_STR_CONTAINS(reason, "never sent");
	uint8_t bad_sack[3] = {1, 2, 1};
	CHECK_EQ(bcudp_send_ack(&tx, 0, 0, bad_sack, 3, &reason), -EBADMSG);
	CHECK_STR_CONTAINS(reason, "neither 0 nor 1");
	uint8_t past[10] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1}; /* ids 1..10, 10 never sent */
	CHECK_EQ(bcudp_send_ack(&tx, 0, 0, past, 10, &reason), -EBADMSG);
	CHECK_EQ(bcudp_send_inflight(&tx), 10);
	/* last in-order 1; SACK: 2 missing, 3 received, 4 missing, 5..6 received. */
	uint8_t sack[5] = {0, 1, 0, 1, 1};
	CHECK_EQ(bcudp_send_ack(&tx, 0, 1, sack, 5, &reason), 0);
	CHECK_EQ(tx.base_id, 2);
	CHECK_EQ(bcudp_send_inflight(&tx), 8);
	/* A hole at least 3 ids before the last received one (2, not 4) goes out again at
	 * once; the rest wait for their timer. */
	CHECK_EQ(bcudp_send_next(&tx, 1, &t), 0);
	CHECK_EQ(t.id, 2);
	CHECK(t.retransmit);
	CHECK_EQ(bcudp_send_next(&tx, 1, &t), -EAGAIN);
	/* Timer: 4, 7, 8, 9 (never acknowledged) at 100 ms; 3, 5, 6 are not resent. */
	uint32_t want[] = {4, 7, 8, 9};
	for (size_t i = 0; i < 4; i++) {
		CHECK_EQ(bcudp_send_next(&tx, 100, &t), 0);
		CHECK_EQ(t.id, want[i]);
	}
	CHECK_EQ(bcudp_send_next(&tx, 100, &t), -EAGAIN);
	/* A stale cumulative ACK (older than base) is harmless. */
	CHECK_EQ(bcudp_send_ack(&tx, 0, 0, NULL, 0, &reason), 0);
	CHECK_EQ(tx.base_id, 2);
	/* Everything: the window empties. */
	CHECK_EQ(bcudp_send_ack(&tx, 0, 9, NULL, 0, &reason), 0);
	CHECK_EQ(bcudp_send_inflight(&tx), 0);
	bcudp_send_free(&tx);
}

static void test_chan_ceiling(void)
{
	const uint8_t *data;
	size_t len;
	bcudp_chan_init(&chan);
	for (int i = 0; i < KP_BCUDP_CHANNEL_ITEMS; i++) {
		uint8_t b = (uint8_t)i;
		CHECK_EQ(bcudp_chan_push(&chan, &b, 1), 0);
	}
	uint8_t b = 0xff;
	CHECK_EQ(bcudp_chan_push(&chan, &b, 1), -ENOBUFS); /* item 65 */
	for (int i = 0; i < KP_BCUDP_CHANNEL_ITEMS; i++) {
		CHECK_EQ(bcudp_chan_pop(&chan, &data, &len), 0);
		CHECK(len == 1 && data[0] == (uint8_t)i);
	}
	CHECK_EQ(bcudp_chan_pop(&chan, &data, &len), -EAGAIN);
	/* Filling from a receive window stops at 64 and leaves the rest in the window. */
	const char *reason;
	bcudp_recv_init(&rx);
	for (uint32_t id = 0; id < 100; id++) {
		b = (uint8_t)id;
		bcudp_recv_input(&rx, id, &b, 1, &reason);
	}
	CHECK_EQ(bcudp_chan_fill(&chan, &rx), KP_BCUDP_CHANNEL_ITEMS);
	CHECK_EQ(bcudp_chan_fill(&chan, &rx), 0);
	for (int i = 0; i < KP_BCUDP_CHANNEL_ITEMS; i++)
		bcudp_chan_pop(&chan, &data, &len);
	CHECK_EQ(bcudp_chan_fill(&chan, &rx), 36);
	CHECK_EQ(bcudp_chan_pop(&chan, &data, &len), 0);
	CHECK_EQ(data[0], 64);
}

/* A simulated datagram network: each datagram is dropped, duplicated or delayed by a
 * random 1..30 ms (which reorders), all from a fixed seed. */
#define NET_MAX 16384
struct datagram {
	uint64_t at;
	size_t len;
	uint8_t *bytes;
	int to; /* 0: receiver (data), 1: sender (ACKs) */
};
static struct datagram net[NET_MAX];
static size_t net_count;
static uint32_t seed = 12345;
static uint64_t net_dropped, net_duplicated;

static uint32_t rnd(void)
{
	seed ^= seed << 13;
	seed ^= seed >> 17;
	seed ^= seed << 5;
	return seed;
}

static void net_send(uint64_t now, int to, const uint8_t *bytes, size_t len)
{
	if (rnd() % 100 < 5) {
		net_dropped++;
		return;
	}
	int copies = rnd() % 100 < 2 ? 2 : 1;
	net_duplicated += (unsigned)copies - 1;
	for (int c = 0; c < copies && net_count < NET_MAX; c++) {
		struct datagram *d = &net[net_count++];
		d->at = now + 1 + rnd() % 30;
		d->len = len;
		d->bytes = malloc(len);
		memcpy(d->bytes, bytes, len);
		d->to = to;
	}
}

static void test_lossy_channel(void)
{
	enum { PACKETS = 10000 };
	const uint64_t total = (uint64_t)PACKETS * BCUDP_CHUNK;
	static uint8_t chunk[BCUDP_CHUNK];
	static struct bcudp_packet pkt;
	uint8_t dgram[BCUDP_MTU + KP_BCUDP_RECV_WINDOW], sack[KP_BCUDP_RECV_WINDOW];
	uint64_t written = 0, received = 0, mismatches = 0, now = 0, last_ack = 0;
	const char *reason;

	bcudp_send_init(&tx);
	bcudp_recv_init(&rx);
	bcudp_chan_init(&chan);
	for (now = 0; (received < total || bcudp_send_inflight(&tx) > 0) && now < 600000; now++) {
		/* The writer keeps the send window as full as the ceiling allows. */
		while (written < total) {
			for (size_t i = 0; i < BCUDP_CHUNK; i++)
				chunk[i] = pattern(written + i);
			if (bcudp_send_write(&tx, chunk, BCUDP_CHUNK) < 0)
				break;
			written += BCUDP_CHUNK;
		}
		struct bcudp_tx t;
		while (bcudp_send_next(&tx, now, &t) == 0) {
			int n = bcudp_write_data(7, t.id, t.data, t.len, dgram, sizeof dgram);
			net_send(now, 0, dgram, (size_t)n);
		}
		/* Deliver what is due, in arrival order. */
		for (size_t i = 0; i < net_count;) {
			struct datagram d = net[i];
			if (d.at > now) {
				i++;
				continue;
			}
			net[i] = net[--net_count];
			CHECK_EQ(bcudp_parse(d.bytes, d.len, &pkt, &reason), 0);
			if (d.to == 0) {
				bcudp_recv_input(&rx, pkt.data.packet_id, pkt.data.payload, pkt.data.len, &reason);
				uint32_t group, last;
				size_t n;
				bcudp_recv_ack(&rx, &group, &last, sack, &n);
				int len = bcudp_write_ack(7, group, last, 0, sack, n, dgram, sizeof dgram);
				net_send(now, 1, dgram, (size_t)len);
				last_ack = now;
			} else {
				CHECK_EQ(bcudp_send_ack(&tx, pkt.ack.group, pkt.ack.last_id, pkt.ack.sack,
							pkt.ack.sack_len, &reason),
					 0);
			}
			free(d.bytes);
		}
		/* The reader drains through the channel and checks every byte. */
		while (bcudp_chan_fill(&chan, &rx) > 0) {
			const uint8_t *data;
			size_t len;
			while (bcudp_chan_pop(&chan, &data, &len) == 0) {
				for (size_t i = 0; i < len; i++)
					mismatches += data[i] != pattern(received + i);
				received += len;
			}
		}
		/* The periodic ACK (every 10 ms). */
		if (now - last_ack >= 10) {
			uint32_t group, last;
			size_t n;
			bcudp_recv_ack(&rx, &group, &last, sack, &n);
			int len = bcudp_write_ack(7, group, last, 0, sack, n, dgram, sizeof dgram);
			net_send(now, 1, dgram, (size_t)len);
			last_ack = now;
		}
	}
	CHECK_EQ(received, total);
	CHECK_EQ(mismatches, 0);
	CHECK_EQ(tx.next_id, PACKETS);
	CHECK_EQ(bcudp_send_inflight(&tx), 0);
	/* The run really went through loss, duplication and retransmission. */
	CHECK(net_dropped > 500);
	CHECK(net_duplicated > 100);
	CHECK(rx.duplicates > 100);
	CHECK(tx.retransmits > 500);
	fprintf(stderr, "lossy channel: %llu ms simulated, %llu dropped, %llu duplicated, %llu retransmits\n",
		(unsigned long long)now, (unsigned long long)net_dropped, (unsigned long long)net_duplicated,
		(unsigned long long)tx.retransmits);
	for (size_t i = 0; i < net_count; i++)
		free(net[i].bytes);
	bcudp_send_free(&tx);
}

int main(void)
{
	RUN(test_recv_in_order_and_duplicates);
	RUN(test_recv_window_ceiling);
	RUN(test_recv_ack_vector);
	RUN(test_send_chunking);
	RUN(test_send_inflight_ceiling);
	RUN(test_send_retransmit_backoff);
	RUN(test_send_ack_processing);
	RUN(test_chan_ceiling);
	RUN(test_lossy_channel);
	return TEST_EXIT();
}
