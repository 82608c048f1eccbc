/* keeppeekd's side of configuration plans (config_plan.c): the control commands
 * config-plan (make a plan against the file as it is now) and config-apply (check a plan
 * against the file, write the result atomically keeping the previous file as
 * FILE.bak, and reload only the workers that read a changed key). Only keeppeekd
 * writes the configuration; keeppeekctl and webd ask. */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config_keys.h"
#include "config_plan.h"
#include "log.h"
#include "supervisor.h"

static char file_buf[KP_CONFIG_FILE_MAX + 1];
static char cand_buf[KP_CONFIG_FILE_MAX + 1];
char config_plan_buf[KP_PLAN_MAX_BYTES + 1];

/* Up to max bytes of fd from its start; -EFBIG beyond. */
static ssize_t read_all(int fd, char *buf, size_t max)
{
	size_t got = 0;
	for (;;) {
		ssize_t n = pread(fd, buf + got, max + 1 - got, (off_t)got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		got += (size_t)n;
		if (got > max)
			return -EFBIG;
	}
	buf[got] = '\0';
	return (ssize_t)got;
}

static ssize_t read_config(const char *path, char *buf)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t n = read_all(fd, buf, KP_CONFIG_FILE_MAX);
	close(fd);
	return n;
}

/* path written through path.new: same owner and mode as the file it replaces, synced,
 * renamed over it, the directory synced. */
