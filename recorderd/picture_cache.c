/* The thumbnail cache (see picture_cache.h). */
#include "picture_cache.h"

#include <stdlib.h>
#include <string.h>

struct rec_pcache_entry {
	struct rec_pcache_entry *prev, *next;
	struct rec_pkey key;
	uint8_t *jpeg;
	size_t len;
};

static void unlink_entry(struct rec_pcache *c, struct rec_pcache_entry *e)
{
	if (e->prev)
		e->prev->next = e->next;
	else
		c->head = e->next;
	if (e->next)
		e->next->prev = e->prev;
	else
		c->tail = e->prev;
}

static void push_front(struct rec_pcache *c, struct rec_pcache_entry *e)
{
	e->prev = NULL;
	e->next = c->head;
	if (c->head)
		c->head->prev = e;
	c->head = e;
	if (!c->tail)
		c->tail = e;
}

static void drop(struct rec_pcache *c, struct rec_pcache_entry *e)
{
	unlink_entry(c, e);
	c->bytes -= e->len;
	c->entries--;
	free(e->jpeg);
	free(e);
}

static int same(const struct rec_pkey *a, const struct rec_pkey *b)
{
	return a->revision == b->revision && a->stream_id == b->stream_id && a->recording_id == b->recording_id &&
	       a->seq == b->seq && !strcmp(a->id, b->id);
}

const uint8_t *rec_pcache_get(struct rec_pcache *c, const struct rec_pkey *k, size_t *ret_len)
{
	for (struct rec_pcache_entry *e = c->head; e; e = e->next)
		if (same(&e->key, k)) {
			unlink_entry(c, e);
			push_front(c, e);
			*ret_len = e->len;
			return e->jpeg;
		}
	return NULL;
}

void rec_pcache_put(struct rec_pcache *c, const struct rec_pkey *k, const uint8_t *jpeg, size_t len)
{
	size_t had;
	if (len > c->cap || !memchr(k->id, 0, sizeof k->id) || rec_pcache_get(c, k, &had))
		return;
	struct rec_pcache_entry *e = calloc(1, sizeof *e);
	uint8_t *copy = e ? malloc(len ? len : 1) : NULL;
	if (!copy) {
		free(e);
		return; /* not kept: made again next time */
	}
	memcpy(copy, jpeg, len);
	e->key = *k;
	e->jpeg = copy;
	e->len = len;
	push_front(c, e);
	c->bytes += len;
	c->entries++;
	while (c->bytes > c->cap && c->tail) {
		drop(c, c->tail);
		c->evicted++;
	}
}

size_t rec_pcache_sweep(struct rec_pcache *c, int (*keep)(void *arg, const struct rec_pkey *k), void *arg)
{
	size_t n = 0;
	for (struct rec_pcache_entry *e = c->head, *next; e; e = next) {
		next = e->next;
		if (!keep(arg, &e->key)) {
			drop(c, e);
			n++;
		}
	}
	c->purged += n;
	return n;
}

void rec_pcache_clear(struct rec_pcache *c)
{
	while (c->head)
		drop(c, c->head);
}
