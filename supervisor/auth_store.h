/* The credential files under data_dir/auth (the supervisor alone reads them): users
 * (name, role, scrypt hash) and API tokens (name, role, SHA-256 of the token, creation
 * time). Held in memory; every change rewrites its file atomically (temporary file,
 * fsync, rename, fsync of the directory) and is undone in memory when that fails. */
#ifndef KP_AUTH_STORE_H
#define KP_AUTH_STORE_H

#include <stdbool.h>
#include <stdint.h>

#include "auth_hash.h"
#include "keeppeek.pb.h"

#define AUTH_NAME_MAX   32 /* user and token names: [A-Za-z0-9._@-], not starting with . or - */
#define AUTH_MAX_USERS  256
#define AUTH_MAX_TOKENS 256

struct auth_user {
	char name[AUTH_NAME_MAX + 1];
	kp_Role role;
	char hash[AUTH_HASH_STR_MAX];
};

struct auth_token {
	char name[AUTH_NAME_MAX + 1];
	kp_Role role;
	uint8_t digest[AUTH_DIGEST_LEN];
	int64_t created_ms; /* Unix milliseconds */
};

struct auth_store {
	char dir[4096]; /* data_dir/auth */
	struct auth_user users[AUTH_MAX_USERS];
	unsigned nusers;
	struct auth_token tokens[AUTH_MAX_TOKENS];
	unsigned ntokens;
};

/* Creates data_dir/auth (0700) when missing and loads both files (missing files are empty
 * tables). The directory and files must belong to this process's user and be closed to
 * group and others: a worker that can write data_dir cannot plant credentials. On
 * failure err says what and why. */
int auth_store_open(struct auth_store *st, const char *data_dir, char *err, size_t errlen);

bool auth_name_valid(const char *name);
const char *auth_role_name(kp_Role role);
/* "admin", "viewer" or "publisher" (tokens only); -EINVAL otherwise. */
int auth_role_parse(const char *s, kp_Role *ret);

const struct auth_user *auth_store_user(const struct auth_store *st, const char *name);
/* -EEXIST, -ENOSPC (table full), -EINVAL (name or role), or the write's error. */
int auth_store_user_add(struct auth_store *st, const char *name, kp_Role role, const char *hash);
/* -ENOENT when there is no such user. */
int auth_store_user_set_hash(struct auth_store *st, const char *name, const char *hash);
/* A user's new role (admin or viewer), written before it is kept. -ENOENT. */
int auth_store_user_set_role(struct auth_store *st, const char *name, kp_Role role);
int auth_store_user_del(struct auth_store *st, const char *name);

/* The token whose digest matches token's (compared in constant time), or NULL. */
const struct auth_token *auth_store_token_match(const struct auth_store *st, const char *token);
int auth_store_token_add(struct auth_store *st, const char *name, kp_Role role, const uint8_t *digest,
			 int64_t created_ms);
int auth_store_token_del(struct auth_store *st, const char *name);

#endif
