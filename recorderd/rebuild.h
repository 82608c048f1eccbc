/* The catalog against what is on disk: whether data_dir/catalog may be opened at all
 * (before LMDB maps it), and rebuilding it from the files when it may not. Decision:
 * docs/decisions/0002-catalog-rebuild.md. */
#ifndef KP_REC_REBUILD_H
#define KP_REC_REBUILD_H

#include <stddef.h>

/* The catalog environment, relative to data_dir. */
#define REC_CATALOG_DIR "catalog"

/* Whether the catalog's data file may be handed to LMDB: 0 when it is sound, or absent
 * while the data directory holds no recording or event file (a new catalog). Otherwise
 * why gets the reason (a phrase naming the file) and: -EBADMSG damaged (truncated,
 * zeroed or overwritten pages: catalog_verify.h); -ENOENT absent, or -ENODATA empty,
 * while recordings or events are on disk (a new catalog would know none of them, and
 * start-up recovery and the event sweep would remove them); another -errno when it
 * cannot be read. */
int rec_catalog_assess(int data_dirfd, char *why, size_t cap);

/* Whether data_dir holds a recording file or an event file (1), none (0), or -errno. */
int rec_data_has_files(int data_dirfd);

#endif
