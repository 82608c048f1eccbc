/* Logging: "name[pid]: level: message", one write(2) per line so lines from several
 * processes sharing stderr never interleave. */
#include "log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char log_name[32] = "keeppeek";
static enum kp_log_level log_max = KP_LOG_INFO;
static int log_journal;

void kp_log_init(const char *name)
{
	snprintf(log_name, sizeof log_name, "%s", name);
	log_journal = getenv("JOURNAL_STREAM") != NULL;
	const char *lvl = getenv("KEEPPEEK_DEBUG");
	if (lvl && *lvl && strcmp(lvl, "0") != 0)
		log_max = KP_LOG_DEBUG;
}

void kp_log_set_level(enum kp_log_level max)
{
	log_max = max;
}

static const char *level_name(enum kp_log_level level)
{
	switch (level) {
	case KP_LOG_ERR:
		return "error";
	case KP_LOG_WARNING:
		return "warning";
	case KP_LOG_NOTICE:
		return "notice";
	case KP_LOG_INFO:
		return "info";
	case KP_LOG_DEBUG:
		return "debug";
	}
	return "?";
}

void kp_log(enum kp_log_level level, const char *fmt, ...)
{
	if (level > log_max)
		return;
	char line[2048];
	int n;
	if (log_journal)
		n = snprintf(line, sizeof line, "<%d>%s[%d]: %s: ", (int)level, log_name, (int)getpid(),
			     level_name(level));
	else
		n = snprintf(line, sizeof line, "%s[%d]: %s: ", log_name, (int)getpid(), level_name(level));
	if (n < 0)
		return;
	va_list ap;
	va_start(ap, fmt);
	int m = vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
	va_end(ap);
	if (m < 0)
		return;
	size_t len = (size_t)n + (size_t)m;
	if (len > sizeof line - 2)
		len = sizeof line - 2;
	for (size_t i = (size_t)n; i < len; i++)
		if (line[i] == '\n')
			line[i] = ' ';
	line[len++] = '\n';
	if (write(STDERR_FILENO, line, len) < 0)
		return;
}

/* For signal handlers: no stdio, no allocation. */
void kp_log_signal_safe(const char *msg)
{
	char line[256];
	size_t n = 0;
	for (const char *p = log_name; *p && n < 64; p++)
		line[n++] = *p;
	char digits[12];
	int d = 0;
	for (unsigned pid = (unsigned)getpid(); d == 0 || pid; pid /= 10)
		digits[d++] = (char)('0' + pid % 10);
	line[n++] = '[';
	while (d)
		line[n++] = digits[--d];
	line[n++] = ']';
	line[n++] = ':';
	line[n++] = ' ';
	for (const char *p = msg; *p && n < sizeof line - 1; p++)
		line[n++] = *p;
	line[n++] = '\n';
	if (write(STDERR_FILENO, line, n) < 0)
		return;
}
