/* A structural check of the catalog's LMDB data file made with pread(2) only, never
 * through a mapping, so that a damaged file is reported instead of crashing whoever
 * reads it: LMDB maps the file and trusts it, and a page past the end of a truncated
 * file is a SIGBUS, a zeroed or overwritten page an assertion or a wild read. Checked:
 * both meta pages (as LMDB itself does at open); then every tree the newest meta names
 * (the main tree, each named sub-database, the free-page list), page by page from its
 * root: each page lies inside the file, carries its own number, is a branch above the
 * tree's depth and a leaf at it, has sane bounds and nodes that fit, is reached once;
 * overflow runs fit and are reached once; the counts of branch, leaf and overflow pages
 * and of entries equal those the tree's record holds; free pages are in range and none
 * is also in use. The LMDB 0.9 on-disk format (data version 1, 64-bit) is read directly:
 * the layout is fixed by that version. Decision and numbers: docs/decisions/0003-catalog-rebuild.md. */
#ifndef KP_REC_CATALOG_VERIFY_H
#define KP_REC_CATALOG_VERIFY_H

#include <stdint.h>

struct cat_verify_report {
	uint64_t file_bytes;
	uint32_t page_size;
	uint64_t txnid;      /* of the meta page checked */
	uint64_t last_page;  /* the last page that meta says is in use */
	uint64_t pages;      /* pages reached from it */
	uint64_t tail_pages; /* of those, overflow pages after the first of their run: value bytes only */
	uint64_t entries;    /* entries in every tree */
	/* The first problem found, naming the page and what is wrong with it; empty when
	 * none. Short enough to quote in a status line. */
	char why[120];
};

/* Checks the data file open as fd. want_txnid 0: the newest meta page, as LMDB would
 * open it; otherwise the meta page of that transaction (a reader's snapshot, whose pages
 * LMDB does not reuse while the reader lives), -EAGAIN when neither meta page has it
 * any more. 0: sound; -EBADMSG: damaged (why says how); -ENODATA: the file is empty
 * (LMDB would silently start a new catalog in it); -ENOTSUP: not a 64-bit build (the
 * layout read here is the 64-bit one; nothing was checked); another -errno: reading
 * failed. */
int cat_verify_fd(int fd, uint64_t want_txnid, struct cat_verify_report *ret);

/* The same for a file by path; -ENOENT when it does not exist. */
int cat_verify_file(const char *path, struct cat_verify_report *ret);

#endif
