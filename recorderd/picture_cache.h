/* The cache of thumbnails made by the transcoder (picture.c, decisions 0021 and 0025):
 * JPEGs of events (by event id and revision) and of a stream's keyframes (by stream,
 * recording and fragment: the timeline's hover preview) in memory, most recently used
 * first, the least recently used dropped while the bytes held are above the cap; a
 * sweep drops the entries whose event or keyframe the catalog no longer has. Pure; one
 * thread. */
#ifndef KP_REC_PICTURE_CACHE_H
#define KP_REC_PICTURE_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "catalog_events.h"

/* An event's picture (id set) or a keyframe's (id empty). */
struct rec_pkey {
	char id[CAT_EVENT_ID_MAX + 1];
	uint32_t revision;
	uint32_t stream_id; /* catalog_keys.h */
	uint64_t recording_id;
	uint32_t seq; /* the keyframe's fragment */
};

struct rec_pcache_entry;

struct rec_pcache {
	size_t cap; /* bytes; set before the first put */
	size_t bytes, entries;
	uint64_t evicted, purged;
	struct rec_pcache_entry *head, *tail;
};

/* The JPEG of k, now the most recently used, or NULL; valid until the next put or sweep. */
const uint8_t *rec_pcache_get(struct rec_pcache *c, const struct rec_pkey *k, size_t *ret_len);
/* Keeps a copy (nothing when it is larger than the cap, already kept, or out of
 * memory), then drops the least recently used while above the cap. */
void rec_pcache_put(struct rec_pcache *c, const struct rec_pkey *k, const uint8_t *jpeg, size_t len);
/* Drops every entry keep() answers 0 for (counted in purged); returns how many. */
size_t rec_pcache_sweep(struct rec_pcache *c, int (*keep)(void *arg, const struct rec_pkey *k), void *arg);
void rec_pcache_clear(struct rec_pcache *c);

#endif
