/* The stored media of one stream for [from, to) as byte ranges of recording files, for
 * MediaOpen (docs/queries.md): it starts at the fragment of the keyframe at or before
 * from (or the first keyframe after from when from lies in a gap). For export: the init
 * segment of that file and its contiguous fragments (at most REC_MEDIA_MAX_EXPORT),
 * which concatenate into one valid MP4 once rec_media_export_headers moved them to 0; it stops at the end of the file
 * (the next file has its own init segment and timeline) and keeps the asked length: starting up to one GOP before from,
 * it ends at the first fragment boundary at or after to - (from - keyframe). For playback: each file's init segment,
 * then one range per fragment, across files, at most REC_MEDIA_MAX_PIECES fragments. */
#ifndef KP_REC_MEDIA_H
#define KP_REC_MEDIA_H

#include <stdint.h>

#include "catalog.h"

#define REC_MEDIA_MAX_PIECES 512
#define REC_MEDIA_MAX_FILES  64
#define REC_MEDIA_MAX_EXPORT 256 /* fragments of one export answer */

struct rec_piece {
	unsigned rec; /* index into the span's recordings */
	int init;
	int hdr; /* export: bytes of the rebased headers buffer, not of the file */
	uint64_t off, len;
	int64_t start_ms, end_ms;
};

struct rec_span {
	int export;
	int64_t to_ms; /* fragments starting before this */
	uint32_t from_seq;
	struct cat_recording recs[REC_MEDIA_MAX_FILES];
	unsigned nrecs;
	struct rec_piece p[REC_MEDIA_MAX_PIECES + REC_MEDIA_MAX_FILES];
	unsigned n, fragments;
	int full; /* more was recorded than one answer holds */
};

/* to_ms 0: to the newest indexed fragment. -ENOENT when nothing is recorded there. */
int rec_media_span(struct cat_txn *t, uint32_t stream_id, int64_t from_ms, int64_t to_ms, int for_export,
		   struct rec_span *ret);
/* Export: the file's fragments start on its own timeline, which an export from the
 * middle must not keep (players count the duration from time 0). Each fragment piece
 * becomes its header (prft + moof + mdat header) read from the file and moved to start
 * at 0 (fmp4_frag_rebase), as a range of *ret_buf (malloc'ed), then its samples as
 * a range of the file. */
int rec_media_export_headers(int data_dirfd, struct rec_span *s, uint8_t **ret_buf, size_t *ret_len);

#endif
