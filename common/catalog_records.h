/* recorderd's answers as records (proto/keeppeek.proto, CatalogReply): CatalogRecord
 * messages, each preceded by its length as a varint. recorderd appends them to a buffer
 * bounded by a ceiling and sends it in pieces cut between records (catrec_piece); webd
 * reads one piece at a time (catrec_each), so no record spans two. Decision 0013. */
#ifndef KP_CATALOG_RECORDS_H
#define KP_CATALOG_RECORDS_H

#include <stddef.h>
#include <stdint.h>

#include "keeppeek.pb.h"

struct catrec_buf {
	uint8_t *p;
	size_t len, cap, max;
	int failed; /* past max or out of memory: nothing more is kept */
};

void catrec_init(struct catrec_buf *b, size_t max);
void catrec_free(struct catrec_buf *b);
/* Empties b (no records, no failure) and keeps its memory for the next records. */
void catrec_reset(struct catrec_buf *b);
/* Appends rec: 0, or -E2BIG (past the ceiling), -ENOMEM, -EINVAL (does not encode);
 * any failure is sticky. */
int catrec_add(struct catrec_buf *b, const kp_CatalogRecord *rec);
/* The length of the longest run of whole records in p[off..len) of at most piece bytes
 * (one record, whole, when the first alone is larger). */
size_t catrec_piece(const uint8_t *p, size_t len, size_t off, size_t piece);
/* Decodes the records of p[0..len) in order into *rec, handing each to cb: 0, cb's
 * first nonzero return, or -EBADMSG when a record does not read. */
int catrec_each(const uint8_t *p, size_t len, kp_CatalogRecord *rec, int (*cb)(void *arg, const kp_CatalogRecord *rec),
		void *arg);

#endif
