/* keeppeekctl: the operator's command line. Talks to keeppeekd over its control socket
 * with the same framing as every other link; `config check` runs locally. Exit codes:
 * 0 ok, 1 failure, 2 usage. */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <termios.h>
#include <unistd.h>

#include "config.h"
#include "config_keys.h"
#include "ctl.h"
#include "ipc_frame.h"
#include "kp_build_config.h"
#include "kp_limits.h"

#define DEFAULT_SOCKET     "/run/keeppeek/control.sock"
#define CHECK_TIMEOUT_SECS 3600 /* a check reads every catalogued file */

enum out_mode {
	OUT_BY_CODE, /* stdout on success, stderr otherwise */
	OUT_STDOUT,  /* a report: stdout whatever the exit code */
};

static void usage(FILE *f)
{
	fprintf(f, "usage: keeppeekctl [-s PATH] [--json] COMMAND [ARGS]\n"
		   "commands:\n"
		   "  status                 workers, pids, states, restarts, memory\n"
		   "  cameras                every camera stream: state, codec, size, fps, counters\n"
		   "  restart WORKER         restart ingestd, recorderd, webd or rtcd\n"
		   "  reload                 re-read the configuration (like SIGHUP)\n"
		   "  config check FILE      validate a configuration file; starts nothing\n"
		   "  config show            the running configuration, secrets redacted\n"
		   "  config plan --cameras TARGETS --set KEY=VALUE... [-o FILE]\n"
		   "                         the change of up to 5 fields on up to 64 cameras\n"
		   "                         (names, globs, label:WORD) as a plan with its diff\n"
		   "  config apply FILE      apply a plan (refused if the file changed since)\n"
		   "  cameras discover       cameras on the local segments: Reolink (UID lookup) and\n"
		   "                         ONVIF (WS-Discovery), each with a URL to start from\n"
		   "  camera add NAME URL [--set KEY=VALUE...] [-o FILE]\n"
		   "  camera remove NAME [-o FILE]\n"
		   "  camera test URL        connect and wait for a keyframe, saving nothing\n"
		   "                         add or remove a camera now (or write the plan)\n"
		   "  config keys            every configuration key: section, name, type and range,\n"
		   "                         default, who reads it, what it is\n"
		   "  check [--repair | --rebuild]\n"
		   "                         verify the catalog against the recording files; --rebuild\n"
		   "                         builds a new one from them (recording stops meanwhile)\n"
		   "  coverage CAMERA STREAM [--from MS] [--to MS] [--bucket MS]\n"
		   "                         recorded time of a stream (exact ranges and buckets)\n"
		   "  keyframe CAMERA STREAM TIME_MS\n"
		   "                         the recorded keyframe at that time, Annex-B, to stdout\n"
		   "  events search [--camera C] [--from T] [--to T] [--label L] [--limit N]\n"
		   "                [--cursor X] [TERMS...]\n"
		   "                         events, newest first; T: Unix ms, ISO 8601 or -1h/-30m\n"
		   "  tier status            copies to the object store and deletes from it: under way,\n"
		   "                         waiting, done and failed\n"
		   "  version                client and daemon versions\n"
		   "  user add NAME --role admin|viewer [--password-file FILE]\n"
		   "  user passwd NAME [--password-file FILE]\n"
		   "                         password: first line of FILE, else one line of stdin\n"
		   "  user role NAME --role admin|viewer\n"
		   "                         change a user's role and end their sessions\n"
		   "  user del NAME          delete a user and end their sessions\n"
		   "  user list              users and roles\n"
		   "  token create --name NAME --role admin|viewer|publisher\n"
		   "                         a new API token, printed alone on stdout\n"
		   "  token revoke NAME      revoke an API token at once\n"
		   "  token list             token names, roles, creation times\n"
		   "  backup DIR [--media]   a consistent copy of the catalog, users, tokens and\n"
		   "                         configuration (and recordings) into a new DIR, live\n"
		   "  restore DIR [--data-dir DIR] [--config FILE | --no-config] [--force]\n"
		   "                         put a backup back; keeppeekd must be stopped\n");
}

