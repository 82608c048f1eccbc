/* The HTTP core's own ceilings, beyond SPEC section 12's (common/kp_limits.h), as the
 * man page's LIMITS section states them (keeppeek-webd(8); test/lint/man-limits ties the
 * two together). The defences against slow and greedy clients
 * (docs/decisions/0002-slow-clients.md):
 * - at most WEB_CONNECTIONS_PER_ADDRESS anonymous connections (not yet shown valid
 *   credentials) per IPv4 address or IPv6 /64; more are accepted and closed at once;
 * - when all KP_HTTP_MAX_CONNECTIONS are open, a new connection evicts the unfinished
 *   anonymous connection that has waited longest; refused only when none is left;
 * - a request head must be complete within WEB_HEAD_SECS of its first byte (of the
 *   accept, on a new connection); an idle keep-alive connection waits
 *   KP_HTTP_TIMEOUT_SECS for it;
 * - a request body must average WEB_BODY_MIN_RATE bytes/s after WEB_BODY_GRACE_SECS;
 * - a request takes a handler slot only once authenticated with its whole body read;
 *   the last WEB_HANDLERS_RESERVE_SIGNED_IN slots are for requests with a principal,
 *   the WEB_HANDLERS_RESERVE_HEALTH before them also for WEB_HEALTH routes (/healthz);
 * - every refusal or cut is counted and logged at most once per WEB_LOG_INTERVAL_MS
 *   per ceiling. */
#ifndef KP_WEB_LIMITS_H
#define KP_WEB_LIMITS_H

#include "http_parse.h"
#include "kp_limits.h"

#define CONN_IN_CAP       (HTTP_HEAD_MAX + 64)
#define STREAM_READ_SIZE  (128 * 1024)
#define STREAM_HIGH_WATER (512 * 1024)
#define STREAM_MAX_PIECES 1024

#define WEB_CONNECTIONS_PER_ADDRESS    64
#define WEB_HEAD_SECS                  10
#define WEB_BODY_GRACE_SECS            10
#define WEB_BODY_MIN_RATE              (16 * 1024)
#define WEB_HANDLERS_RESERVE_SIGNED_IN 8
#define WEB_HANDLERS_RESERVE_HEALTH    8
#define WEB_LOG_INTERVAL_MS            10000

#endif
