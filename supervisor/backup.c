/* keeppeekctl backup, the supervisor's part (docs/backup.md). keeppeekctl opens the backup
 * directory and passes it; below it keeppeekd creates, never replaces and never through a
 * symbolic link,
 *
 *	data/auth/users, data/auth/tokens	copies of the credential files
 *	keeppeek.conf				the configuration file as on disk
 *	data/catalog/data.mdb			empty, for recorderd
 *
 * (all 0600 in 0700 directories, given to the client's uid when keeppeekd is root), then
 * hands data.mdb to recorderd with a BackupRequest and answers the client when recorderd
 * has written its copy. The answer is the manifest's "key=value" lines, keeppeekd's here
 * and recorderd's after them; keeppeekctl writes it as MANIFEST. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kp_build_config.h"
#include "kp_io.h"
#include "kp_time.h"
#include "log.h"
#include "supervisor.h"

#define BACKUP_FILE_MAX (1024 * 1024) /* auth files and the configuration are far smaller */

struct backup {
	struct supervisor *s;
	const struct control_extra *x;
	struct kp_out *o;
	int fds[8];
	unsigned nfds;
};

static int keep(struct backup *b, int fd)
{
	if (fd >= 0 && b->nfds < sizeof b->fds / sizeof b->fds[0])
		b->fds[b->nfds++] = fd;
	return fd;
}

/* The file or directory belongs to whoever asked, when keeppeekd may give it away. */
static int give(struct backup *b, int fd, const char *name)
{
	if (geteuid() != 0 || b->x->uid == 0 || fchown(fd, b->x->uid, b->x->gid) == 0)
		return 0;
	int e = errno;
	kp_out_put(b->o, "backup: cannot give %s to uid %u: %s\n", name, (unsigned)b->x->uid, strerror(e));
	return -e;
}

