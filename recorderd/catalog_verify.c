/* Structural check of an LMDB data file without mapping it (see catalog_verify.h). The
 * offsets below are those of LMDB 0.9's mdb.c (MDB_page, MDB_meta, MDB_db, MDB_node) on
 * a 64-bit host: data version 1. */
#include "catalog_verify.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define LMDB_MAGIC        0xBEEFC0DEu
#define LMDB_DATA_VERSION 1
#define NUM_METAS         2
#define PAGEHDRSZ         16 /* pgno (8), pad (2), flags (2), lower (2), upper (2) */
#define NODESIZE          8  /* lo (2), hi (2), flags (2), ksize (2) */
#define DB_SIZE           48 /* MDB_db */
#define META_SIZE         (PAGEHDRSZ + 136)
#define P_INVALID         UINT64_MAX
#define MAX_DEPTH         32 /* LMDB's CURSOR_STACK */
#define MAX_PAGES         (1ull << 32)

/* Page flags */
#define P_BRANCH   0x01
#define P_LEAF     0x02
#define P_OVERFLOW 0x04
#define P_META     0x08
#define P_LEAF2    0x20
#define P_SUBP     0x40
#define P_TYPES    (P_BRANCH | P_LEAF | P_OVERFLOW | P_META | P_LEAF2 | P_SUBP)

/* Node flags */
#define F_BIGDATA 0x01
#define F_SUBDATA 0x02

/* Offsets in a meta page: MDB_meta after the page header. */
#define M_MAGIC   16
#define M_VERSION 20
#define M_MAPSIZE 32
#define M_FREE_DB 40
#define M_MAIN_DB 88
#define M_LAST_PG 136
#define M_TXNID   144

struct db {
	uint32_t pad; /* the page size, in the free tree's record of a meta page */
	uint16_t flags, depth;
	uint64_t branch, leaf, overflow, entries, root;
};

struct counts {
	uint64_t branch, leaf, overflow, entries;
};

struct ctx {
	int fd;
	uint64_t size;
	uint32_t psize;
	uint64_t npages;
	uint8_t *seen;  /* pages reached, a bit each */
	uint8_t *freed; /* pages the free list names */
	uint8_t *buf[2 * MAX_DEPTH + 1];
	int level;
	const char *tree; /* for messages */
	char tree_name[40];
	struct cat_verify_report *rep;
};

static uint16_t u16_at(const uint8_t *p, size_t off)
{
	uint16_t v;
	memcpy(&v, p + off, sizeof v);
	return v;
}

static uint32_t u32_at(const uint8_t *p, size_t off)
{
	uint32_t v;
	memcpy(&v, p + off, sizeof v);
	return v;
}

static uint64_t u64_at(const uint8_t *p, size_t off)
{
	uint64_t v;
	memcpy(&v, p + off, sizeof v);
	return v;
}

static struct db db_at(const uint8_t *p, size_t off)
{
	return (struct db){.pad = u32_at(p, off),
			   .flags = u16_at(p, off + 4),
			   .depth = u16_at(p, off + 6),
			   .branch = u64_at(p, off + 8),
			   .leaf = u64_at(p, off + 16),
			   .overflow = u64_at(p, off + 24),
			   .entries = u64_at(p, off + 32),
			   .root = u64_at(p, off + 40)};
}

