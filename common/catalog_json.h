/* The JSON of recorderd's answers (docs/queries.md), rendered from the CatalogRecord
 * messages recorderd sends (catalog_records.h): coverage, recordings, an event search
 * page, one event (through the one event renderer, event_json.h), a delete's result and
 * a publication's acknowledgement. The asker knows which answer it asked for; records
 * that do not belong to it, or an answer that ends early, are refused. The text goes
 * into a caller-given buffer of at least CATJ_BUF_MIN bytes that the caller empties
 * (catj_take) whenever catj_full says so: memory stays bounded however long the answer. */
#ifndef KP_CATALOG_JSON_H
#define KP_CATALOG_JSON_H

#include <stdbool.h>
#include <stddef.h>

#include "event_json.h"
#include "json.h"
#include "keeppeek.pb.h"

/* Room one record's JSON may take (an event with every character escaped; a coverage
 * stream of 256 ranges and 2,048 buckets takes less than half). */
#define CATJ_RECORD_MAX (KP_EVENT_JSON_MAX + 1024)
#define CATJ_BUF_MIN    (2 * CATJ_RECORD_MAX)

enum catj_kind { CATJ_COVERAGE, CATJ_RECORDINGS, CATJ_SEARCH, CATJ_EVENT, CATJ_DELETE, CATJ_ACK };

struct catj {
	enum catj_kind kind;
	struct json_w w;
	unsigned records;
	bool in_camera; /* coverage: a camera's streams are open */
	bool ended;     /* the answer's last record came */
};

void catj_begin(struct catj *c, enum catj_kind kind, char *buf, size_t cap);
/* 0, or -EBADMSG (a record this answer does not hold, or one after its end), -ENOBUFS. */
int catj_record(struct catj *c, const kp_CatalogRecord *rec);
/* Closes the document: 0, or -EBADMSG when the answer is not whole. */
int catj_end(struct catj *c);
/* The text written and not yet taken. */
const char *catj_text(const struct catj *c, size_t *len);
/* Whether the buffer should be emptied before the next record. */
bool catj_full(const struct catj *c);
void catj_take(struct catj *c);
/* An answer of the kind in one buffer: catj_begin, every record of p[0..len) (the
 * whole tail, in catalog_records.h's framing), catj_end; the JSON's length, or -EBADMSG,
 * -ENOBUFS when it does not fit in cap. */
long catj_render(enum catj_kind kind, const uint8_t *p, size_t len, char *buf, size_t cap);

#endif
