/* Questions to recorderd on behalf of an HTTP request: the envelope goes out with an
 * answer id, and the QueryReply pieces come back as the HTTP answer (a non-2xx status
 * as the JSON error {"error": sentence, "code": error_code}). */
#ifndef KP_WEBD_RELAY_H
#define KP_WEBD_RELAY_H

#include <stddef.h>
#include <stdint.h>

#include "webd.h"

/* Sends env to recorderd after storing a fresh answer id through *id_field (a field of
 * env's message), and relays the answer to r. On failure r is answered (503). */
void webd_relay(struct web_req *r, kp_Envelope *env, uint32_t *id_field, const void *tail, size_t len,
		const char *extra_headers);

/* Sends env with a fresh id to recorderd for a caller that reads the answer itself;
 * returns the id, or 0 with r answered (503). */
uint32_t webd_relay_send(struct web_req *r, kp_Envelope *env, uint32_t *id_field, const void *tail, size_t len,
			 webd_answer_cb cb, void *arg);

/* Answers r with the error of a non-2xx QueryReply piece (its tail is the sentence). */
void webd_relay_error(struct web_req *r, uint32_t status, const char *code, const uint8_t *tail, size_t len);

#endif
