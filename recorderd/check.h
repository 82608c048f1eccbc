/* keeppeekctl check: verifies the catalog against the media files. Every recording's
 * file exists; every fragment lies inside it, in sequence, without holes, and starts with
 * a fragment header; every keyframe range lies inside its fragment and its first picture
 * NAL unit (after the 4-byte length, past parameter sets and SEI) is an IDR (H.264) or
 * IRAP (H.265) slice; every keyframe row names such a fragment; the coverage summaries
 * and the byte total agree with the rows; every event's JPEG file exists with the size
 * the catalog records (repair: the event keeps its row, without JPEG) and its event
 * record exists (repair: written again from the row). Before all that,
 * the structure of the catalog's data file (catalog_verify.h): a damaged one is one
 * problem, and nothing else is read or repaired. With repair, the rows that point at missing or
 * wrong bytes are removed, coverage rebuilt and the byte total recounted in one
 * transaction, and the check runs again. Reads use one read transaction per stream, so
 * recording and group commits go on meanwhile. */
#ifndef KP_REC_CHECK_H
#define KP_REC_CHECK_H

#include <stdint.h>

struct cat;

#define REC_CHECK_MAX_REPAIRS 4096 /* per run; a later run repairs the rest */

struct rec_check_opts {
	int repair;
	const int *cancel; /* read atomically: non-zero stops the check early (-ECANCELED) */
	/* One line per problem (no newline), in the order found. */
	void (*problem)(void *arg, const char *line);
	void *arg;
};

struct rec_check_result {
	unsigned streams, recordings, fragments, keyframes, events;
	unsigned problems;  /* found by the (first) check */
	unsigned repaired;  /* rows removed or rewritten by repair */
	unsigned remaining; /* problems after repair; equal to problems without it */
	int damaged;        /* the data file's structure is damaged: nothing else was checked */
};

int rec_check(struct cat *cat, int data_dirfd, const struct rec_check_opts *o, struct rec_check_result *ret);

#endif
