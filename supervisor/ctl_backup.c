/* keeppeekctl backup and restore (docs/backup.md, keeppeekctl(8)).
 *
 * backup DIR [--media]: DIR (created, or empty) is opened here and passed to keeppeekd,
 * which writes the credential files and the configuration into it and has recorderd
 * write a consistent copy of the catalog while recording goes on; with --media the
 * recordings and event JPEGs are then copied from data_dir (after the catalog copy, so
 * every byte it names is there); last, MANIFEST is written: a backup without it is not
 * complete.
 *
 * restore DIR: with the daemon stopped, puts the catalog, the credential files, the media
 * (if the backup has them) and the configuration back; what would be replaced is moved
 * aside only with --force. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "catalog.h"
#include "ctl.h"
#include "kp_build_config.h"

#define BACKUP_TIMEOUT_SECS 3600 /* a large catalog takes a while to copy */
#define MANIFEST_MAX        (64 * 1024)
#define DEFAULT_CONFIG      KP_SYSCONFDIR "/keeppeek.conf"

/* The entries a backup holds besides media, deepest first (removed in this order after a
 * failure). */
static const struct {
	const char *name;
	int flags; /* for unlinkat */
} backup_entries[] = {
    {"MANIFEST", 0},         {"keeppeek.conf", 0},           {"data/catalog/data.mdb", 0}, {"data/auth/users", 0},
    {"data/auth/tokens", 0}, {"data/catalog", AT_REMOVEDIR}, {"data/auth", AT_REMOVEDIR},  {"data", AT_REMOVEDIR},
};

struct media_count {
	uint64_t files, bytes, skipped;
};

