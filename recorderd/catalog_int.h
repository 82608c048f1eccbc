/* Inside the catalog: the sub-database table and the LMDB helpers that catalog.c and
 * catalog_events.c share. Nothing outside these two files includes this header. */
#ifndef KP_REC_CATALOG_INT_H
#define KP_REC_CATALOG_INT_H

#include <limits.h>
#include <lmdb.h>
#include <stddef.h>

#include "catalog.h"

enum {
	DB_META,
	DB_CAMERAS,
	DB_STREAMS,
	DB_RECORDINGS,
	DB_REC_BY_STREAM,
	DB_FRAGMENTS,
	DB_KEYFRAMES,
	DB_EVENTS,
	DB_EVENTS_BY_TIME,
	DB_COVERAGE,
	DB_EVENTS_BY_CAMERA,
	DB_EVENT_TERMS,
	DB_EVENT_KEYFRAMES,
	DB_TIER,
	DB_TIER_DELETES,
	DB_COUNT
};

struct cat {
	MDB_env *env;
	MDB_dbi dbi[DB_COUNT];
};

struct cat_txn {
	struct cat *c;
	MDB_txn *txn;
};

/* LMDB's return codes as -errno (MDB_NOTFOUND -ENOENT, MDB_MAP_FULL -ENOSPC). */
int cat_map_err(int rc);
/* A fixed-size value; -EBADMSG when the stored size differs. */
int cat_db_get(struct cat_txn *t, int db, const void *k, size_t klen, void *out, size_t olen);
int cat_db_put(struct cat_txn *t, int db, const void *k, size_t klen, const void *d, size_t dlen);
/* Absent keys are not an error. */
int cat_db_del(struct cat_txn *t, int db, const void *k, size_t klen);

/* A visitor's "past the range": the walk ends and reports success. */
#define CAT_WALK_END INT_MIN

/* Visits db's entries in key order from start (from the first entry when start is NULL)
 * until visit returns non-zero: CAT_WALK_END ends the walk with 0, anything else is
 * returned. */
int cat_db_walk(struct cat_txn *t, int db, const void *start, size_t start_len,
		int (*visit)(void *ctx, const MDB_val *key, const MDB_val *v), void *ctx);
/* The same backwards, from the last entry before start (the last one when NULL). */
int cat_db_walk_back(struct cat_txn *t, int db, const void *start, size_t start_len,
		     int (*visit)(void *ctx, const MDB_val *key, const MDB_val *v), void *ctx);

#endif
