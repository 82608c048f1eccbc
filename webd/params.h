/* Query parameters of the data routes, checked: each reader answers the request with
 * 400 {"code":"bad_parameter"} and returns -1 when the parameter is malformed (or
 * missing when required), else returns 1 (present) or 0 (absent, *v left as it was). */
#ifndef KP_WEBD_PARAMS_H
#define KP_WEBD_PARAMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "webd.h"

/* Unix milliseconds (a non-negative integer). */
int webd_param_ms(struct web_req *r, const char *name, bool required, int64_t *v);
/* A duration: integer milliseconds, or an integer with a unit s, m, h or d ("6h"). */
int webd_param_duration(struct web_req *r, const char *name, int64_t *v);
/* "main" or "0" -> 0, "sub" or "1" -> 1. */
int webd_param_stream(struct web_req *r, const char *name, bool required, int32_t *v);
int webd_param_uint(struct web_req *r, const char *name, uint32_t max, uint32_t *v);
int webd_param_str(struct web_req *r, const char *name, bool required, char *buf, size_t cap);

#endif
