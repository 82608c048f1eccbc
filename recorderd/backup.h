/* keeppeekctl backup, recorderd's part: a consistent, compacted copy of the catalog (one
 * LMDB read transaction: recording and group commits go on) written to the file the
 * supervisor passed, on a thread of its own; one backup at a time. requests.c answers
 * the supervisor with the result. docs/backup.md. */
#ifndef KP_REC_BACKUP_H
#define KP_REC_BACKUP_H

#include <stdint.h>
#include <uv.h>

struct cat;

struct rec_backup_result {
	uint64_t catalog_bytes;
	uint64_t recordings, events; /* rows when the copy began */
	uint64_t ms;
};

/* Called on the loop thread when a copy has ended: 0 and its result, or a negative errno. */
typedef void (*rec_backup_done_fn)(uint32_t id, int err, const struct rec_backup_result *res);

void rec_backup_open(uv_loop_t *loop, struct cat *cat, rec_backup_done_fn done);
/* Takes fd (the empty file to write). -EBUSY while a copy runs (fd is then closed too). */
int rec_backup_start(uint32_t id, int fd);
/* Waits for a running copy (LMDB's cannot be interrupted); before the catalog closes. */
void rec_backup_close(void);

#endif
