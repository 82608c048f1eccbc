/* The local side of a recording whose media went to the store (docs/tier.md): the
 * sidecar `<file>.tier` that says where its object is (written before the catalog marks
 * it remote, so that a catalog rebuilt from the files knows), the strip of the file to
 * its init segment and fragment headers (what check, rebuild and export headers read;
 * the samples are read back from the store), and the removal of a recording's files. */
#ifndef KP_REC_TIER_LOCAL_H
#define KP_REC_TIER_LOCAL_H

#include "catalog.h"

#define REC_TIER_CACHE_DIR   "tier-cache"   /* in data_dir: the read cache and the strip's work file */
#define REC_TIER_SIDECAR     ".tier"        /* appended to a recording's or event JPEG's path */
#define REC_TIER_DELETES_DIR "tier-deletes" /* in data_dir: sidecars of deleted event JPEGs */
/* The id of an event revision's JPEG in tierd's messages and the read cache: its seq with
 * the top bit set (recording ids are below). */
#define REC_TIER_EVENT_ID(seq) ((uint64_t)(seq) | (1ull << 63))
#define REC_TIER_IS_EVENT(id)  (((id) >> 63) != 0)

/* Writes (and syncs) path.tier with row's key, size and ETag, replacing any (written
 * beside and renamed over). An event JPEG's sidecar with an empty ETag is an intent: the
 * JPEG is being copied under that key, and is still local. */
int rec_tier_sidecar_write(int data_dirfd, const char *path, const struct cat_tier *row);
/* Reads path.tier into row (state CAT_TIER_REMOTE, key, size, etag); -ENOENT when there
 * is none, -EBADMSG when it does not parse. */
int rec_tier_sidecar_read(int data_dirfd, const char *path, struct cat_tier *row);
/* Replaces rec's file by a sparse copy of its init segment and fragment headers, of the
 * same size (written beside, synced, renamed over it: a reader holding the old file keeps
 * reading all of it). Reads the fragment rows in a transaction of its own. */
int rec_tier_strip(int data_dirfd, struct cat *cat, const struct cat_recording *rec);
/* Removes a deleted recording's file and its sidecar (ENOENT is success); -errno of the
 * file's removal. */
int rec_recording_unlink(int data_dirfd, const char *path);
/* Moves path's sidecar (an event JPEG's, whose revision is gone) to tier-deletes, named
 * after its object's key and synced, where tiering finds it and deletes the object (the
 * file then goes). 0 when path has no sidecar, or (only_key not NULL) one of another key;
 * one that does not parse, or whose key cannot name a file there, stays (-EBADMSG,
 * -EINVAL). */
int rec_tier_sidecar_retire(int data_dirfd, const char *path, const char *only_key);
/* Removes a file of a gone event revision (its JPEG, thumbnail or record) and retires its
 * sidecar (ENOENT is success); -errno of the file's removal. */
int rec_event_file_unlink(int data_dirfd, const char *path);

#endif
