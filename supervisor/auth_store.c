/* The credential files: data_dir/auth/users ("NAME ROLE HASH" lines) and
 * data_dir/auth/tokens ("NAME ROLE SHA256-HEX CREATED-MS" lines), mode 0600 in a 0700
 * directory owned by keeppeekd's user, loaded at start and rewritten atomically on every
 * change (docs/auth.md). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "auth_store.h"
#include "kp_io.h"

#define FILE_MAX (256 * 1024)

static const char users_head[] =
    "# keeppeek users: NAME ROLE HASH (keeppeekd writes this file; use keeppeekctl user)\n";
static const char tokens_head[] = "# keeppeek API tokens: NAME ROLE SHA256 CREATED-MS (use keeppeekctl token)\n";

bool auth_name_valid(const char *name)
{
	size_t n = strlen(name);
	if (n == 0 || n > AUTH_NAME_MAX || name[0] == '.' || name[0] == '-')
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = name[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
		      c == '_' || c == '-' || c == '@'))
			return false;
	}
	return true;
}

const char *auth_role_name(kp_Role role)
{
	switch (role) {
	case kp_Role_ROLE_ADMIN:
		return "admin";
	case kp_Role_ROLE_VIEWER:
		return "viewer";
	case kp_Role_ROLE_PUBLISHER:
		return "publisher";
	default:
		return "none";
	}
}

int auth_role_parse(const char *s, kp_Role *ret)
{
	if (!strcmp(s, "admin"))
		*ret = kp_Role_ROLE_ADMIN;
	else if (!strcmp(s, "viewer"))
		*ret = kp_Role_ROLE_VIEWER;
	else if (!strcmp(s, "publisher"))
		*ret = kp_Role_ROLE_PUBLISHER;
	else
		return -EINVAL;
	return 0;
}

/* Our own, and closed to group and others. */
static int check_owner(const struct stat *st, const char *what, char *err, size_t errlen)
{
	if (st->st_uid != geteuid()) {
		snprintf(err, errlen, "%s belongs to uid %u, not to keeppeekd's uid %u; refusing to use it", what,
			 (unsigned)st->st_uid, (unsigned)geteuid());
		return -EPERM;
	}
	if (st->st_mode & 077) {
		snprintf(err, errlen, "%s is open to group or others (mode %03o); refusing to use it", what,
			 (unsigned)(st->st_mode & 0777));
		return -EPERM;
	}
	return 0;
}

