/* Search terms of an event: its label names (lower-cased, whole), and each attribute
 * value lower-cased, whole (when it fits) and split into words (runs of ASCII letters
 * and digits and of non-ASCII bytes). Deduplicated, at most REC_TERMS_MAX. Also the
 * words of a search query, and whether an event's terms match them (every word a prefix
 * of some term). Pure; unit-tested by test_rec_events.c. */
#ifndef KP_REC_EVENT_TERMS_H
#define KP_REC_EVENT_TERMS_H

#include "keeppeek.pb.h"

#define REC_TERM_MAX        64 /* bytes; longer words are cut */
#define REC_TERMS_MAX       256
#define REC_QUERY_WORDS_MAX 8

struct rec_terms {
	unsigned n;
	char t[REC_TERMS_MAX][REC_TERM_MAX + 1];
};

void rec_event_terms(const kp_EventRecord *ev, struct rec_terms *ret);
/* The words of q (lower-cased); -E2BIG beyond REC_QUERY_WORDS_MAX words. */
int rec_query_words(const char *q, struct rec_terms *ret);
/* Lower-cases s into out (at most REC_TERM_MAX bytes). */
void rec_term_lower(const char *s, char out[REC_TERM_MAX + 1]);
/* Whether every word is a prefix of at least one term. */
int rec_terms_match(const struct rec_terms *terms, const struct rec_terms *words);
/* Whether some label of ev has this (lower-cased) name. */
int rec_event_has_label(const kp_EventRecord *ev, const char *label_lower);

#endif
