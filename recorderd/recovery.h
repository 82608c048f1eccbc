/* Start-up recovery, before the first new byte is written: every recording the catalog
 * still marks open gets its complete trailing fragments indexed and a partial one
 * truncated; a file newer than its stream's newest catalogued recording (created just
 * before a crash) is indexed the same way, or removed when it holds no complete
 * fragment; other files the catalog does not know (left by retention between its commit
 * and the unlink) are removed. Media are fdatasync'ed before the transaction that
 * indexes them. */
#ifndef KP_REC_RECOVERY_H
#define KP_REC_RECOVERY_H

#include <stdint.h>

struct cat;

struct rec_recovery_result {
	unsigned files_checked;
	unsigned fragments_indexed;
	unsigned files_truncated;
	unsigned files_removed;
	unsigned rows_removed; /* recordings whose file was missing */
};

int rec_recover(struct cat *cat, int data_dirfd, struct rec_recovery_result *ret);

/* Indexes the complete fragments of the file at data_dirfd/rec->path from rec->bytes on
 * and truncates what follows them, within transaction t (rec->id and the timing fields
 * must be set; a recording not yet in the catalog is created). Exposed for unit tests. */
struct cat_txn;
struct cat_recording;
int rec_recover_file(struct cat_txn *t, int data_dirfd, const struct cat_recording *rec, unsigned *ret_fragments,
		     int *ret_truncated);
/* The same; without truncate the file is only read: indexing stops at the first bytes
 * that are not a complete fragment, which stay (a rebuild of the catalog, rebuild.h). */
int rec_index_file(struct cat_txn *t, int data_dirfd, const struct cat_recording *rec, int truncate,
		   unsigned *ret_fragments, int *ret_truncated);

#endif
