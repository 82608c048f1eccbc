/* Checked readers of the data routes' query parameters. */
#include "params.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static int get(struct web_req *r, const char *name, bool required, char *buf, size_t cap)
{
	int rc = web_req_query(r, name, buf, cap);
	if (rc < 0) {
		web_reply_error(r, 400, "bad_parameter", "parameter %s is too long", name);
		return -1;
	}
	if (rc == 0 || buf[0] == 0) {
		if (required) {
			web_reply_error(r, 400, "bad_parameter", "parameter %s is required", name);
			return -1;
		}
		return 0;
	}
	return 1;
}

static int bad(struct web_req *r, const char *name, const char *what)
{
	web_reply_error(r, 400, "bad_parameter", "parameter %s must be %s", name, what);
	return -1;
}

static int parse_int(const char *s, int64_t *v, char **end)
{
	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	long long x = strtoll(s, end, 10);
	if (errno == ERANGE || x < 0)
		return -1;
	*v = x;
	return 0;
}

int webd_param_ms(struct web_req *r, const char *name, bool required, int64_t *v)
{
	char buf[32];
	int rc = get(r, name, required, buf, sizeof(buf));
	if (rc <= 0)
		return rc;
	char *end;
	int64_t x;
	if (parse_int(buf, &x, &end) < 0 || *end)
		return bad(r, name, "Unix milliseconds");
	*v = x;
	return 1;
}

int webd_param_duration(struct web_req *r, const char *name, int64_t *v)
{
	char buf[32];
	int rc = get(r, name, false, buf, sizeof(buf));
	if (rc <= 0)
		return rc;
	char *end;
	int64_t x, unit = 1;
	if (parse_int(buf, &x, &end) < 0)
		return bad(r, name, "milliseconds or a number with s, m, h or d");
	if (strcmp(end, "s") == 0)
		unit = 1000;
	else if (strcmp(end, "m") == 0)
		unit = 60 * 1000;
	else if (strcmp(end, "h") == 0)
		unit = 3600 * 1000;
	else if (strcmp(end, "d") == 0)
		unit = 86400 * 1000;
	else if (strcmp(end, "") != 0 && strcmp(end, "ms") != 0)
		return bad(r, name, "milliseconds or a number with s, m, h or d");
	if (x > INT64_MAX / unit)
		return bad(r, name, "a duration that fits");
	*v = x * unit;
	return 1;
}

int webd_param_stream(struct web_req *r, const char *name, bool required, int32_t *v)
{
	char buf[8];
	int rc = get(r, name, required, buf, sizeof(buf));
	if (rc <= 0)
		return rc;
	if (strcmp(buf, "main") == 0 || strcmp(buf, "0") == 0)
		*v = 0;
	else if (strcmp(buf, "sub") == 0 || strcmp(buf, "1") == 0)
		*v = 1;
	else
		return bad(r, name, "main or sub");
	return 1;
}

int webd_param_uint(struct web_req *r, const char *name, uint32_t max, uint32_t *v)
{
	char buf[16];
	int rc = get(r, name, false, buf, sizeof(buf));
	if (rc <= 0)
		return rc;
	char *end;
	int64_t x;
	if (parse_int(buf, &x, &end) < 0 || *end || x > max)
		return bad(r, name, "a small non-negative integer");
	*v = (uint32_t)x;
	return 1;
}

int webd_param_str(struct web_req *r, const char *name, bool required, char *buf, size_t cap)
{
	return get(r, name, required, buf, cap);
}
