/* What keeppeekctl's command modules share: one request over the control socket, and
 * the commands that live in their own files (ctl_events.c). */
#ifndef KP_CTL_H
#define KP_CTL_H

#include <stdbool.h>
#include <stddef.h>

#define CTL_REPLY_TIMEOUT_SECS 15

/* Sends command with args and reads the reply: 0 with *ret_code (the daemon's exit
 * code) and *ret_text (malloc'ed, *ret_len bytes, not NUL-terminated; NULL when empty),
 * or keeppeekctl's exit code after a message on stderr. */
int ctl_exchange(const char *sock, const char *command, char **args, int nargs, bool json, bool quiet_connect,
		 int timeout_secs, int *ret_code, char **ret_text, size_t *ret_len);

/* The same with a descriptor passed along (SCM_RIGHTS), if pass_fd is not -1. */
int ctl_exchange_fd(const char *sock, const char *command, char **args, int nargs, bool json, bool quiet_connect,
		    int timeout_secs, int pass_fd, int *ret_code, char **ret_text, size_t *ret_len);

/* `backup DIR [--media]` and `restore DIR ...` (args after the command; ctl_backup.c). */
int ctl_backup(const char *sock, int n, char **args, bool json);
int ctl_restore(const char *sock, int n, char **args, bool json);

/* `events search ...` (args after "events"). */
int ctl_events(const char *sock, int n, char **args, bool json);

/* `config plan|apply ...` and `camera add|remove ...` (args after "config" or "camera":
 * plan, apply, add, remove; ctl_config.c). */
int ctl_config_change(const char *sock, int n, char **args);

#endif
