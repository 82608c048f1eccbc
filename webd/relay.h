/* Questions to recorderd on behalf of an HTTP request: the envelope goes out with an
 * answer id, and the CatalogReply pieces come back as the HTTP answer. recorderd
 * answers with a result code and records or bytes; here the result becomes the HTTP
 * status (webd_catalog_status), an error the JSON {"error": sentence, "code": code},
 * and records the JSON of docs/queries.md through the common renderer
 * (common/catalog_json.h), a piece at a time: an answer of one piece goes out with its
 * Content-Length, a longer one chunked as its pieces arrive. */
#ifndef KP_WEBD_RELAY_H
#define KP_WEBD_RELAY_H

#include <stddef.h>
#include <stdint.h>

#include "catalog_json.h"
#include "webd.h"

/* Sends env to recorderd after storing a fresh answer id through *id_field (a field of
 * env's message), and relays the answer to r; records are rendered as kind. On failure
 * r is answered (503). */
void webd_relay(struct web_req *r, kp_Envelope *env, uint32_t *id_field, enum catj_kind kind,
		const char *extra_headers);

/* Sends env with a fresh id to recorderd for a caller that reads the answer itself;
 * returns the id, or 0 with r answered (503). */
uint32_t webd_relay_send(struct web_req *r, kp_Envelope *env, uint32_t *id_field, const void *tail, size_t len,
			 webd_answer_cb cb, void *arg);
/* The same for one message named without an envelope (kp_frame_msg; id_field is in it). */
uint32_t webd_relay_send_msg(struct web_req *r, const struct kp_frame_msg *m, uint32_t *id_field, const void *tail,
			     size_t len, webd_answer_cb cb, void *arg);

/* Sends what is still corked and releases the batching handle (webd stopping). */
void webd_relay_close(void);

/* The HTTP status of a CatalogResult (502 for one this webd does not know). */
int webd_catalog_status(kp_CatalogResult result);
/* Answers r with the error of a CatalogReply that is not CATALOG_OK. */
void webd_relay_error(struct web_req *r, const kp_CatalogReply *q);

#endif
