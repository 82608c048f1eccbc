/* Start-up sweep of unreferenced event JPEGs (see event_sweep.h). */
#include "event_sweep.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "catalog_events.h"
#include "jobs.h"
#include "log.h"
#include "tier_local.h"

static int ends_with(const char *s, const char *suffix, size_t *ret_stem)
{
	size_t n = strlen(s), m = strlen(suffix);
	if (n <= m || strcmp(s + n - m, suffix))
		return 0;
	*ret_stem = n - m;
	return 1;
}

/* Whether events/<dir>/<name> is the JPEG, thumbnail, record or JPEG's sidecar (its
 * object's key, when the JPEG went to the store) of a stored revision. */
static int referenced(struct cat_txn *t, const char *dir, const char *name)
{
	size_t stem;
	int record = ends_with(name, ".ev", &stem);
	if (!record && !ends_with(name, ".thumb.jpg", &stem) && !ends_with(name, ".jpg", &stem) &&
	    !ends_with(name, ".jpg" REC_TIER_SIDECAR, &stem))
		return 0;
	char id[CAT_EVENT_ID_MAX + 16];
	if (stem >= sizeof id)
		return 0;
	memcpy(id, name, stem);
	id[stem] = '\0';
	char *dash = strrchr(id, '-');
	if (!dash || !dash[1])
		return 0;
	*dash = '\0';
	char *end;
	unsigned long rev = strtoul(dash + 1, &end, 10);
	if (*end || !rev)
		return 0;
	struct cat_event_row row;
	int r = cat_event_get(t, id, &row, NULL);
	if (r < 0 && r != -ENOENT)
		return 1; /* the catalog cannot say now: kept */
	if (r < 0 || row.revision != rev || (!row.jpeg_len && !record))
		return 0;
	char want[CAT_PATH_MAX];
	rec_event_jpeg_path(id, (uint32_t)rev, want, sizeof want);
	return !strncmp(want + 7, dir, 2); /* the hash directory matches too */
}

int rec_events_sweep(struct cat *cat, int data_dirfd, struct rec_sweep_result *ret)
{
	memset(ret, 0, sizeof *ret);
	int top = openat(data_dirfd, "events", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (top < 0)
		return errno == ENOENT ? 0 : -errno;
	DIR *d = fdopendir(top);
	if (!d) {
		close(top);
		return -errno;
	}
	struct cat_txn *t;
	int r = cat_begin(cat, 0, &t);
	struct dirent *e;
	while (r == 0 && (e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.' || strlen(e->d_name) != 2)
			continue;
		int sub = openat(top, e->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		DIR *sd = sub >= 0 ? fdopendir(sub) : NULL;
		if (!sd) {
			if (sub >= 0)
				close(sub);
			continue;
		}
		struct dirent *f;
		while ((f = readdir(sd)) != NULL) {
			if (f->d_name[0] == '.')
				continue;
			ret->files_checked++;
			if (referenced(t, e->d_name, f->d_name))
				continue;
			size_t stem;
			if (ends_with(f->d_name, REC_TIER_SIDECAR, &stem)) { /* its object is deleted */
				char jpeg[CAT_PATH_MAX];
				snprintf(jpeg, sizeof jpeg, "events/%s/%.*s", e->d_name, (int)stem, f->d_name);
				int u = rec_tier_sidecar_retire(data_dirfd, jpeg, NULL);
				if (u == 0)
					ret->files_removed++;
				else
					kp_warn("events/%s/%s: retiring an unreferenced sidecar failed: %s", e->d_name,
						f->d_name, strerror(-u));
				continue;
			}
			if (unlinkat(sub, f->d_name, 0) == 0)
				ret->files_removed++;
			else
				kp_warn("events/%s/%s: removing an unreferenced file failed: %s", e->d_name, f->d_name,
					strerror(errno));
		}
		closedir(sd);
	}
	if (r == 0)
		cat_abort(t);
	closedir(d);
	return r;
}