static int read_full(int fd, void *buf, size_t len)
{
	size_t got = 0;
	while (got < len) {
		ssize_t n = read(fd, (char *)buf + got, len - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EPIPE;
		got += (size_t)n;
	}
	return 0;
}

/* send(2) without SIGPIPE: keeppeekd may close a connection at once (all its control
 * slots taken), and keeppeekctl must say so instead of dying silently. */
static int send_full(int fd, const void *buf, size_t len)
{
	size_t put = 0;
	while (put < len) {
		ssize_t n = send(fd, (const char *)buf + put, len - put, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		put += (size_t)n;
	}
	return 0;
}

/* The request frame, with fd (if not -1) attached to its first byte. */
static int send_request(int sock, const uint8_t *buf, size_t len, int fd)
{
	if (fd < 0)
		return send_full(sock, buf, len);
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(sizeof(int))];
	} ctrl;
	memset(&ctrl, 0, sizeof ctrl);
	struct iovec iov = {.iov_base = (void *)buf, .iov_len = len};
	struct msghdr msg = {
	    .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctrl.buf, .msg_controllen = sizeof ctrl.buf};
	struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &fd, sizeof fd);
	ssize_t n;
	do
		n = sendmsg(sock, &msg, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	return send_full(sock, buf + n, len - (size_t)n);
}

int ctl_exchange(const char *sock, const char *command, char **args, int nargs, bool json, bool quiet_connect,
		 int timeout_secs, int *ret_code, char **ret_text, size_t *ret_len)
{
	return ctl_exchange_fd(sock, command, args, nargs, json, quiet_connect, timeout_secs, -1, ret_code, ret_text,
			       ret_len);
}

int ctl_exchange_fd(const char *sock, const char *command, char **args, int nargs, bool json, bool quiet_connect,
		    int timeout_secs, int pass_fd, int *ret_code, char **ret_text, size_t *ret_len)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	if (strlen(sock) >= sizeof sa.sun_path) {
		fprintf(stderr, "keeppeekctl: socket path too long: %s\n", sock);
		return 1;
	}
	snprintf(sa.sun_path, sizeof sa.sun_path, "%s", sock);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
		if (!quiet_connect)
			fprintf(stderr, "keeppeekctl: cannot connect to %s: %s (is keeppeekd running?)\n", sock,
				strerror(errno));
		if (fd >= 0)
			close(fd);
		return 1;
	}
	struct timeval tv = {.tv_sec = timeout_secs};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	kp_Envelope env = kp_Envelope_init_zero;
	env.which_msg = kp_Envelope_control_request_tag;
	kp_ControlRequest *req = &env.msg.control_request;
	snprintf(req->command, sizeof req->command, "%s", command);
	req->json = json;
	env.fd_count = pass_fd >= 0;
	for (int i = 0; i < nargs; i++) {
		if (i >= 8 || strlen(args[i]) >= sizeof req->args[0]) {
			fprintf(stderr, "keeppeekctl: too many or too long arguments\n");
			close(fd);
			return 2;
		}
		snprintf(req->args[i], sizeof req->args[0], "%s", args[i]);
		req->args_count++;
	}
	static uint8_t buf[KP_FRAME_HEAD_MAX];
	size_t len;
	const char *reason = "?";
	int r = kp_frame_encode(&env, buf, sizeof buf, &len);
	if (r == 0)
		r = send_request(fd, buf, len, pass_fd);
	uint32_t env_len = 0;
	if (r == 0)
		r = read_full(fd, buf, 4);
	if (r == 0 && (r = kp_frame_header(buf, &env_len, &reason)) < 0)
		fprintf(stderr, "keeppeekctl: bad reply: %s\n", reason);
	if (r == 0)
		r = read_full(fd, buf, env_len);
	kp_Envelope reply;
	if (r == 0 && (r = kp_frame_decode(buf, env_len, kp_Peer_PEER_SUPERVISOR, kp_Peer_PEER_CONTROL,
					   KP_IPC_TAIL_MAX_CONTROL, &reply, &reason)) < 0)
		fprintf(stderr, "keeppeekctl: bad reply: %s\n", reason);
	char *text = NULL;
	if (r == 0 && reply.tail_len) {
		text = malloc(reply.tail_len);
		r = text ? read_full(fd, text, reply.tail_len) : -ENOMEM;
	}
	close(fd);
	if (r < 0) {
		if (r == -EPIPE || r == -ECONNRESET)
			fprintf(stderr,
				"keeppeekctl: keeppeekd closed the connection on %s before answering (it serves at "
				"most %d keeppeekctl connections at once; its log says why)\n",
				sock, KP_CONTROL_MAX_CLIENTS);
		else if (r != -EBADMSG && r != -EMSGSIZE && r != -EPERM)
			fprintf(stderr, "keeppeekctl: talking to %s failed: %s\n", sock, strerror(-r));
		free(text);
		return 1;
	}
	*ret_code = reply.msg.control_reply.exit_code;
	*ret_text = text;
	*ret_len = text ? reply.tail_len : 0;
	return 0;
}

static int call_with(const char *sock, const char *command, char **args, int nargs, bool json, bool quiet_connect,
		     int timeout_secs, enum out_mode mode)
{
	int code;
	char *text;
	size_t len;
	int r = ctl_exchange(sock, command, args, nargs, json, quiet_connect, timeout_secs, &code, &text, &len);
	if (r)
		return r;
	if (text)
		fwrite(text, 1, len, code && mode == OUT_BY_CODE ? stderr : stdout);
	free(text);
	return code;
}

