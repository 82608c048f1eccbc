/* RFC 2617 Digest (MD5) responses for the test camera's RTSP authentication. */
#ifndef KP_CAM_RTSP_DIGEST_H
#define KP_CAM_RTSP_DIGEST_H

#include <stdbool.h>

#include "rtsp_request.h"

/* The expected response for method and the client's digest fields, given the password,
 * as 32 lower-case hex digits in out. Returns 0 or -EIO. */
int cam_digest_response(const struct rtsp_digest *d, const char *method, const char *password, char out[33]);

/* True when d answers our challenge (realm, nonce) for user/password and method. */
bool cam_digest_check(const struct rtsp_digest *d, const char *method, const char *user, const char *password,
		      const char *realm, const char *nonce);

#endif