static int err_out(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int err_out(int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("keeppeekctl: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	return code;
}

/* The value of key in a manifest's "key=value" lines ("" when absent). */
static const char *manifest_get(const char *text, const char *key, char *buf, size_t len)
{
	size_t kl = strlen(key);
	for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		if (!strncmp(l, key, kl) && l[kl] == '=') {
			const char *v = l + kl + 1;
			size_t n = strcspn(v, "\n");
			snprintf(buf, len, "%.*s", (int)n, v);
			return buf;
		}
	}
	buf[0] = '\0';
	return buf;
}

static uint64_t manifest_u64(const char *text, const char *key)
{
	char v[64];
	return strtoull(manifest_get(text, key, v, sizeof v), NULL, 10);
}

static int write_full_fd(int fd, const void *p, size_t len)
{
	const char *c = p;
	while (len) {
		ssize_t n = write(fd, c, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		c += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Copies what in holds now into a new file name below dirfd (mode 0600, synced); an
 * existing file is an error (-EEXIST). */
static int copy_fd_to(int in, int dirfd, const char *name, uid_t uid, gid_t gid, uint64_t *ret_bytes)
{
	int out = openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (out < 0)
		return -errno;
	static char buf[1 << 20];
	uint64_t total = 0;
	int r = 0;
	/* Its data, hole by hole: a recording stripped to its headers (its media in the object
	 * store, decision 0037) stays as sparse in the copy as it is here. */
	struct stat st;
	off_t pos = 0, end = 0;
	if (fstat(in, &st) < 0)
		r = -errno;
	else
		end = st.st_size;
	while (r == 0 && pos < end) {
		off_t data = lseek(in, pos, SEEK_DATA);
		if (data < 0 && errno == ENXIO)
			break; /* a hole up to the end */
		off_t hole = data < 0 ? -1 : lseek(in, data, SEEK_HOLE);
		if (data < 0 || hole < 0) {
			r = -errno;
			break;
		}
		if (hole > end)
			hole = end;
		for (pos = data; r == 0 && pos < hole;) {
			size_t want = (size_t)(hole - pos) < sizeof buf ? (size_t)(hole - pos) : sizeof buf;
			ssize_t n = pread(in, buf, want, pos);
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0) {
				r = -errno;
			} else if (n == 0) {
				hole = end = pos; /* shorter than it was: copied up to where it has got */
			} else {
				r = lseek(out, pos, SEEK_SET) < 0 ? -errno : write_full_fd(out, buf, (size_t)n);
				pos += n;
				total += (uint64_t)n;
			}
		}
	}
	if (r == 0 && ftruncate(out, end) < 0)
		r = -errno;
	if (r == 0 && uid != (uid_t)-1 && fchown(out, uid, gid) < 0)
		r = -errno;
	if (r == 0 && fsync(out) < 0)
		r = -errno;
	close(out);
	if (r < 0)
		unlinkat(dirfd, name, 0);
	else if (ret_bytes)
		*ret_bytes = total;
	return r;
}

/* Copies the tree below src into dst (directories 0750, files 0600): regular files and
 * directories only, each file as it is at the moment it is read (a file being written is
 * copied up to where it has got; one that vanishes meanwhile is skipped). With
 * skip_existing, files dst already has are left alone. */
static int copy_tree(int src, int dst, bool skip_existing, uid_t uid, gid_t gid, struct media_count *c,
		     const char *shown)
{
	int sfd = dup(src);
	DIR *d = sfd >= 0 ? fdopendir(sfd) : NULL;
	if (!d) {
		if (sfd >= 0)
			close(sfd);
		return -errno;
	}
	int r = 0;
	struct dirent *e;
	while (r == 0 && (errno = 0, e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		struct stat st;
		if (fstatat(src, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			if (errno != ENOENT)
				r = -errno;
			c->skipped += r == 0;
			continue;
		}
		if (S_ISDIR(st.st_mode)) {
			if (mkdirat(dst, e->d_name, 0750) < 0 && errno != EEXIST) {
				r = -errno;
				break;
			}
			int s2 = openat(src, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			int d2 = openat(dst, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (s2 < 0 || d2 < 0)
				r = -errno;
			if (r == 0 && uid != (uid_t)-1 && fchown(d2, uid, gid) < 0)
				r = -errno;
			if (r == 0)
				r = copy_tree(s2, d2, skip_existing, uid, gid, c, shown);
			if (r == 0 && fsync(d2) < 0)
				r = -errno;
			if (s2 >= 0)
				close(s2);
			if (d2 >= 0)
				close(d2);
			continue;
		}
		if (!S_ISREG(st.st_mode)) {
			c->skipped++;
			continue;
		}
		if (skip_existing && faccessat(dst, e->d_name, F_OK, AT_SYMLINK_NOFOLLOW) == 0) {
			c->skipped++;
			continue;
		}
		int in = openat(src, e->d_name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		if (in < 0) {
			if (errno != ENOENT)
				r = -errno;
			c->skipped += r == 0;
			continue;
		}
		uint64_t n = 0;
		r = copy_fd_to(in, dst, e->d_name, uid, gid, &n);
		close(in);
		if (r == 0) {
			c->files++;
			c->bytes += n;
		}
	}
	if (r == 0 && errno)
		r = -errno;
	if (r < 0)
		fprintf(stderr, "keeppeekctl: copying %s failed: %s\n", shown, strerror(-r));
	closedir(d);
	return r;
}

/* Copies data_dir/name (when it exists) into the directory dst/name. */
static int copy_media(const char *data_dir, const char *name, int dst, bool skip_existing, uid_t uid, gid_t gid,
		      struct media_count *c)
{
	char path[4200];
	snprintf(path, sizeof path, "%s/%s", data_dir, name);
	int src = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (src < 0)
		return errno == ENOENT ? 0 : -errno;
	int r = 0;
	if (mkdirat(dst, name, 0750) < 0 && errno != EEXIST)
		r = -errno;
	int d = r == 0 ? openat(dst, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) : -1;
	if (r == 0 && d < 0)
		r = -errno;
	if (r == 0 && uid != (uid_t)-1 && fchown(d, uid, gid) < 0)
		r = -errno;
	if (r == 0)
		r = copy_tree(src, d, skip_existing, uid, gid, c, path);
	if (r == 0 && fsync(d) < 0)
		r = -errno;
	if (r < 0 && r != -EEXIST)
		fprintf(stderr, "keeppeekctl: copying %s failed: %s\n", path, strerror(-r));
	if (d >= 0)
		close(d);
	close(src);
	return r;
}

static bool dir_empty(const char *path)
{
	DIR *d = opendir(path);
	if (!d)
		return false;
	struct dirent *e;
	bool empty = true;
	while (empty && (e = readdir(d)))
		empty = !strcmp(e->d_name, ".") || !strcmp(e->d_name, "..");
	closedir(d);
	return empty;
}

/* Writes text as dirfd/name atomically (a temporary file, synced, renamed, the directory
 * synced). */
static int write_atomic(int dirfd, const char *name, const char *text, mode_t mode)
{
	char tmp[256];
	snprintf(tmp, sizeof tmp, ".%s.tmp", name);
	unlinkat(dirfd, tmp, 0);
	int fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
	if (fd < 0)
		return -errno;
	int r = write_full_fd(fd, text, strlen(text));
	if (r == 0 && fsync(fd) < 0)
		r = -errno;
	close(fd);
	if (r == 0 && renameat(dirfd, tmp, dirfd, name) < 0)
		r = -errno;
	if (r < 0)
		unlinkat(dirfd, tmp, 0);
	else if (fsync(dirfd) < 0)
		r = -errno;
	return r;
}

static void print_json_value(const char *v)
{
	bool num = v[0] != '\0';
	for (const char *p = v; *p; p++)
		num &= *p >= '0' && *p <= '9';
	if (num) {
		fputs(v, stdout);
		return;
	}
	putchar('"');
	for (const char *p = v; *p; p++) {
		if (*p == '"' || *p == '\\')
			printf("\\%c", *p);
		else if ((unsigned char)*p < 0x20)
			printf("\\u%04x", (unsigned char)*p);
		else
			putchar(*p);
	}
	putchar('"');
}

/* The manifest's lines as one JSON object, with dir first. */
static void print_manifest_json(const char *dir, const char *text)
{
	printf("{\"dir\":");
	print_json_value(dir);
	for (const char *l = text; *l;) {
		size_t n = strcspn(l, "\n");
		const char *eq = memchr(l, '=', n);
		if (eq) {
			char key[64], val[4200];
			snprintf(key, sizeof key, "%.*s", (int)(eq - l), l);
			snprintf(val, sizeof val, "%.*s", (int)(n - (size_t)(eq - l) - 1), eq + 1);
			printf(",\"%s\":", key);
			print_json_value(val);
		}
		l += n + (l[n] == '\n');
	}
	printf("}\n");
}

static void human_size(uint64_t b, char *buf, size_t len)
{
	if (b >= (1ull << 30))
		snprintf(buf, len, "%.1f GiB", (double)b / (1ull << 30));
	else if (b >= (1ull << 20))
		snprintf(buf, len, "%.1f MiB", (double)b / (1ull << 20));
	else
		snprintf(buf, len, "%.1f KiB", (double)b / 1024.0);
}

static void remove_partial(int dirfd, const char *dir, bool created)
{
	for (size_t i = 0; i < sizeof backup_entries / sizeof backup_entries[0]; i++)
		unlinkat(dirfd, backup_entries[i].name, backup_entries[i].flags);
	if (created)
		rmdir(dir);
}

int ctl_backup(const char *sock, int n, char **args, bool json)
{
	const char *dir = NULL;
	bool media = false;
	for (int i = 0; i < n; i++) {
		if (!strcmp(args[i], "--media"))
			media = true;
		else if (args[i][0] != '-' && !dir)
			dir = args[i];
		else
			return err_out(2, "usage: backup DIR [--media]");
	}
	if (!dir)
		return err_out(2, "usage: backup DIR [--media]");
	bool created = mkdir(dir, 0700) == 0;
	if (!created && errno != EEXIST)
		return err_out(1, "cannot create %s: %s", dir, strerror(errno));
	if (!created && !dir_empty(dir))
		return err_out(1, "%s is not an empty directory; a backup goes into a new or empty one", dir);
	char abs[4096];
	if (!realpath(dir, abs))
		return err_out(1, "%s: %s", dir, strerror(errno));
	int dirfd = open(abs, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0)
		return err_out(1, "cannot open %s: %s", abs, strerror(errno));
	char *argv1[] = {abs};
	int code = 1;
	char *text = NULL;
	size_t len = 0;
	int r = ctl_exchange_fd(sock, "backup", argv1, 1, false, false, BACKUP_TIMEOUT_SECS, dirfd, &code, &text, &len);
	if (r) {
		remove_partial(dirfd, abs, created);
		close(dirfd);
		return r;
	}
	char *manifest = malloc(len + 512);
	if (!manifest) {
		free(text);
		close(dirfd);
		return err_out(1, "out of memory");
	}
	memcpy(manifest, text ? text : "", len);
	manifest[len] = '\0';
	free(text);
	if (code) {
		/* The sentences, without the manifest lines that came before them. */
		for (const char *l = manifest; *l;) {
			size_t k = strcspn(l, "\n");
			size_t key = strspn(l, "abcdefghijklmnopqrstuvwxyz_");
			if (!(key && key < k && l[key] == '='))
				fprintf(stderr, "%.*s\n", (int)k, l);
			l += k + (l[k] == '\n');
		}
		remove_partial(dirfd, abs, created);
		free(manifest);
		close(dirfd);
		return code;
	}
	char data_dir[4200];
	manifest_get(manifest, "data_dir", data_dir, sizeof data_dir);
	struct media_count mc = {0};
	if (media) {
		int data = openat(dirfd, "data", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		r = data < 0 ? -errno : 0;
		if (r == 0)
			r = copy_media(data_dir, "recordings", data, false, (uid_t)-1, (gid_t)-1, &mc);
		if (r == 0)
			r = copy_media(data_dir, "events", data, false, (uid_t)-1, (gid_t)-1, &mc);
		if (data >= 0)
			close(data);
		if (r < 0) {
			free(manifest);
			close(dirfd);
			return err_out(1, "backup in %s is incomplete (no MANIFEST): the media could not be copied",
				       abs);
		}
		snprintf(manifest + len, 512, "media_files=%" PRIu64 "\nmedia_bytes=%" PRIu64 "\n", mc.files, mc.bytes);
	}
	r = write_atomic(dirfd, "MANIFEST", manifest, 0600);
	close(dirfd);
	if (r < 0) {
		free(manifest);
		return err_out(1, "writing %s/MANIFEST failed: %s", abs, strerror(-r));
	}
	if (json) {
		print_manifest_json(abs, manifest);
	} else {
		char cat[32], med[32], config[4200];
		human_size(manifest_u64(manifest, "catalog_bytes"), cat, sizeof cat);
		manifest_get(manifest, "config", config, sizeof config);
		printf("backup of %s in %s:\n  catalog: schema %" PRIu64 ", %s, %" PRIu64 " recordings, %" PRIu64
		       " events\n  %" PRIu64 " users, %" PRIu64 " API tokens\n  configuration: %s\n",
		       data_dir, abs, manifest_u64(manifest, "catalog_schema"), cat,
		       manifest_u64(manifest, "recordings"), manifest_u64(manifest, "events"),
		       manifest_u64(manifest, "users"), manifest_u64(manifest, "tokens"),
		       config[0] ? config : "none (demo mode)");
		if (media) {
			human_size(mc.bytes, med, sizeof med);
			printf("  media: %" PRIu64 " files, %s\n", mc.files, med);
		} else {
			printf("  media: not copied (--media copies the recordings and event JPEGs)\n");
		}
	}
	free(manifest);
	return 0;
}

/* ---- restore ---- */

/* Whether a keeppeekd seems to run: its control socket answers, or a process has the
 * catalog open (LMDB keeps a shared lock on the first byte of lock.mdb while it does). */
static int daemon_running(const char *sock, const char *data_dir, char *why, size_t len)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	snprintf(sa.sun_path, sizeof sa.sun_path, "%s", sock);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0) {
		close(fd);
		snprintf(why, len, "its control socket %s answers", sock);
		return 1;
	}
	if (fd >= 0)
		close(fd);
	char path[4200];
	snprintf(path, sizeof path, "%s/catalog/lock.mdb", data_dir);
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return 0;
	struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 1};
	int running = fcntl(fd, F_GETLK, &fl) == 0 && fl.l_type != F_UNLCK;
	if (running)
		snprintf(why, len, "process %d has its catalog %s/catalog open", (int)fl.l_pid, data_dir);
	close(fd);
	return running;
}

/* The workers' user of a configuration text ([keeppeek] user, default keeppeek), as
 * keeppeekd resolves it: nobody when it does not exist. */
static void worker_user(const char *config, uid_t *ret_uid, gid_t *ret_gid, char *name, size_t len)
{
	snprintf(name, len, "keeppeek");
	bool in_main = true;
	for (const char *l = config; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		while (*l == ' ' || *l == '\t')
			l++;
		if (*l == '[')
			in_main = !strncmp(l, "[keeppeek]", 10);
		char v[64];
		if (in_main && sscanf(l, "user = %63[^ \t\n#;]", v) == 1)
			snprintf(name, len, "%s", v);
	}
	struct passwd *pw = getpwnam(name);
	if (!pw) {
		snprintf(name, len, "nobody");
		pw = getpwnam("nobody");
	}
	*ret_uid = pw ? pw->pw_uid : (uid_t)-1;
	*ret_gid = pw ? pw->pw_gid : (gid_t)-1;
}

static char *read_text(int dirfd, const char *name, size_t max)
{
	int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	char *buf = malloc(max + 1);
	size_t got = 0;
	while (buf && got < max) {
		ssize_t n = read(fd, buf + got, max - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	close(fd);
	if (buf)
		buf[got] = '\0';
	return buf;
}

static int copy_one(int srcdir, const char *src, int dstdir, const char *dst, uid_t uid, gid_t gid)
{
	int in = openat(srcdir, src, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (in < 0)
		return -errno;
	int r = copy_fd_to(in, dstdir, dst, uid, gid, NULL);
	close(in);
	return r;
}

/* Moves data_dir/name aside to name.pre-restore-MS when it exists. */
static int move_aside(int dfd, const char *name, int64_t ms, bool *moved)
{
	char to[128];
	snprintf(to, sizeof to, "%s.pre-restore-%lld", name, (long long)ms);
	if (renameat(dfd, name, dfd, to) == 0) {
		*moved = true;
		fprintf(stderr, "keeppeekctl: moved %s aside to %s\n", name, to);
		return 0;
	}
	return errno == ENOENT ? 0 : -errno;
}

static int open_subdir(int dfd, const char *name, uid_t uid, gid_t gid)
{
	if (mkdirat(dfd, name, 0700) < 0 && errno != EEXIST)
		return -errno;
	int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (uid != (uid_t)-1 && fchown(fd, uid, gid) < 0) {
		int e = errno;
		close(fd);
		return -e;
	}
	return fd;
}

int ctl_restore(const char *sock, int n, char **args, bool json)
{
	const char *dir = NULL, *data_dir = NULL, *config = NULL;
	bool no_config = false, force = false, bad = false;
	for (int i = 0; i < n; i++) {
		if (!strcmp(args[i], "--data-dir") && i + 1 < n && !data_dir)
			data_dir = args[++i];
		else if (!strcmp(args[i], "--config") && i + 1 < n && !config)
			config = args[++i];
		else if (!strcmp(args[i], "--no-config"))
			no_config = true;
		else if (!strcmp(args[i], "--force"))
			force = true;
		else if (args[i][0] != '-' && !dir)
			dir = args[i];
		else
			bad = true;
	}
	if (bad || !dir || (config && no_config))
		return err_out(2, "usage: restore DIR [--data-dir DIR] [--config FILE | --no-config] [--force]");
	int bfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (bfd < 0)
		return err_out(1, "cannot open %s: %s", dir, strerror(errno));
	char *manifest = read_text(bfd, "MANIFEST", MANIFEST_MAX);
	char v[4200], from_data[4200], from_config[4200];
	if (!manifest || strcmp(manifest_get(manifest, "keeppeek_backup", v, sizeof v), "1")) {
		free(manifest);
		close(bfd);
		return err_out(1, "%s is not a complete KeepPeek backup (no MANIFEST: the backup did not finish)", dir);
	}
	uint64_t schema = manifest_u64(manifest, "catalog_schema");
	if (schema > CAT_SCHEMA_VERSION) {
		free(manifest);
		close(bfd);
		return err_out(1,
			       "the catalog in %s has schema version %" PRIu64
			       "; this KeepPeek reads versions up to %d "
			       "(the backup was made by a newer KeepPeek)",
			       dir, schema, CAT_SCHEMA_VERSION);
	}
	manifest_get(manifest, "data_dir", from_data, sizeof from_data);
	manifest_get(manifest, "config", from_config, sizeof from_config);
	if (!data_dir)
		data_dir = from_data;
	char *conf_text = no_config ? NULL : read_text(bfd, "keeppeek.conf", 1 << 20);
	if (!config && conf_text)
		config = from_config[0] ? from_config : DEFAULT_CONFIG;
	char why[4400];
	if (daemon_running(sock, data_dir, why, sizeof why)) {
		free(manifest);
		free(conf_text);
		close(bfd);
		return err_out(1, "keeppeekd is running (%s): stop it first (systemctl stop keeppeek), then restore",
			       why);
	}
	char path[4400];
	struct stat st;
	bool have_catalog = (snprintf(path, sizeof path, "%s/catalog/data.mdb", data_dir), stat(path, &st) == 0);
	bool have_auth = (snprintf(path, sizeof path, "%s/auth", data_dir), stat(path, &st) == 0);
	bool have_config = conf_text && config && stat(config, &st) == 0;
	if ((have_catalog || have_auth || have_config) && !force) {
		fprintf(stderr, "keeppeekctl: restoring would replace");
		const char *sep = " ";
		if (have_catalog) {
			fprintf(stderr, "%sthe catalog in %s", sep, data_dir);
			sep = ", ";
		}
		if (have_auth) {
			fprintf(stderr, "%sthe users and tokens in %s", sep, data_dir);
			sep = ", ";
		}
		if (have_config)
			fprintf(stderr, "%sthe configuration %s", sep, config);
		fprintf(stderr, "; --force moves them aside (NAME.pre-restore-TIME) first\n");
		free(manifest);
		free(conf_text);
		close(bfd);
		return 1;
	}
	/* Ownership as keeppeekd arranges it: the catalog and media are the workers', the
	 * credential files keeppeekd's own (whoever restores: root for the service). */
	uid_t wuid = (uid_t)-1;
	gid_t wgid = (gid_t)-1;
	char wname[64] = "";
	if (geteuid() == 0)
		worker_user(conf_text ? conf_text : "", &wuid, &wgid, wname, sizeof wname);
	int64_t now_ms = (int64_t)time(NULL) * 1000;
	int r = 0;
	if (mkdir(data_dir, 0750) < 0 && errno != EEXIST)
		r = -errno;
	int dfd = r == 0 ? open(data_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
	if (r == 0 && dfd < 0)
		r = -errno;
	if (r < 0) {
		free(manifest);
		free(conf_text);
		close(bfd);
		return err_out(1, "cannot use %s: %s", data_dir, strerror(-r));
	}
	bool moved = false;
	if (r == 0 && have_catalog)
		r = move_aside(dfd, "catalog", now_ms, &moved);
	if (r == 0 && have_auth)
		r = move_aside(dfd, "auth", now_ms, &moved);
	/* The catalog. */
	int cat = r == 0 ? open_subdir(dfd, "catalog", wuid, wgid) : r;
	r = cat < 0 ? cat : copy_one(bfd, "data/catalog/data.mdb", cat, "data.mdb", wuid, wgid);
	if (r == 0 && fsync(cat) < 0)
		r = -errno;
	if (cat >= 0)
		close(cat);
	if (r < 0)
		fprintf(stderr, "keeppeekctl: restoring the catalog into %s/catalog failed: %s\n", data_dir,
			strerror(-r));
	/* The users and tokens: keeppeekd's own, 0600 in a 0700 directory. */
	int auth = r == 0 ? open_subdir(dfd, "auth", (uid_t)-1, (gid_t)-1) : -1;
	if (r == 0 && auth < 0)
		r = auth;
	for (int i = 0; r == 0 && i < 2; i++) {
		const char *name = i ? "tokens" : "users";
		snprintf(path, sizeof path, "data/auth/%s", name);
		if (fstatat(bfd, path, &st, AT_SYMLINK_NOFOLLOW) == 0 && st.st_size > 0)
			r = copy_one(bfd, path, auth, name, (uid_t)-1, (gid_t)-1);
	}
	if (r == 0 && auth >= 0 && fsync(auth) < 0)
		r = -errno;
	if (auth >= 0)
		close(auth);
	if (r < 0 && auth >= 0)
		fprintf(stderr, "keeppeekctl: restoring the users and tokens into %s/auth failed: %s\n", data_dir,
			strerror(-r));
	/* The media, when the backup has them; files already there are kept. */
	struct media_count mc = {0};
	bool with_media =
	    faccessat(bfd, "data/recordings", F_OK, 0) == 0 || faccessat(bfd, "data/events", F_OK, 0) == 0;
	if (r == 0 && with_media) {
		char src[4400];
		snprintf(src, sizeof src, "%s/data", dir);
		r = copy_media(src, "recordings", dfd, true, wuid, wgid, &mc);
		if (r == 0)
			r = copy_media(src, "events", dfd, true, wuid, wgid, &mc);
	}
	if (r == 0 && wuid != (uid_t)-1 && fchown(dfd, wuid, wgid) < 0)
		r = -errno;
	if (r == 0 && fsync(dfd) < 0)
		r = -errno;
	close(dfd);
	/* The configuration, last: it is what the next start reads. */
	if (r == 0 && conf_text) {
		char cdir[4200], *slash;
		snprintf(cdir, sizeof cdir, "%s", config);
		slash = strrchr(cdir, '/');
		const char *base = slash ? slash + 1 : cdir;
		if (slash)
			*slash = '\0';
		int cfd = open(slash ? (cdir[0] ? cdir : "/") : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (cfd < 0)
			r = -errno;
		if (r == 0 && have_config) {
			char aside[300];
			snprintf(aside, sizeof aside, "%s.pre-restore-%lld", base, (long long)now_ms);
			if (renameat(cfd, base, cfd, aside) < 0)
				r = -errno;
			else
				fprintf(stderr, "keeppeekctl: moved %s aside to %s\n", config, aside);
		}
		if (r == 0)
			r = write_atomic(cfd, base, conf_text, 0600);
		if (cfd >= 0)
			close(cfd);
		if (r < 0)
			fprintf(stderr, "keeppeekctl: restoring the configuration %s failed: %s\n", config,
				strerror(-r));
	}
	close(bfd);
	if (r < 0) {
		free(manifest);
		free(conf_text);
		return 1;
	}
	uint64_t recs = manifest_u64(manifest, "recordings");
	snprintf(path, sizeof path, "%s/recordings", data_dir);
	bool media_missing = recs && !with_media && stat(path, &st) < 0;
	if (json) {
		printf("{\"dir\":");
		print_json_value(dir);
		printf(",\"data_dir\":");
		print_json_value(data_dir);
		printf(",\"config\":");
		print_json_value(conf_text ? config : "");
		printf(",\"catalog_schema\":%" PRIu64 ",\"recordings\":%" PRIu64 ",\"events\":%" PRIu64
		       ",\"users\":%" PRIu64 ",\"tokens\":%" PRIu64 ",\"media_files\":%" PRIu64
		       ",\"media_missing\":%s}\n",
		       schema, recs, manifest_u64(manifest, "events"), manifest_u64(manifest, "users"),
		       manifest_u64(manifest, "tokens"), mc.files, media_missing ? "true" : "false");
	} else {
		printf("restored %s into %s: catalog (schema %" PRIu64 ", %" PRIu64 " recordings, %" PRIu64
		       " events), %" PRIu64 " users, %" PRIu64 " API tokens",
		       dir, data_dir, schema, recs, manifest_u64(manifest, "events"), manifest_u64(manifest, "users"),
		       manifest_u64(manifest, "tokens"));
		if (with_media)
			printf(", %" PRIu64 " media files", mc.files);
		if (conf_text)
			printf(", configuration %s", config);
		printf("\n");
		if (wname[0])
			printf("the catalog and media belong to the workers' user %s\n", wname);
	}
	if (media_missing)
		fprintf(stderr,
			"keeppeekctl: warning: the backup has no media and %s/recordings does not exist: at its next "
			"start recorderd drops the catalog rows whose files are missing; put the recordings in place "
			"first\n",
			data_dir);
	if (conf_text && strcmp(data_dir, from_data))
		fprintf(stderr,
			"keeppeekctl: note: the restored configuration names data_dir %s; the backup was restored "
			"into %s\n",
			from_data, data_dir);
	free(manifest);
	free(conf_text);
	return 0;
}
