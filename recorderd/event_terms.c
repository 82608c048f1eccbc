/* Search terms of events and queries (see event_terms.h). */
#include "event_terms.h"

#include <errno.h>
#include <string.h>

static int word_byte(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c >= 0x80;
}

static char lower(char c)
{
	return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
}

void rec_term_lower(const char *s, char out[REC_TERM_MAX + 1])
{
	size_t i = 0;
	for (; s[i] && i < REC_TERM_MAX; i++)
		out[i] = lower(s[i]);
	out[i] = '\0';
}

static void add(struct rec_terms *ts, const char *s, size_t len)
{
	if (!len || ts->n >= REC_TERMS_MAX)
		return;
	if (len > REC_TERM_MAX)
		len = REC_TERM_MAX;
	char t[REC_TERM_MAX + 1];
	for (size_t i = 0; i < len; i++)
		t[i] = lower(s[i]);
	t[len] = '\0';
	for (unsigned i = 0; i < ts->n; i++)
		if (!strcmp(ts->t[i], t))
			return;
	memcpy(ts->t[ts->n++], t, len + 1);
}

static void add_words(struct rec_terms *ts, const char *s)
{
	while (*s) {
		while (*s && !word_byte((unsigned char)*s))
			s++;
		const char *w = s;
		while (*s && word_byte((unsigned char)*s))
			s++;
		add(ts, w, (size_t)(s - w));
	}
}

void rec_event_terms(const kp_EventRecord *ev, struct rec_terms *ret)
{
	ret->n = 0;
	for (pb_size_t i = 0; i < ev->labels_count; i++)
		add(ret, ev->labels[i].name, strlen(ev->labels[i].name));
	for (pb_size_t i = 0; i < ev->attributes_count; i++) {
		size_t len = strlen(ev->attributes[i].value);
		if (len <= REC_TERM_MAX)
			add(ret, ev->attributes[i].value, len);
		add_words(ret, ev->attributes[i].value);
	}
}

int rec_query_words(const char *q, struct rec_terms *ret)
{
	ret->n = 0;
	while (*q) {
		while (*q && !word_byte((unsigned char)*q))
			q++;
		const char *w = q;
		while (*q && word_byte((unsigned char)*q))
			q++;
		if (q == w)
			continue;
		if (ret->n == REC_QUERY_WORDS_MAX)
			return -E2BIG;
		add(ret, w, (size_t)(q - w));
	}
	return 0;
}

int rec_terms_match(const struct rec_terms *terms, const struct rec_terms *words)
{
	for (unsigned w = 0; w < words->n; w++) {
		size_t len = strlen(words->t[w]);
		int found = 0;
		for (unsigned i = 0; i < terms->n && !found; i++)
			found = !strncmp(terms->t[i], words->t[w], len);
		if (!found)
			return 0;
	}
	return 1;
}

int rec_event_has_label(const kp_EventRecord *ev, const char *label_lower)
{
	for (pb_size_t i = 0; i < ev->labels_count; i++) {
		char l[REC_TERM_MAX + 1];
		rec_term_lower(ev->labels[i].name, l);
		if (!strcmp(l, label_lower))
			return 1;
	}
	return 0;
}