static int call(const char *sock, const char *command, char **args, int nargs, bool json, bool quiet_connect)
{
	return call_with(sock, command, args, nargs, json, quiet_connect, CTL_REPLY_TIMEOUT_SECS, OUT_BY_CODE);
}

/* One line (without its newline) from path, or from stdin, prompting with echo off when
 * stdin is a terminal. */
static int read_password(const char *path, const char *user, char *buf, size_t len)
{
	FILE *f = path ? fopen(path, "re") : stdin;
	if (!f) {
		fprintf(stderr, "keeppeekctl: cannot open %s: %s\n", path, strerror(errno));
		return 1;
	}
	struct termios old, quiet;
	bool tty = !path && isatty(STDIN_FILENO) && tcgetattr(STDIN_FILENO, &old) == 0;
	if (tty) {
		fprintf(stderr, "password for %s: ", user);
		quiet = old;
		quiet.c_lflag &= ~(tcflag_t)ECHO;
		tcsetattr(STDIN_FILENO, TCSAFLUSH, &quiet);
	}
	char *got = fgets(buf, (int)len, f);
	if (tty) {
		tcsetattr(STDIN_FILENO, TCSAFLUSH, &old);
		fputc('\n', stderr);
	}
	if (path)
		fclose(f);
	if (!got) {
		fprintf(stderr, "keeppeekctl: no password given (one line on stdin, or --password-file FILE)\n");
		return 1;
	}
	buf[strcspn(buf, "\r\n")] = '\0';
	return 0;
}

/* user add|passwd|del|list and token create|revoke|list, sent as "user-add" etc.; the
 * password travels as the last argument over the control socket. */
static int auth_command(const char *sock, int n, char **rest, bool json)
{
	const char *what = n >= 2 ? rest[1] : "";
	const char *name = NULL, *role = NULL, *file = NULL, *positional = NULL;
	bool bad = false;
	for (int i = 2; i < n; i++) {
		const char **slot = !strcmp(rest[i], "--role")            ? &role
				    : !strcmp(rest[i], "--name")          ? &name
				    : !strcmp(rest[i], "--password-file") ? &file
									  : NULL;
		if (slot && i + 1 < n && !*slot)
			*slot = rest[++i];
		else if (!slot && rest[i][0] != '-' && !positional)
			positional = rest[i];
		else
			bad = true;
	}
	char command[32];
	snprintf(command, sizeof command, "%s-%s", rest[0], what);
	char *args[3];
	int nargs = 0;
	static char password[1024];
	bool user = !strcmp(rest[0], "user");
	if (user && (!strcmp(what, "add") || !strcmp(what, "passwd"))) {
		bool add = what[0] == 'a';
		if (bad || !positional || name || (add != (role != NULL)) ||
		    (add && strcmp(role, "admin") && strcmp(role, "viewer"))) {
			usage(stderr);
			return 2;
		}
		if (read_password(file, positional, password, sizeof password))
			return 1;
		args[nargs++] = (char *)positional;
		if (add)
			args[nargs++] = (char *)role;
		args[nargs++] = password;
	} else if (user && !strcmp(what, "role")) {
		if (bad || !positional || !role || name || file) {
			usage(stderr);
			return 2;
		}
		args[nargs++] = (char *)positional;
		args[nargs++] = (char *)role;
	} else if (!strcmp(what, "del") || !strcmp(what, "revoke")) {
		if (bad || !positional || name || role || file || user != (what[0] == 'd')) {
			usage(stderr);
			return 2;
		}
		args[nargs++] = (char *)positional;
	} else if (!user && !strcmp(what, "create")) {
		if (bad || !name || !role || positional || file) {
			usage(stderr);
			return 2;
		}
		args[nargs++] = (char *)name;
		args[nargs++] = (char *)role;
	} else if (strcmp(what, "list") || n != 2) {
		usage(stderr);
		return 2;
	}
	int r = call(sock, command, args, nargs, json, false);
	memset(password, 0, sizeof password);
	return r;
}

static int config_check(const char *path)
{
	static struct kp_config cfg;
	static struct kp_config_errors errs;
	int r = kp_config_load_file(path, &cfg, &errs);
	if (r < 0) {
		fputs(errs.text, stderr);
		return 1;
	}
	printf("%s: ok (%u cameras)\n", path, cfg.ncameras);
	return 0;
}

static int config_keys(void)
{
	static char buf[64 * 1024];
	int n = kp_config_keys_render(buf, sizeof buf);
	if (n < 0) {
		fprintf(stderr, "keeppeekctl: the key table does not fit in %zu bytes\n", sizeof buf);
		return 1;
	}
	fwrite(buf, 1, (size_t)n, stdout);
	return 0;
}