/* A new directory below dirfd, opened without following a link. */
static int new_dir(struct backup *b, int dirfd, const char *name, const char *shown)
{
	if (mkdirat(dirfd, name, 0700) < 0) {
		int e = errno;
		kp_out_put(b->o, "backup: cannot create %s: %s\n", shown, strerror(e));
		return -e;
	}
	int fd = keep(b, openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
	if (fd < 0) {
		int e = errno;
		kp_out_put(b->o, "backup: cannot open %s: %s\n", shown, strerror(e));
		return -e;
	}
	int r = give(b, fd, shown);
	return r < 0 ? r : fd;
}

/* A new, empty file below dirfd: never an existing one, never through a link. */
static int new_file(struct backup *b, int dirfd, const char *name, const char *shown)
{
	int fd = keep(b, openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
	if (fd < 0) {
		int e = errno;
		kp_out_put(b->o, "backup: cannot create %s: %s\n", shown, strerror(e));
		return -e;
	}
	int r = give(b, fd, shown);
	return r < 0 ? r : fd;
}

/* Copies the file at path (absent: nothing) into fd and syncs it; *ret_entries counts the
 * lines that are neither empty nor comments. */
static int copy_file(struct backup *b, const char *path, int fd, unsigned *ret_entries)
{
	int in = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (in < 0 && errno == ENOENT) {
		*ret_entries = 0;
		return fsync(fd) < 0 ? -errno : 0;
	}
	if (in < 0) {
		int e = errno;
		kp_out_put(b->o, "backup: cannot open %s: %s\n", path, strerror(e));
		return -e;
	}
	char *buf = malloc(BACKUP_FILE_MAX);
	size_t got = 0;
	int r = buf ? 0 : -ENOMEM;
	for (;;) {
		if (r < 0)
			break;
		ssize_t n = read(in, buf + got, BACKUP_FILE_MAX - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			r = -errno;
		else if (n == 0)
			break;
		else if ((got += (size_t)n) == BACKUP_FILE_MAX)
			r = -EFBIG;
	}
	close(in);
	if (r == 0)
		r = kp_write_all(fd, buf, got);
	if (r == 0 && fsync(fd) < 0)
		r = -errno;
	unsigned entries = 0;
	for (size_t i = 0; r == 0 && i < got; i++)
		if ((i == 0 || buf[i - 1] == '\n') && buf[i] != '\n' && buf[i] != '#')
			entries++;
	free(buf);
	if (r < 0) {
		kp_out_put(b->o, "backup: copying %s failed: %s\n", path, strerror(-r));
		return r;
	}
	*ret_entries = entries;
	return 0;
}

static int prepare(struct backup *b, int dirfd, const char *shown, int *ret_catalog_fd, char *manifest, size_t len)
{
	struct supervisor *s = b->s;
	char name[4200], path[4200];
	int data = new_dir(b, dirfd, "data", "data");
	if (data < 0)
		return data;
	int auth = new_dir(b, data, "auth", "data/auth");
	if (auth < 0)
		return auth;
	int catalog = new_dir(b, data, "catalog", "data/catalog");
	if (catalog < 0)
		return catalog;
	unsigned users = 0, tokens = 0, lines = 0;
	int r = 0;
	static const char *const auth_files[] = {"users", "tokens"};
	for (int i = 0; i < 2 && r == 0; i++) {
		snprintf(name, sizeof name, "data/auth/%s", auth_files[i]);
		int fd = new_file(b, auth, auth_files[i], name);
		snprintf(path, sizeof path, "%s/auth/%s", s->cfg.data_dir.val, auth_files[i]);
		r = fd < 0 ? fd : copy_file(b, path, fd, i ? &tokens : &users);
	}
	if (r == 0 && s->config_path[0]) {
		int fd = new_file(b, dirfd, "keeppeek.conf", "keeppeek.conf");
		r = fd < 0 ? fd : copy_file(b, s->config_path, fd, &lines);
	}
	int db = r == 0 ? new_file(b, catalog, "data.mdb", "data/catalog/data.mdb") : r;
	if (db < 0)
		return db;
	/* The directory entries are durable before anything says the backup exists. */
	const int dirs[] = {catalog, auth, data, dirfd};
	for (unsigned i = 0; i < 4; i++)
		if (fsync(dirs[i]) < 0) {
			int e = errno;
			kp_out_put(b->o, "backup: syncing %s failed: %s\n", shown, strerror(e));
			return -e;
		}
	char config[PATH_MAX] = "";
	if (s->config_path[0] && !realpath(s->config_path, config))
		snprintf(config, sizeof config, "%s", s->config_path);
	snprintf(manifest, len,
		 "keeppeek_backup=1\nversion=%s\ncreated_ms=%lld\ndata_dir=%s\nconfig=%s\nusers=%u\ntokens=%u\n",
		 KP_VERSION, (long long)kp_wall_ms(), s->cfg.data_dir.val, config, users, tokens);
	*ret_catalog_fd = db;
	return 0;
}

int backup_start(struct supervisor *s, const kp_ControlRequest *req, const struct control_extra *x, uint64_t ticket,
		 struct kp_out *o)
{
	if (req->args_count != 1 || x->nfds != 1) {
		kp_out_put(o, "usage: backup DIR (keeppeekctl passes DIR opened)\n");
		return 2;
	}
	struct stat st;
	if (fstat(x->fds[0], &st) < 0 || !S_ISDIR(st.st_mode)) {
		kp_out_put(o, "backup: %s is not a directory\n", req->args[0]);
		return 2;
	}
	struct proc *rec = proc_by_peer(s, kp_Peer_PEER_RECORDERD);
	if (!rec || rec->state != PROC_RUNNING) {
		kp_out_put(o, "backup: recorderd is not running (%s); try again\n",
			   rec ? proc_state_name(rec->state) : "?");
		return 1;
	}
	if (catalog_unusable(s)) {
		kp_out_put(o, "backup: recorderd cannot use its catalog: %s; nothing to back up\n", s->catalog.error);
		return 1;
	}
	struct backup b = {.s = s, .x = x, .o = o};
	static char manifest[8192];
	int catalog_fd = -1;
	int code = 1;
	if (prepare(&b, x->fds[0], req->args[0], &catalog_fd, manifest, sizeof manifest) == 0) {
		kp_Envelope env = kp_Envelope_init_zero;
		env.which_msg = kp_Envelope_backup_request_tag;
		code = control_relay(s, &env, &env.msg.backup_request.id, ticket, o, catalog_fd, manifest);
	}
	for (unsigned i = 0; i < b.nfds; i++)
		close(b.fds[i]);
	if (code == CONTROL_PENDING)
		kp_info("backup to %s: credentials and configuration copied; recorderd copies the catalog",
			req->args[0]);
	else
		kp_warn("backup to %s failed: %.*s", req->args[0], (int)strcspn(o->buf, "\n"), o->buf);
	return code;
}
