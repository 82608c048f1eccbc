/* The catalog against the files on disk (see rebuild.h). */
#include "rebuild.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "catalog_verify.h"

#define DATA_FILE REC_CATALOG_DIR "/data.mdb"

static int ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);
	return n > m && !strcmp(s + n - m, suffix);
}

/* Whether dir (relative to dirfd) has an entry that is a directory holding a file
 * accepted by want, one level down (levels 2) or two (3). */
static int any_file(int dirfd, const char *dir, int levels, int (*want)(const char *name))
{
	int fd = openat(dirfd, dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT || errno == ENOTDIR ? 0 : -errno;
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -errno;
	}
	int found = 0;
	struct dirent *e;
	while (!found && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		if (levels > 1)
			found = any_file(fd, e->d_name, levels - 1, want);
		else
			found = want(e->d_name);
	}
	closedir(d);
	return found;
}

static int is_recording(const char *name)
{
	return ends_with(name, ".mp4");
}

static int is_event_file(const char *name)
{
	return ends_with(name, ".jpg") || ends_with(name, ".ev");
}

int rec_data_has_files(int data_dirfd)
{
	int r = any_file(data_dirfd, "recordings", 3, is_recording);
	return r ? r : any_file(data_dirfd, "events", 2, is_event_file);
}

int rec_catalog_assess(int data_dirfd, char *why, size_t cap)
{
	int fd = openat(data_dirfd, DATA_FILE, O_RDONLY | O_CLOEXEC);
	if (fd < 0 && errno != ENOENT) {
		int e = errno;
		snprintf(why, cap, "%s cannot be opened: %s", DATA_FILE, strerror(e));
		return -e;
	}
	struct cat_verify_report rep;
	int r = fd < 0 ? -ENOENT : cat_verify_fd(fd, 0, &rep);
	if (fd >= 0)
		close(fd);
	if (r == -ENOENT || r == -ENODATA) {
		int files = rec_data_has_files(data_dirfd);
		if (files == 0)
			return 0; /* a new catalog */
		if (files < 0) {
			snprintf(why, cap, "%s is %s and the data directory cannot be read: %s", DATA_FILE,
				 r == -ENOENT ? "missing" : "empty", strerror(-files));
			return files;
		}
		snprintf(why, cap, "%s is %s, but recordings or events are on disk (deleted or truncated to 0?)",
			 DATA_FILE, r == -ENOENT ? "missing" : "empty");
		return r;
	}
	if (r == -EBADMSG)
		snprintf(why, cap, "%s is damaged: %s", DATA_FILE, rep.why);
	else if (r < 0)
		snprintf(why, cap, "%s cannot be read: %s", DATA_FILE, strerror(-r));
	return r;
}
