/* keeppeekctl's configuration changes: `config plan`, `config apply`, `camera add` and
 * `camera remove`. The plan is made and applied by keeppeekd (config_apply.c); this
 * file only turns the command line into its arguments, writes the plan where asked and
 * hands a plan file over as a descriptor. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ctl.h"
#include "kp_io.h"
#include "kp_limits.h"

/* Room for the kind, the target or name, and the fields. */
#define PLAN_ARGS (2 + KP_PLAN_MAX_FIELDS)

static int usage(void)
{
	fprintf(stderr, "usage: keeppeekctl config plan --cameras TARGETS --set KEY=VALUE... [-o FILE]\n"
			"       keeppeekctl config apply FILE\n"
			"       keeppeekctl camera add NAME URL [--set KEY=VALUE...] [-o FILE]\n"
			"       keeppeekctl camera remove NAME [-o FILE]\n");
	return 2;
}

/* Sends the plan in a descriptor (a file, or a memfd for a plan applied at once). */
static int apply_fd(const char *sock, int fd)
{
	int code;
	char *text;
	size_t len;
	int r = ctl_exchange_fd(sock, "config-apply", NULL, 0, false, false, CTL_REPLY_TIMEOUT_SECS, fd, &code, &text,
				&len);
	if (r)
		return r;
	if (text)
		fwrite(text, 1, len, code ? stderr : stdout);
	free(text);
	return code;
}

/* The diff lines ("# ...") of a plan, for the terminal. */
static void print_diff(const char *plan, size_t len)
{
	for (const char *s = plan; s < plan + len;) {
		const char *nl = memchr(s, '\n', (size_t)(plan + len - s));
		size_t n = nl ? (size_t)(nl - s) + 1 : (size_t)(plan + len - s);
		if (s[0] == '#' && s[1] == ' ' && strncmp(s, "# KeepPeek", 10))
			fwrite(s + 2, 1, n - 2, stdout);
		s += n;
	}
}

/* Asks for a plan; writes it to out (or stdout), or applies it at once when apply. */
static int make_plan(const char *sock, char **args, int nargs, const char *out, bool apply)
{
	int code;
	char *text;
	size_t len;
	int r =
	    ctl_exchange(sock, "config-plan", args, nargs, false, false, CTL_REPLY_TIMEOUT_SECS, &code, &text, &len);
	if (r)
		return r;
	if (code) {
		if (text)
			fwrite(text, 1, len, stderr);
		free(text);
		return code;
	}
	if (!out && !apply) {
		fwrite(text, 1, len, stdout);
		free(text);
		return 0;
	}
	print_diff(text, len);
	int fd = out ? open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600)
		     : memfd_create("keeppeek-plan", MFD_CLOEXEC);
	if (fd < 0 || kp_write_all(fd, text, len) < 0) {
		fprintf(stderr, "keeppeekctl: writing the plan to %s failed: %s\n", out ? out : "memory",
			strerror(errno));
		if (fd >= 0)
			close(fd);
		free(text);
		return 1;
	}
	free(text);
	if (out) {
		close(fd);
		printf("plan written to %s; apply it with: keeppeekctl config apply %s\n", out, out);
		return 0;
	}
	r = apply_fd(sock, fd);
	close(fd);
	return r;
}

/* --set KEY=VALUE (repeated), --cameras TARGETS and -o FILE from args[from..n). */
static int options(int n, char **args, int from, char **fields, int *nfields, const char **cameras, const char **out)
{
	for (int i = from; i < n; i++) {
		bool has = i + 1 < n;
		if (!strcmp(args[i], "--set") && has) {
			if (*nfields == KP_PLAN_MAX_FIELDS) {
				fprintf(stderr, "keeppeekctl: a plan sets at most %d fields\n", KP_PLAN_MAX_FIELDS);
				return 1;
			}
			fields[(*nfields)++] = args[++i];
		} else if (!strcmp(args[i], "--cameras") && has && cameras) {
			*cameras = args[++i];
		} else if (!strcmp(args[i], "-o") && has) {
			*out = args[++i];
		} else {
			return usage();
		}
	}
	return 0;
}

int ctl_config_change(const char *sock, int n, char **args)
{
	char *pa[PLAN_ARGS];
	int np = 0, nf = 0, r;
	const char *cameras = NULL, *out = NULL;
	char *fields[KP_PLAN_MAX_FIELDS];
	if (n == 2 && !strcmp(args[0], "apply")) {
		int fd = open(args[1], O_RDONLY | O_CLOEXEC);
		if (fd < 0) {
			fprintf(stderr, "keeppeekctl: %s: %s\n", args[1], strerror(errno));
			return 1;
		}
		r = apply_fd(sock, fd);
		close(fd);
		return r;
	}
	if (n >= 1 && !strcmp(args[0], "plan")) {
		if ((r = options(n, args, 1, fields, &nf, &cameras, &out)) != 0)
			return r;
		if (!cameras || !nf) {
			fprintf(stderr, "keeppeekctl: config plan needs --cameras and at least one --set\n");
			return 2;
		}
		pa[np++] = "edit";
		pa[np++] = (char *)cameras;
	} else if (n >= 3 && !strcmp(args[0], "add")) {
		static char url[1100];
		if ((r = options(n, args, 3, fields, &nf, NULL, &out)) != 0)
			return r;
		if (nf == KP_PLAN_MAX_FIELDS) {
			fprintf(stderr, "keeppeekctl: camera add takes at most %d --set besides the URL\n",
				KP_PLAN_MAX_FIELDS - 1);
			return 1;
		}
		snprintf(url, sizeof url, "url=%s", args[2]);
		pa[np++] = "add";
		pa[np++] = args[1];
		pa[np++] = url;
	} else if (n >= 2 && !strcmp(args[0], "remove")) {
		if ((r = options(n, args, 2, fields, &nf, NULL, &out)) != 0)
			return r;
		if (nf)
			return usage();
		pa[np++] = "remove";
		pa[np++] = args[1];
	} else {
		return usage();
	}
	for (int i = 0; i < nf; i++)
		pa[np++] = fields[i];
	/* config plan writes a plan; camera add/remove apply theirs at once unless -o. */
	return make_plan(sock, pa, np, out, strcmp(args[0], "plan") != 0 && !out);
}
