/* The cache of event thumbnails made by the transcoder (picture.c, decision 0021): JPEGs
 * by event id and revision in memory, most recently used first, the least recently used
 * dropped while the bytes held are above the cap. Pure; one thread. */
#ifndef KP_REC_PICTURE_CACHE_H
#define KP_REC_PICTURE_CACHE_H

#include <stddef.h>
#include <stdint.h>

struct rec_pcache_entry;

struct rec_pcache {
	size_t cap; /* bytes; set before the first put */
	size_t bytes, entries;
	uint64_t evicted;
	struct rec_pcache_entry *head, *tail;
};

/* The JPEG of (id, revision), now the most recently used, or NULL; valid until the next
 * put. */
const uint8_t *rec_pcache_get(struct rec_pcache *c, const char *id, uint32_t revision, size_t *ret_len);
/* Keeps a copy (nothing when it is larger than the cap, already kept, or out of
 * memory), then drops the least recently used while above the cap. */
void rec_pcache_put(struct rec_pcache *c, const char *id, uint32_t revision, const uint8_t *jpeg, size_t len);
void rec_pcache_clear(struct rec_pcache *c);

#endif