static int replace_file(const char *path, const struct stat *like, const char *text, size_t len)
{
	char tmp[4200];
	if ((size_t)snprintf(tmp, sizeof tmp, "%s.new", path) >= sizeof tmp)
		return -ENAMETOOLONG;
	unlink(tmp);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return -errno;
	int r = 0;
	if (geteuid() == 0 && fchown(fd, like->st_uid, like->st_gid) < 0)
		r = -errno;
	if (r == 0 && fchmod(fd, like->st_mode & 07777) < 0)
		r = -errno;
	for (size_t off = 0; r == 0 && off < len;) {
		ssize_t n = write(fd, text + off, len - off);
		if (n < 0 && errno != EINTR)
			r = -errno;
		else if (n > 0)
			off += (size_t)n;
	}
	if (r == 0 && fsync(fd) < 0)
		r = -errno;
	if (close(fd) < 0 && r == 0)
		r = -errno;
	if (r == 0 && rename(tmp, path) < 0)
		r = -errno;
	if (r < 0) {
		unlink(tmp);
		return r;
	}
	char dir[4200];
	snprintf(dir, sizeof dir, "%s", path);
	int dfd = open(dirname(dir), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	r = fsync(dfd) < 0 ? -errno : 0;
	close(dfd);
	return r;
}

static int no_file(struct supervisor *s, struct kp_out *o)
{
	if (s->config_path[0])
		return 0;
	kp_out_put(o, "keeppeekd runs without a configuration file (--demo): there is nothing to change\n");
	return 1;
}

/* The plan of args (see supervisor.h) into config_plan_buf. */
int config_plan_args(struct supervisor *s, pb_size_t argc, const char (*args)[1024], char *why, size_t whylen,
		     bool *usage)
{
	static struct plan_request rq;
	memset(&rq, 0, sizeof rq);
	*usage = false;
	const char *kind = argc ? args[0] : "";
	if (!strcmp(kind, "edit") && argc >= 2) {
		rq.kind = PLAN_EDIT;
		snprintf(rq.targets, sizeof rq.targets, "%s", args[1]);
	} else if ((!strcmp(kind, "add") || !strcmp(kind, "remove")) && argc >= 2 &&
		   strlen(args[1]) <= KP_CAMERA_NAME_MAX) {
		rq.kind = kind[0] == 'a' ? PLAN_ADD_CAMERA : PLAN_REMOVE_CAMERA;
		snprintf(rq.camera, sizeof rq.camera, "%s", args[1]);
	} else {
		*usage = true;
		snprintf(why, whylen, "a plan is edit TARGETS KEY=VALUE..., add NAME KEY=VALUE... or remove NAME");
		return -1;
	}
	if (argc - 2 > KP_PLAN_MAX_FIELDS) {
		snprintf(why, whylen, "a plan sets at most %d fields", KP_PLAN_MAX_FIELDS);
		return -1;
	}
	for (pb_size_t i = 2; i < argc; i++)
		if (plan_field_parse(args[i], &rq.fields[rq.nfields++], why, whylen) < 0) {
			*usage = true;
			return -1;
		}
	ssize_t n = read_config(s->config_path, file_buf);
	if (n < 0) {
		snprintf(why, whylen, "%s: cannot read it: %s", s->config_path, strerror((int)-n));
		return -1;
	}
	/* The file as last planned on, parsed: a file that has not changed since is not
	 * loaded again (the UI plans several changes in a row). */
	static struct kp_config cached;
	static struct kp_config_errors errs;
	static char cached_digest[65];
	char digest[65];
	plan_digest(file_buf, (size_t)n, digest);
	bool hit = !strcmp(digest, cached_digest);
	if (!hit) {
		cached_digest[0] = '\0';
		if (kp_config_load_string(s->config_path, file_buf, &cached, &errs) == 0)
			memcpy(cached_digest, digest, sizeof digest);
	}
	int len = plan_make(file_buf, (size_t)n, cached_digest[0] ? &cached : NULL, &rq, config_plan_buf, why, whylen);
	return len < 0 ? -1 : len;
}

int config_plan_command(struct supervisor *s, const kp_ControlRequest *req, struct kp_out *o)
{
	if (no_file(s, o))
		return 1;
	char why[KP_CONF_MAX_ERRORS * 256 + 256];
	bool usage;
	int len = config_plan_args(s, req->args_count, req->args, why, sizeof why, &usage);
	if (len < 0) {
		kp_out_put(o, "%s\n", why);
		return usage ? 2 : 1;
	}
	kp_out_put(o, "%.*s", len, config_plan_buf);
	return 0;
}

/* The processes whose configuration a change of users (enum kp_key_users) touches. */
static unsigned reload_mask(unsigned users)
{
	unsigned mask = 0;
	if (users & KP_USER_INGESTD)
		mask |= 1u << kp_Peer_PEER_INGESTD;
	if (users & KP_USER_RECORDERD)
		mask |= 1u << kp_Peer_PEER_RECORDERD;
	if (users & KP_USER_WEBD)
		mask |= 1u << kp_Peer_PEER_WEBD;
	if (users & KP_USER_RTCD)
		mask |= 1u << kp_Peer_PEER_RTCD;
	if (users & KP_USER_TRANSCODER)
		mask |= 1u << kp_Peer_PEER_TRANSCODER;
	return mask;
}

/* See supervisor.h. */
int config_apply_plan(struct supervisor *s, const char *plan, size_t plen, char *msg, size_t msglen)
{
	struct stat st;
	if (stat(s->config_path, &st) < 0) {
		int e = errno;
		snprintf(msg, msglen, "%s: %s", s->config_path, strerror(e));
		return -e;
	}
	ssize_t n = read_config(s->config_path, file_buf);
	if (n < 0) {
		snprintf(msg, msglen, "%s: cannot read it: %s", s->config_path, strerror((int)-n));
		return (int)n;
	}
	char why[KP_CONF_MAX_ERRORS * 256 + 256];
	struct conf_text t = {.p = cand_buf, .cap = KP_CONFIG_FILE_MAX};
	unsigned users = 0;
	int r = plan_apply(file_buf, (size_t)n, plan, plen, &t, &users, why, sizeof why);
	if (r < 0) {
		snprintf(msg, msglen, "plan refused: %s", why);
		kp_warn("config apply refused: %.*s", (int)strcspn(why, "\n"), why);
		return r;
	}
	char bak[4200];
	snprintf(bak, sizeof bak, "%s.bak", s->config_path);
	r = replace_file(bak, &st, file_buf, (size_t)n);
	if (r == 0)
		r = replace_file(s->config_path, &st, t.p, t.len);
	if (r < 0) {
		snprintf(msg, msglen, "writing %s failed: %s; nothing was changed", s->config_path, strerror(-r));
		kp_err("config apply: writing %s failed: %s", s->config_path, strerror(-r));
		return r;
	}
	kp_notice("config apply: %s written (the previous one is %s)", s->config_path, bak);
	char reload[4096];
	r = supervisor_reload_some(s, reload_mask(users), reload, sizeof reload);
	snprintf(msg, msglen, "%s written (previous: %s)\n%.*s", s->config_path, bak, (int)strcspn(reload, "\n"),
		 reload);
	return r < 0 ? r : 0;
}

/* config-apply with the plan file's descriptor. */
int config_apply_command(struct supervisor *s, const kp_ControlRequest *req, const struct control_extra *x,
			 struct kp_out *o)
{
	if (no_file(s, o))
		return 1;
	if (req->args_count || x->nfds != 1) {
		kp_out_put(o, "config-apply wants the plan as one descriptor and no arguments\n");
		return 2;
	}
	ssize_t plen = read_all(x->fds[0], config_plan_buf, KP_PLAN_MAX_BYTES);
	if (plen < 0) {
		kp_out_put(o, "reading the plan failed: %s\n",
			   plen == -EFBIG ? "it is larger than a plan can be" : strerror((int)-plen));
		return 1;
	}
	char msg[8192];
	int r = config_apply_plan(s, config_plan_buf, (size_t)plen, msg, sizeof msg);
	kp_out_put(o, "%s\n", msg);
	return r < 0 ? 1 : 0;
}