static int open_dir(const struct auth_store *st)
{
	int fd = open(st->dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

static int parse_users(struct auth_store *st, char *text, const char *path, char *err, size_t errlen)
{
	unsigned line = 0;
	for (char *save = NULL, *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		line++;
		if (l[0] == '#')
			continue;
		char name[64], role[16], hash[AUTH_HASH_STR_MAX + 1];
		kp_Role r;
		if (sscanf(l, "%63s %15s %160s", name, role, hash) != 3 || !auth_name_valid(name) ||
		    auth_role_parse(role, &r) < 0 || r == kp_Role_ROLE_PUBLISHER || strlen(hash) >= AUTH_HASH_STR_MAX) {
			snprintf(err, errlen, "%s: entry %u is not NAME admin|viewer HASH", path, line);
			return -EINVAL;
		}
		if (auth_store_user(st, name) || st->nusers == AUTH_MAX_USERS) {
			snprintf(err, errlen, "%s: entry %u: duplicate user or more than %d users", path, line,
				 AUTH_MAX_USERS);
			return -EINVAL;
		}
		struct auth_user *u = &st->users[st->nusers++];
		snprintf(u->name, sizeof u->name, "%s", name);
		u->role = r;
		snprintf(u->hash, sizeof u->hash, "%s", hash);
	}
	return 0;
}

static int hex_digest(const char *s, uint8_t *out)
{
	if (strlen(s) != 2 * AUTH_DIGEST_LEN)
		return -EINVAL;
	for (int i = 0; i < AUTH_DIGEST_LEN; i++) {
		unsigned v;
		if (sscanf(s + 2 * i, "%2x", &v) != 1)
			return -EINVAL;
		out[i] = (uint8_t)v;
	}
	return 0;
}

static int parse_tokens(struct auth_store *st, char *text, const char *path, char *err, size_t errlen)
{
	unsigned line = 0;
	for (char *save = NULL, *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		line++;
		if (l[0] == '#')
			continue;
		char name[64], role[16], hex[80];
		int64_t created;
		kp_Role r;
		uint8_t digest[AUTH_DIGEST_LEN];
		if (sscanf(l, "%63s %15s %79s %" SCNd64, name, role, hex, &created) != 4 || !auth_name_valid(name) ||
		    auth_role_parse(role, &r) < 0 || hex_digest(hex, digest) < 0) {
			snprintf(err, errlen, "%s: entry %u is not NAME admin|viewer SHA256 CREATED-MS", path, line);
			return -EINVAL;
		}
		bool dup = false;
		for (unsigned i = 0; i < st->ntokens; i++)
			dup |= !strcmp(st->tokens[i].name, name);
		if (dup || st->ntokens == AUTH_MAX_TOKENS) {
			snprintf(err, errlen, "%s: entry %u: duplicate token or more than %d tokens", path, line,
				 AUTH_MAX_TOKENS);
			return -EINVAL;
		}
		struct auth_token *t = &st->tokens[st->ntokens++];
		snprintf(t->name, sizeof t->name, "%s", name);
		t->role = r;
		memcpy(t->digest, digest, sizeof digest);
		t->created_ms = created;
	}
	return 0;
}

/* Reads one file into a NUL-terminated buffer; a missing file is empty. */
static int read_file(int dirfd, const char *name, const char *path, char **ret, char *err, size_t errlen)
{
	int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT) {
		*ret = calloc(1, 1);
		return *ret ? 0 : -ENOMEM;
	}
	if (fd < 0) {
		snprintf(err, errlen, "cannot open %s: %s", path, strerror(errno));
		return -errno;
	}
	struct stat sb;
	int r = fstat(fd, &sb) < 0 ? -errno : 0;
	if (r == 0 && !S_ISREG(sb.st_mode)) {
		snprintf(err, errlen, "%s is not a regular file", path);
		r = -EINVAL;
	}
	if (r == 0)
		r = check_owner(&sb, path, err, errlen);
	if (r == 0 && sb.st_size > FILE_MAX) {
		snprintf(err, errlen, "%s is larger than %d bytes", path, FILE_MAX);
		r = -EFBIG;
	}
	char *buf = r == 0 ? malloc((size_t)sb.st_size + 1) : NULL;
	if (r == 0 && !buf)
		r = -ENOMEM;
	size_t got = 0;
	while (r == 0 && got < (size_t)sb.st_size) {
		ssize_t n = read(fd, buf + got, (size_t)sb.st_size - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			r = n < 0 ? -errno : -EIO;
			snprintf(err, errlen, "reading %s failed: %s", path, strerror(-r));
		} else
			got += (size_t)n;
	}
	close(fd);
	if (r < 0) {
		free(buf);
		return r;
	}
	buf[got] = '\0';
	*ret = buf;
	return 0;
}

int auth_store_open(struct auth_store *st, const char *data_dir, char *err, size_t errlen)
{
	memset(st, 0, sizeof *st);
	if ((size_t)snprintf(st->dir, sizeof st->dir, "%s/auth", data_dir) >= sizeof st->dir) {
		snprintf(err, errlen, "data directory path too long: %s", data_dir);
		return -ENAMETOOLONG;
	}
	if (mkdir(st->dir, 0700) < 0 && errno != EEXIST) {
		snprintf(err, errlen, "cannot create %s: %s", st->dir, strerror(errno));
		return -errno;
	}
	int dirfd = open_dir(st);
	if (dirfd < 0) {
		snprintf(err, errlen, "cannot open %s: %s", st->dir, strerror(-dirfd));
		return dirfd;
	}
	struct stat sb;
	int r = fstat(dirfd, &sb) < 0 ? -errno : 0;
	if (r == 0)
		r = check_owner(&sb, st->dir, err, errlen);
	char path[4200], *text = NULL;
	snprintf(path, sizeof path, "%s/users", st->dir);
	if (r == 0)
		r = read_file(dirfd, "users", path, &text, err, errlen);
	if (r == 0)
		r = parse_users(st, text, path, err, errlen);
	free(text);
	text = NULL;
	snprintf(path, sizeof path, "%s/tokens", st->dir);
	if (r == 0)
		r = read_file(dirfd, "tokens", path, &text, err, errlen);
	if (r == 0)
		r = parse_tokens(st, text, path, err, errlen);
	free(text);
	close(dirfd);
	return r;
}

/* Replaces name with text: a temporary file, fsync, rename over, fsync the directory. */
static int replace_file(const struct auth_store *st, const char *name, const char *text, size_t len)
{
	char tmp[64];
	snprintf(tmp, sizeof tmp, "%s.tmp", name);
	int dirfd = open_dir(st);
	if (dirfd < 0)
		return dirfd;
	int fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	int r = fd < 0 ? -errno : 0;
	if (r == 0)
		r = kp_write_all(fd, text, len);
	if (r == 0 && fsync(fd) < 0)
		r = -errno;
	if (fd >= 0 && close(fd) < 0 && r == 0)
		r = -errno;
	if (r == 0 && renameat(dirfd, tmp, dirfd, name) < 0)
		r = -errno;
	if (r < 0 && fd >= 0)
		unlinkat(dirfd, tmp, 0);
	if (r == 0 && fsync(dirfd) < 0)
		r = -errno;
	close(dirfd);
	return r;
}

static int save_users(const struct auth_store *st)
{
	static char buf[FILE_MAX];
	size_t n = (size_t)snprintf(buf, sizeof buf, "%s", users_head);
	for (unsigned i = 0; i < st->nusers; i++) {
		const struct auth_user *u = &st->users[i];
		n += (size_t)snprintf(buf + n, sizeof buf - n, "%s %s %s\n", u->name, auth_role_name(u->role), u->hash);
	}
	int r = replace_file(st, "users", buf, n);
	OPENSSL_cleanse(buf, n);
	return r;
}

static int save_tokens(const struct auth_store *st)
{
	static char buf[FILE_MAX];
	size_t n = (size_t)snprintf(buf, sizeof buf, "%s", tokens_head);
	for (unsigned i = 0; i < st->ntokens; i++) {
		const struct auth_token *t = &st->tokens[i];
		n += (size_t)snprintf(buf + n, sizeof buf - n, "%s %s ", t->name, auth_role_name(t->role));
		for (int j = 0; j < AUTH_DIGEST_LEN; j++)
			n += (size_t)snprintf(buf + n, sizeof buf - n, "%02x", t->digest[j]);
		n += (size_t)snprintf(buf + n, sizeof buf - n, " %" PRId64 "\n", t->created_ms);
	}
	return replace_file(st, "tokens", buf, n);
}

const struct auth_user *auth_store_user(const struct auth_store *st, const char *name)
{
	for (unsigned i = 0; i < st->nusers; i++)
		if (!strcmp(st->users[i].name, name))
			return &st->users[i];
	return NULL;
}

int auth_store_user_add(struct auth_store *st, const char *name, kp_Role role, const char *hash)
{
	if (!auth_name_valid(name) || (role != kp_Role_ROLE_ADMIN && role != kp_Role_ROLE_VIEWER) ||
	    strlen(hash) >= AUTH_HASH_STR_MAX)
		return -EINVAL;
	if (auth_store_user(st, name))
		return -EEXIST;
	if (st->nusers == AUTH_MAX_USERS)
		return -ENOSPC;
	struct auth_user *u = &st->users[st->nusers++];
	snprintf(u->name, sizeof u->name, "%s", name);
	u->role = role;
	snprintf(u->hash, sizeof u->hash, "%s", hash);
	int r = save_users(st);
	if (r < 0)
		memset(&st->users[--st->nusers], 0, sizeof *u);
	return r;
}

int auth_store_user_set_hash(struct auth_store *st, const char *name, const char *hash)
{
	struct auth_user *u = (struct auth_user *)auth_store_user(st, name);
	if (!u)
		return -ENOENT;
	if (strlen(hash) >= AUTH_HASH_STR_MAX)
		return -EINVAL;
	char old[AUTH_HASH_STR_MAX];
	memcpy(old, u->hash, sizeof old);
	snprintf(u->hash, sizeof u->hash, "%s", hash);
	int r = save_users(st);
	if (r < 0)
		memcpy(u->hash, old, sizeof old);
	return r;
}

int auth_store_user_set_role(struct auth_store *st, const char *name, kp_Role role)
{
	struct auth_user *u = (struct auth_user *)auth_store_user(st, name);
	if (!u)
		return -ENOENT;
	kp_Role old = u->role;
	u->role = role;
	int r = save_users(st);
	if (r < 0)
		u->role = old;
	return r;
}

int auth_store_user_del(struct auth_store *st, const char *name)
{
	const struct auth_user *u = auth_store_user(st, name);
	if (!u)
		return -ENOENT;
	unsigned i = (unsigned)(u - st->users);
	struct auth_user old = st->users[i];
	memmove(&st->users[i], &st->users[i + 1], (st->nusers - i - 1) * sizeof old);
	st->nusers--;
	int r = save_users(st);
	if (r < 0) {
		memmove(&st->users[i + 1], &st->users[i], (st->nusers - i) * sizeof old);
		st->users[i] = old;
		st->nusers++;
	}
	return r;
}

const struct auth_token *auth_store_token_match(const struct auth_store *st, const char *token)
{
	uint8_t d[AUTH_DIGEST_LEN];
	if (strncmp(token, AUTH_TOKEN_PREFIX, strlen(AUTH_TOKEN_PREFIX)) || auth_digest(token, d) < 0)
		return NULL;
	const struct auth_token *found = NULL;
	for (unsigned i = 0; i < st->ntokens; i++)
		if (!CRYPTO_memcmp(st->tokens[i].digest, d, sizeof d))
			found = &st->tokens[i];
	return found;
}

int auth_store_token_add(struct auth_store *st, const char *name, kp_Role role, const uint8_t *digest,
			 int64_t created_ms)
{
	if (!auth_name_valid(name) ||
	    (role != kp_Role_ROLE_ADMIN && role != kp_Role_ROLE_VIEWER && role != kp_Role_ROLE_PUBLISHER))
		return -EINVAL;
	for (unsigned i = 0; i < st->ntokens; i++)
		if (!strcmp(st->tokens[i].name, name))
			return -EEXIST;
	if (st->ntokens == AUTH_MAX_TOKENS)
		return -ENOSPC;
	struct auth_token *t = &st->tokens[st->ntokens++];
	snprintf(t->name, sizeof t->name, "%s", name);
	t->role = role;
	memcpy(t->digest, digest, AUTH_DIGEST_LEN);
	t->created_ms = created_ms;
	int r = save_tokens(st);
	if (r < 0)
		memset(&st->tokens[--st->ntokens], 0, sizeof *t);
	return r;
}

int auth_store_token_del(struct auth_store *st, const char *name)
{
	unsigned i = 0;
	while (i < st->ntokens && strcmp(st->tokens[i].name, name))
		i++;
	if (i == st->ntokens)
		return -ENOENT;
	struct auth_token old = st->tokens[i];
	memmove(&st->tokens[i], &st->tokens[i + 1], (st->ntokens - i - 1) * sizeof old);
	st->ntokens--;
	int r = save_tokens(st);
	if (r < 0) {
		memmove(&st->tokens[i + 1], &st->tokens[i], (st->ntokens - i) * sizeof old);
		st->tokens[i] = old;
		st->ntokens++;
	}
	return r;
}
