/* Events committed before the GOP holding their start was indexed (a camera alarm is
 * stored at once, while its GOP is still being written): linked to their keyframe when
 * the fragment that covers their start commits, in the same transaction, so that every
 * event ends up with the links a published event gets at its own commit. */
#ifndef KP_REC_EVENT_LINK_H
#define KP_REC_EVENT_LINK_H

#include "catalog.h"

/* After cat_add_fragment(t, rec, f): links every event of rec's camera that starts
 * inside f and has no link for rec's stream to the keyframe at or before its start. */
int rec_event_link_fragment(struct cat_txn *t, const struct cat_recording *rec, const struct cat_fragment *f);

#endif