int main(int argc, char **argv)
{
	const char *sock = DEFAULT_SOCKET;
	bool json = false;
	enum { OPT_JSON = 256 };
	static const struct option longopts[] = {
	    {"json", no_argument, NULL, OPT_JSON},
	    {"socket", required_argument, NULL, 's'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	int c;
	while ((c = getopt_long(argc, argv, "+s:h", longopts, NULL)) != -1) {
		switch (c) {
		case 's':
			sock = optarg;
			break;
		case OPT_JSON:
			json = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	/* --json may also follow the command. */
	int n = 0;
	char *rest[32];
	for (int i = optind; i < argc; i++) {
		if (!strcmp(argv[i], "--json"))
			json = true;
		else if (n < 32)
			rest[n++] = argv[i];
		else {
			usage(stderr);
			return 2;
		}
	}
	if (n == 0) {
		usage(stderr);
		return 2;
	}
	const char *cmd = rest[0];
	if (!strcmp(cmd, "cameras") && n == 2 && !strcmp(rest[1], "discover"))
		return call(sock, "discover", NULL, 0, json, false);
	if (!strcmp(cmd, "status") || !strcmp(cmd, "reload") || !strcmp(cmd, "cameras")) {
		if (n != 1) {
			usage(stderr);
			return 2;
		}
		return call(sock, cmd, NULL, 0, json, false);
	}
	if (!strcmp(cmd, "restart")) {
		if (n != 2) {
			usage(stderr);
			return 2;
		}
		return call(sock, cmd, rest + 1, 1, json, false);
	}
	if (!strcmp(cmd, "config")) {
		if (n == 3 && !strcmp(rest[1], "check"))
			return config_check(rest[2]);
		if (n == 2 && !strcmp(rest[1], "keys"))
			return config_keys();
		if (n == 2 && !strcmp(rest[1], "show"))
			return call(sock, "config-show", NULL, 0, json, false);
		if (n >= 2 && (!strcmp(rest[1], "plan") || !strcmp(rest[1], "apply")))
			return ctl_config_change(sock, n - 1, rest + 1);
		usage(stderr);
		return 2;
	}
	if (!strcmp(cmd, "camera") && n == 3 && !strcmp(rest[1], "test"))
		return call(sock, "camera-test", rest + 2, 1, json, false);
	if (!strcmp(cmd, "camera") && n >= 2 && (!strcmp(rest[1], "add") || !strcmp(rest[1], "remove")))
		return ctl_config_change(sock, n - 1, rest + 1);
	if (!strcmp(cmd, "check")) {
		if (n > 2 || (n == 2 && strcmp(rest[1], "--repair") && strcmp(rest[1], "--rebuild"))) {
			usage(stderr);
			return 2;
		}
		return call_with(sock, cmd, rest + 1, n - 1, json, false, CHECK_TIMEOUT_SECS, OUT_STDOUT);
	}
	if (!strcmp(cmd, "coverage")) {
		if (n < 3) {
			usage(stderr);
			return 2;
		}
		return call(sock, cmd, rest + 1, n - 1, json, false);
	}
	if (!strcmp(cmd, "keyframe")) {
		if (n != 4) {
			usage(stderr);
			return 2;
		}
		if (json) {
			fprintf(stderr, "keeppeekctl: keyframe writes bytes; --json does not apply\n");
			return 2;
		}
		return call(sock, cmd, rest + 1, n - 1, false, false);
	}
	if (!strcmp(cmd, "tier")) {
		if (n != 2 || strcmp(rest[1], "status")) {
			usage(stderr);
			return 2;
		}
		return call(sock, "tier-status", NULL, 0, json, false);
	}
	if (!strcmp(cmd, "user") || !strcmp(cmd, "token"))
		return auth_command(sock, n, rest, json);
	if (!strcmp(cmd, "backup"))
		return ctl_backup(sock, n - 1, rest + 1, json);
	if (!strcmp(cmd, "restore"))
		return ctl_restore(sock, n - 1, rest + 1, json);
	if (!strcmp(cmd, "events"))
		return ctl_events(sock, n - 1, rest + 1, json);
	if (!strcmp(cmd, "version")) {
		if (n != 1) {
			usage(stderr);
			return 2;
		}
		if (json)
			printf("{\"client\":\"%s\"}\n", KP_VERSION);
		else
			printf("keeppeekctl %s\n", KP_VERSION);
		call(sock, "version", NULL, 0, json, true);
		return 0;
	}
	fprintf(stderr, "keeppeekctl: unknown command '%s'\n", cmd);
	usage(stderr);
	return 2;
}
