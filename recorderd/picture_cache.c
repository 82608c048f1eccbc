/* The event thumbnail cache (see picture_cache.h). */
#include "picture_cache.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog_events.h"

struct rec_pcache_entry {
	struct rec_pcache_entry *prev, *next;
	char id[CAT_EVENT_ID_MAX + 1];
	uint32_t revision;
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

const uint8_t *rec_pcache_get(struct rec_pcache *c, const char *id, uint32_t revision, size_t *ret_len)
{
	for (struct rec_pcache_entry *e = c->head; e; e = e->next)
		if (e->revision == revision && !strcmp(e->id, id)) {
			unlink_entry(c, e);
			push_front(c, e);
			*ret_len = e->len;
			return e->jpeg;
		}
	return NULL;
}

void rec_pcache_put(struct rec_pcache *c, const char *id, uint32_t revision, const uint8_t *jpeg, size_t len)
{
	size_t had;
	if (len > c->cap || strlen(id) > CAT_EVENT_ID_MAX || rec_pcache_get(c, id, revision, &had))
		return;
	struct rec_pcache_entry *e = calloc(1, sizeof *e);
	uint8_t *copy = e ? malloc(len ? len : 1) : NULL;
	if (!copy) {
		free(e);
		return; /* not kept: made again next time */
	}
	memcpy(copy, jpeg, len);
	snprintf(e->id, sizeof e->id, "%s", id);
	e->revision = revision;
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

void rec_pcache_clear(struct rec_pcache *c)
{
	while (c->head)
		drop(c, c->head);
}