static int bad(struct ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int bad(struct ctx *c, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(c->rep->why, sizeof c->rep->why, fmt, ap);
	va_end(ap);
	return -EBADMSG;
}

static int read_full(int fd, uint8_t *buf, size_t len, uint64_t off, size_t *ret_n)
{
	size_t got = 0;
	while (got < len) {
		ssize_t r = pread(fd, buf + got, len - got, (off_t)(off + got));
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			break;
		got += (size_t)r;
	}
	*ret_n = got;
	return 0;
}

static int bit(const uint8_t *map, uint64_t i)
{
	return map[i >> 3] >> (i & 7) & 1;
}

static void set_bit(uint8_t *map, uint64_t i)
{
	map[i >> 3] |= (uint8_t)(1u << (i & 7));
}

/* Reads page pgno into the buffer of the current level: it must be one the meta page
 * counts, lie inside the file and carry its own number. */
static int read_page(struct ctx *c, uint64_t pgno, uint64_t from, uint8_t **ret)
{
	if (pgno < NUM_METAS || pgno >= c->npages)
		return bad(c, "%s: page %llu names page %llu, outside the %llu pages in use", c->tree,
			   (unsigned long long)from, (unsigned long long)pgno, (unsigned long long)c->npages);
	if ((pgno + 1) * c->psize > c->size)
		return bad(c, "truncated: page %llu of %s lies past the end of the file (%llu bytes)",
			   (unsigned long long)pgno, c->tree, (unsigned long long)c->size);
	uint8_t *p = c->buf[c->level];
	if (!p) {
		p = c->buf[c->level] = malloc(c->psize);
		if (!p)
			return -ENOMEM;
	}
	size_t n;
	int r = read_full(c->fd, p, c->psize, pgno * c->psize, &n);
	if (r < 0)
		return r;
	if (n < c->psize)
		return bad(c, "truncated: page %llu of %s ends past the end of the file", (unsigned long long)pgno,
			   c->tree);
	if (u64_at(p, 0) != pgno)
		return bad(c, "page %llu of %s carries the number %llu (zeroed or overwritten)",
			   (unsigned long long)pgno, c->tree, (unsigned long long)u64_at(p, 0));
	*ret = p;
	return 0;
}

static int reach(struct ctx *c, uint64_t pgno, uint64_t from)
{
	if (bit(c->seen, pgno))
		return bad(c, "%s: page %llu is reached twice (again from page %llu)", c->tree,
			   (unsigned long long)pgno, (unsigned long long)from);
	set_bit(c->seen, pgno);
	c->rep->pages++;
	return 0;
}

/* An overflow run holding dsz bytes of the node on page from; with want, its bytes are
 * read into a malloc'ed *want. */
static int overflow(struct ctx *c, uint64_t pgno, uint64_t from, uint64_t dsz, struct counts *n, uint8_t **want)
{
	c->level++;
	uint8_t *p;
	int r = read_page(c, pgno, from, &p);
	c->level--;
	if (r < 0)
		return r;
	uint32_t pages = u32_at(p, 12);
	uint64_t need = (PAGEHDRSZ - 1 + dsz) / c->psize + 1;
	if ((u16_at(p, 10) & P_TYPES) != P_OVERFLOW)
		return bad(c, "%s: page %llu should be an overflow page, its flags are 0x%x", c->tree,
			   (unsigned long long)pgno, u16_at(p, 10));
	if (pages < need || pgno + pages > c->npages)
		return bad(c, "%s: overflow page %llu spans %u pages; its %llu bytes need %llu, and %llu are in use",
			   c->tree, (unsigned long long)pgno, pages, (unsigned long long)dsz, (unsigned long long)need,
			   (unsigned long long)c->npages);
	if ((pgno + pages) * c->psize > c->size)
		return bad(c, "truncated: the overflow pages %llu-%llu of %s end past the end of the file (%llu bytes)",
			   (unsigned long long)pgno, (unsigned long long)(pgno + pages - 1), c->tree,
			   (unsigned long long)c->size);
	for (uint64_t i = 0; i < pages; i++) {
		r = reach(c, pgno + i, from);
		if (r < 0)
			return r;
	}
	n->overflow += pages;
	c->rep->tail_pages += pages - 1;
	if (!want)
		return 0;
	*want = malloc(dsz ? dsz : 1);
	if (!*want)
		return -ENOMEM;
	size_t got;
	r = read_full(c->fd, *want, dsz, pgno * c->psize + PAGEHDRSZ, &got);
	if (r == 0 && got < dsz)
		r = bad(c, "truncated: overflow page %llu of %s", (unsigned long long)pgno, c->tree);
	if (r < 0) {
		free(*want);
		*want = NULL;
	}
	return r;
}

/* The free list's record: a count, then that many page numbers. */
static int free_ids(struct ctx *c, const uint8_t *d, uint64_t dsz, uint64_t from)
{
	if (dsz < 8 || dsz % 8 || u64_at(d, 0) != dsz / 8 - 1)
		return bad(c, "the free-page list: a record on page %llu is malformed", (unsigned long long)from);
	for (uint64_t i = 1; i < dsz / 8; i++) {
		uint64_t pg = u64_at(d, i * 8);
		if (pg < NUM_METAS || pg >= c->npages)
			return bad(c, "the free-page list names page %llu, outside the %llu pages in use",
				   (unsigned long long)pg, (unsigned long long)c->npages);
		if (bit(c->freed, pg))
			return bad(c, "the free-page list names page %llu twice", (unsigned long long)pg);
		set_bit(c->freed, pg);
	}
	return 0;
}

static int walk_db(struct ctx *c, const struct db *db, int kind);

enum { TREE_MAIN, TREE_FREE, TREE_SUB };

static int leaf_node(struct ctx *c, uint64_t pgno, const uint8_t *node, size_t room, int kind, struct counts *n)
{
	uint16_t flags = u16_at(node, 4), ksize = u16_at(node, 6);
	uint64_t dsz = u16_at(node, 0) | (uint64_t)u16_at(node, 2) << 16;
	if (flags & ~(F_BIGDATA | F_SUBDATA) || (flags & F_BIGDATA && flags & F_SUBDATA))
		return bad(c, "%s: page %llu has a node with flags 0x%x this catalog never writes", c->tree,
			   (unsigned long long)pgno, flags);
	uint64_t inline_len = flags & F_BIGDATA ? 8 : dsz;
	if (NODESIZE + ksize + inline_len > room)
		return bad(c, "%s: page %llu has a node that does not fit in the page", c->tree,
			   (unsigned long long)pgno);
	n->entries++;
	const uint8_t *data = node + NODESIZE + ksize;
	if (flags & F_SUBDATA) {
		if (kind != TREE_MAIN || dsz != DB_SIZE)
			return bad(c, "%s: page %llu has a sub-database record where none can be", c->tree,
				   (unsigned long long)pgno);
		/* The sub-database's pages go into the buffers above this level: this page stays. */
		struct db sub = db_at(data, 0);
		const char *saved = c->tree;
		snprintf(c->tree_name, sizeof c->tree_name, "sub-database '%.*s'", ksize < 24 ? ksize : 24,
			 (const char *)(node + NODESIZE));
		c->tree = c->tree_name;
		c->level++;
		int r = walk_db(c, &sub, TREE_SUB);
		c->level--;
		c->tree = saved;
		return r;
	}
	uint8_t *big = NULL;
	if (flags & F_BIGDATA) {
		int r = overflow(c, u64_at(data, 0), pgno, dsz, n, kind == TREE_FREE ? &big : NULL);
		if (r < 0)
			return r;
		data = big;
	}
	int r = kind == TREE_FREE ? free_ids(c, data, dsz, pgno) : 0;
	free(big);
	return r;
}

static int walk_page(struct ctx *c, uint64_t pgno, uint64_t from, unsigned depth, unsigned max_depth, int kind,
		     struct counts *n)
{
	uint8_t *p;
	int r = read_page(c, pgno, from, &p);
	if (r == 0)
		r = reach(c, pgno, from);
	if (r < 0)
		return r;
	uint16_t type = u16_at(p, 10) & P_TYPES, lower = u16_at(p, 12), upper = u16_at(p, 14);
	uint16_t want = depth < max_depth ? P_BRANCH : P_LEAF;
	if (type != want)
		return bad(c, "page %llu of %s should be a %s page at depth %u of %u, its flags are 0x%x",
			   (unsigned long long)pgno, c->tree, want == P_LEAF ? "leaf" : "branch", depth, max_depth,
			   u16_at(p, 10));
	if (lower < PAGEHDRSZ + 2 || (lower - PAGEHDRSZ) % 2 || lower > upper || upper > c->psize)
		return bad(c, "page %llu of %s has bounds %u-%u that cannot be", (unsigned long long)pgno, c->tree,
			   lower, upper);
	unsigned keys = (lower - PAGEHDRSZ) / 2;
	if (want == P_BRANCH)
		n->branch++;
	else
		n->leaf++;
	for (unsigned i = 0; i < keys; i++) {
		uint16_t off = u16_at(p, PAGEHDRSZ + 2 * i);
		if (off < upper || off % 2 || (size_t)off + NODESIZE > c->psize)
			return bad(c, "page %llu of %s has a node at offset %u, outside its node area %u-%u",
				   (unsigned long long)pgno, c->tree, off, upper, c->psize);
		const uint8_t *node = p + off;
		size_t room = c->psize - off;
		if (want == P_LEAF) {
			r = leaf_node(c, pgno, node, room, kind, n);
		} else {
			if (NODESIZE + (size_t)u16_at(node, 6) > room)
				return bad(c, "page %llu of %s has a node that does not fit in the page",
					   (unsigned long long)pgno, c->tree);
			uint64_t child =
			    u16_at(node, 0) | (uint64_t)u16_at(node, 2) << 16 | (uint64_t)u16_at(node, 4) << 32;
			c->level++;
			r = walk_page(c, child, pgno, depth + 1, max_depth, kind, n);
			c->level--;
		}
		if (r < 0)
			return r;
	}
	return 0;
}

static int walk_db(struct ctx *c, const struct db *db, int kind)
{
	struct counts n = {0};
	if (db->root == P_INVALID) {
		if (db->depth || db->entries || db->branch || db->leaf || db->overflow)
			return bad(c, "%s is empty but its record counts %llu entries", c->tree,
				   (unsigned long long)db->entries);
		return 0;
	}
	if (!db->depth || db->depth > MAX_DEPTH || c->level + db->depth + 1 >= 2 * MAX_DEPTH)
		return bad(c, "%s has a depth of %u", c->tree, db->depth);
	int r = walk_page(c, db->root, db->root, 1, db->depth, kind, &n);
	if (r < 0)
		return r;
	if (n.branch != db->branch || n.leaf != db->leaf || n.overflow != db->overflow || n.entries != db->entries)
		return bad(c,
			   "%s: %llu entries on %llu branch, %llu leaf, %llu overflow pages; its record says %llu on "
			   "%llu, %llu, %llu",
			   c->tree, (unsigned long long)n.entries, (unsigned long long)n.branch,
			   (unsigned long long)n.leaf, (unsigned long long)n.overflow, (unsigned long long)db->entries,
			   (unsigned long long)db->branch, (unsigned long long)db->leaf,
			   (unsigned long long)db->overflow);
	c->rep->entries += n.entries;
	return 0;
}

/* Both meta pages must be sound (LMDB refuses the file otherwise); the one to check is
 * the newest, or that of want_txnid. */
static int read_metas(struct ctx *c, uint64_t want_txnid, uint8_t *ret_meta)
{
	uint8_t m[NUM_METAS][META_SIZE];
	uint64_t off = 0;
	int pick = -1;
	for (int i = 0; i < NUM_METAS; i++) {
		size_t got;
		int r = read_full(c->fd, m[i], META_SIZE, off, &got);
		if (r < 0)
			return r;
		if (got == 0 && i == 0)
			return -ENODATA;
		if (got < META_SIZE)
			return bad(c, "truncated to %llu bytes: meta page %d is incomplete",
				   (unsigned long long)c->size, i);
		if (!(u16_at(m[i], 10) & P_META) || u32_at(m[i], M_MAGIC) != LMDB_MAGIC)
			return bad(c, "meta page %d is not an LMDB meta page (zeroed or overwritten)", i);
		if (u32_at(m[i], M_VERSION) != LMDB_DATA_VERSION)
			return bad(c, "meta page %d has LMDB data version %u, not %u", i, u32_at(m[i], M_VERSION),
				   LMDB_DATA_VERSION);
		uint32_t psize = u32_at(m[i], M_FREE_DB);
		if (psize < 512 || psize > 32768 || (psize & (psize - 1)))
			return bad(c, "meta page %d has a page size of %u", i, psize);
		if (i == 0)
			c->psize = psize;
		else if (psize != c->psize)
			return bad(c, "the meta pages disagree on the page size (%u, %u)", c->psize, psize);
		off += psize;
		uint64_t txnid = u64_at(m[i], M_TXNID);
		if (want_txnid ? txnid == want_txnid : pick < 0 || txnid > u64_at(m[pick], M_TXNID))
			pick = i;
	}
	if (pick < 0)
		return -EAGAIN;
	memcpy(ret_meta, m[pick], META_SIZE);
	return 0;
}

int cat_verify_fd(int fd, uint64_t want_txnid, struct cat_verify_report *ret)
{
	struct cat_verify_report rep = {0};
	if (sizeof(size_t) != 8) { /* LMDB's page numbers and counts are size_t: another layout */
		*ret = rep;
		return -ENOTSUP;
	}
	struct ctx c = {.fd = fd, .rep = &rep};
	struct stat st;
	if (fstat(fd, &st) < 0)
		return -errno;
	c.size = rep.file_bytes = (uint64_t)st.st_size;
	uint8_t meta[META_SIZE] = {0};
	int r = read_metas(&c, want_txnid, meta);
	if (r < 0)
		goto out;
	rep.page_size = c.psize;
	rep.txnid = u64_at(meta, M_TXNID);
	rep.last_page = u64_at(meta, M_LAST_PG);
	uint64_t mapsize = u64_at(meta, M_MAPSIZE);
	c.npages = rep.last_page + 1;
	if (c.npages < NUM_METAS || c.npages > MAX_PAGES ||
	    (c.npages * c.psize > mapsize && c.npages * c.psize > c.size)) {
		r = bad(&c, "the meta page counts %llu pages of %u bytes, more than its map (%llu bytes) holds",
			(unsigned long long)c.npages, c.psize, (unsigned long long)mapsize);
		goto out;
	}
	if (c.size < (uint64_t)NUM_METAS * c.psize) {
		r = bad(&c, "truncated to %llu bytes: shorter than its two meta pages", (unsigned long long)c.size);
		goto out;
	}
	c.seen = calloc(1, c.npages / 8 + 1);
	c.freed = calloc(1, c.npages / 8 + 1);
	if (!c.seen || !c.freed) {
		r = -ENOMEM;
		goto out;
	}
	set_bit(c.seen, 0);
	set_bit(c.seen, 1);
	struct db free_db = db_at(meta, M_FREE_DB), main_db = db_at(meta, M_MAIN_DB);
	free_db.pad = 0;
	c.tree = "the free-page list";
	r = walk_db(&c, &free_db, TREE_FREE);
	if (r == 0) {
		c.tree = "the main tree";
		r = walk_db(&c, &main_db, TREE_MAIN);
	}
	for (uint64_t i = NUM_METAS; r == 0 && i < c.npages; i++)
		if (bit(c.seen, i) && bit(c.freed, i))
			r = bad(&c, "page %llu is in use and listed as free", (unsigned long long)i);
out:
	for (size_t i = 0; i < sizeof c.buf / sizeof c.buf[0]; i++)
		free(c.buf[i]);
	free(c.seen);
	free(c.freed);
	*ret = rep;
	return r;
}

int cat_verify_file(const char *path, struct cat_verify_report *ret)
{
	memset(ret, 0, sizeof *ret);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int r = cat_verify_fd(fd, 0, ret);
	close(fd);
	return r;
}
