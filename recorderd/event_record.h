/* Event records: events/<hh>/<id>-<rev>.ev, next to the revision's JPEG, what a
 * rebuild of the catalog needs of a stored event revision (the EventRecord as stored,
 * with its camera name, times, labels, boxes, attributes and committed_ms). The commit
 * thread writes and syncs it with the JPEG before the transaction that stores the
 * revision (jobs.c); it goes with the revision's JPEG when the revision is replaced,
 * deleted or expires. Layout: "KPEV", format version, length and CRC-32 of what follows
 * (little-endian u32 each), then the EventRecord (nanopb). Decision:
 * docs/decisions/0003-catalog-rebuild.md. */
#ifndef KP_REC_EVENT_RECORD_H
#define KP_REC_EVENT_RECORD_H

#include <stddef.h>
#include <stdint.h>

#include "keeppeek.pb.h"

#define REC_EVENT_RECORD_HEADER 16
#define REC_EVENT_RECORD_MAX    (REC_EVENT_RECORD_HEADER + kp_EventRecord_size)

struct cat;

/* CRC-32 (IEEE 802.3, as zlib's crc32), of the records and of the event log's items. */
uint32_t rec_crc32(const uint8_t *p, size_t n);
uint32_t rec_crc32_update(uint32_t crc, const uint8_t *p, size_t n);

int rec_event_record_encode(const kp_EventRecord *ev, uint8_t *out, size_t cap, size_t *ret_len);
/* -EBADMSG when buf is not a whole record (torn, foreign, damaged). */
int rec_event_record_decode(const uint8_t *buf, size_t len, kp_EventRecord *ret);

/* Writes the record of ev to path (relative to data_dirfd; its directory exists)
 * without syncing; the descriptor is returned for the caller to fdatasync and close. */
int rec_event_record_create(int data_dirfd, const char *path, const kp_EventRecord *ev, int *ret_fd);
/* Writes and syncs the record of ev where rec_event_record_path puts it, with its
 * directory entry (keeppeekctl check --repair, for a record that is missing). */
int rec_event_record_store(int data_dirfd, const kp_EventRecord *ev);
/* Reads and decodes the record at path. */
int rec_event_record_read(int data_dirfd, const char *path, kp_EventRecord *ret);

/* Records for the events a catalog stored before records existed (once per catalog:
 * meta/event_records is then 1). Runs on a thread of its own while recording and
 * publication go on; a record it wrote for a revision replaced or deleted meanwhile
 * is removed again. rec_event_records_backfill_stop waits for it. */
struct rec_backfill;
int rec_event_records_backfill_start(struct cat *cat, int data_dirfd, struct rec_backfill **ret);
void rec_event_records_backfill_stop(struct rec_backfill *b);

#endif
