/* tier-s3-probe: the S3 client (s3.h) from the command line, for the tests against a real
 * Ceph RADOS Gateway (test/integration/test_tier_s3.py): each command is one or a few
 * client calls, its outcome one line on stdout ("ok ..." or "error ERRNO-NAME why").
 * The store and credentials come from the environment (KP_S3_ENDPOINT, KP_S3_BUCKET,
 * KP_S3_ACCESS_KEY, KP_S3_SECRET; KP_S3_TIMEOUT_MS and KP_S3_LOW_SPEED_SECS optional).
 * Not installed. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "s3.h"

static const char *errname(int e)
{
	switch (-e) {
	case ETIMEDOUT:
		return "ETIMEDOUT";
	case ECONNREFUSED:
		return "ECONNREFUSED";
	case EIO:
		return "EIO";
	case EACCES:
		return "EACCES";
	case ENOENT:
		return "ENOENT";
	case EBADMSG:
		return "EBADMSG";
	case EPROTO:
		return "EPROTO";
	case E2BIG:
		return "E2BIG";
	case ERANGE:
		return "ERANGE";
	case EINVAL:
		return "EINVAL";
	default:
		return "EOTHER";
	}
}

static int fail(int e, const struct s3_result *res)
{
	printf("error %s %s\n", errname(e), res ? res->why : "");
	return 1;
}

static int read_file(const char *path, unsigned char **ret, size_t *ret_len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0) {
		fprintf(stderr, "tier-s3-probe: %s: %s\n", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -errno;
	}
	unsigned char *b = malloc((size_t)st.st_size + 1);
	size_t got = 0;
	while (b && got < (size_t)st.st_size) {
		ssize_t n = read(fd, b + got, (size_t)st.st_size - got);
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	close(fd);
	if (!b || got != (size_t)st.st_size) {
		free(b);
		return -EIO;
	}
	*ret = b;
	*ret_len = got;
	return 0;
}

/* Parts of part_size from file, numbers first..; stop after `stop` parts (0: all). */
static int send_parts(struct s3_client *c, const char *key, const char *id, const unsigned char *data, size_t len,
		      size_t part_size, const struct s3_part *have, size_t n_have, size_t stop, struct s3_part *parts,
		      size_t *ret_n, struct s3_result *res)
{
	size_t n = 0, sent = 0;
	for (size_t off = 0; off < len || (len == 0 && n == 0); off += part_size) {
		size_t plen = len - off < part_size ? len - off : part_size;
		uint32_t number = (uint32_t)(n + 1);
		const struct s3_part *old = NULL;
		for (size_t i = 0; i < n_have; i++)
			if (have[i].number == number)
				old = &have[i];
		parts[n].number = number;
		parts[n].size = plen;
		int r;
		if (old && old->size == plen) {
			/* The store's copy of this part must be ours: its ETag is our MD5. */
			s3_md5_hex(data + off, plen, parts[n].etag);
			if (strcmp(old->etag, parts[n].etag) != 0) {
				snprintf(res->why, sizeof(res->why), "part %u on the store differs", number);
				return -EBADMSG;
			}
			printf("part %u kept\n", number);
		} else {
			if (stop && sent == stop)
				break;
			r = s3_mpu_part(c, key, id, number, data + off, plen, parts[n].etag, res);
			if (r < 0)
				return r;
			sent++;
			printf("part %u sent\n", number);
		}
		fflush(stdout);
		n++;
		if (len == 0)
			break;
	}
	*ret_n = n;
	return 0;
}

int main(int argc, char **argv)
{
	struct s3_conf conf = {getenv("KP_S3_ENDPOINT"), "us-east-1", getenv("KP_S3_BUCKET"),
			       getenv("KP_S3_ACCESS_KEY"), getenv("KP_S3_SECRET")};
	struct s3_client *c;
	struct s3_result res = {0};
	char etag[S3_ETAG_MAX];
	int r;

	if (argc < 2) {
		fprintf(stderr, "usage: tier-s3-probe mkbucket|put|upload|resume|get|head|delete|abort ARGS\n");
		return 2;
	}
	if (getenv("KP_S3_TIMEOUT_MS"))
		conf.timeout_ms = strtol(getenv("KP_S3_TIMEOUT_MS"), NULL, 10);
	if (getenv("KP_S3_LOW_SPEED_SECS"))
		conf.low_speed_secs = strtol(getenv("KP_S3_LOW_SPEED_SECS"), NULL, 10);
	if ((r = s3_client_new(&conf, &c)) < 0)
		return fail(r, NULL);
	const char *cmd = argv[1];
	if (strcmp(cmd, "mkbucket") == 0) {
		r = s3_bucket_create(c, &res);
		if (r == 0)
			printf("ok\n");
	} else if (strcmp(cmd, "put") == 0 && argc == 4) {
		unsigned char *data;
		size_t len;
		if ((r = read_file(argv[3], &data, &len)) < 0)
			return fail(r, NULL);
		r = s3_put(c, argv[2], data, len, etag, &res);
		free(data);
		if (r == 0)
			printf("ok etag=%s\n", etag);
	} else if ((strcmp(cmd, "upload") == 0 && (argc == 5 || argc == 6)) ||
		   (strcmp(cmd, "resume") == 0 && argc == 6)) {
		int resume = cmd[0] == 'r';
		unsigned char *data;
		size_t len, n = 0, n_have = 0;
		size_t part_size = strtoul(argv[4], NULL, 10);
		char id[S3_UPLOAD_ID_MAX];
		static struct s3_part parts[S3_PARTS_MAX], have[S3_PARTS_MAX];
		if ((r = read_file(argv[3], &data, &len)) < 0)
			return fail(r, NULL);
		if (part_size == 0 || part_size > S3_PART_MAX || len / part_size >= S3_PARTS_MAX) {
			free(data);
			printf("error EINVAL part size\n");
			return 1;
		}
		if (resume) {
			snprintf(id, sizeof(id), "%s", argv[5]);
			r = s3_mpu_list(c, argv[2], id, have, S3_PARTS_MAX, &n_have, &res);
			if (r == 0)
				printf("listed %zu parts\n", n_have);
			if (r == -ENOENT) {
				/* The upload is gone: completed by a request whose answer never came? */
				for (size_t off = 0; off < len || n == 0; off += part_size, n++) {
					size_t plen = len - off < part_size ? len - off : part_size;
					parts[n].number = (uint32_t)(n + 1);
					parts[n].size = plen;
					s3_md5_hex(data + off, plen, parts[n].etag);
					if (len == 0) {
						n++;
						break;
					}
				}
				r = s3_mpu_completed(c, argv[2], parts, n, etag, &res);
				free(data);
				s3_client_free(c);
				if (r < 0)
					return fail(r, &res);
				printf("ok etag=%s parts=%zu completed before\n", etag, n);
				return 0;
			}
		} else {
			r = s3_mpu_initiate(c, argv[2], id, &res);
			if (r == 0)
				printf("upload-id %s\n", id);
		}
		fflush(stdout);
		size_t stop = !resume && argc == 6 ? strtoul(argv[5], NULL, 10) : 0;
		if (r == 0)
			r = send_parts(c, argv[2], id, data, len, part_size, have, n_have, stop, parts, &n, &res);
		if (r == 0 && stop) {
			printf("ok stopped after %zu parts\n", stop);
		} else if (r == 0) {
			r = s3_mpu_complete(c, argv[2], id, parts, n, etag, &res);
			if (r == 0)
				printf("ok etag=%s parts=%zu\n", etag, n);
		}
		free(data);
	} else if (strcmp(cmd, "get") == 0 && argc == 6) {
		uint64_t off = strtoull(argv[3], NULL, 10);
		size_t len = strtoul(argv[4], NULL, 10), got = 0;
		unsigned char *buf = malloc(len ? len : 1);
		if (!buf)
			return fail(-ENOMEM, NULL);
		r = s3_get(c, argv[2], off, len, buf, &got, &res);
		if (r == 0) {
			FILE *f = fopen(argv[5], "wb");
			if (!f || fwrite(buf, 1, got, f) != got || fclose(f) != 0) {
				free(buf);
				printf("error EIO cannot write %s\n", argv[5]);
				return 1;
			}
			printf("ok bytes=%zu\n", got);
		}
		free(buf);
	} else if (strcmp(cmd, "head") == 0 && argc == 3) {
		uint64_t size;
		r = s3_head(c, argv[2], &size, etag, &res);
		if (r == 0)
			printf("ok size=%" PRIu64 " etag=%s\n", size, etag);
	} else if (strcmp(cmd, "delete") == 0 && argc == 3) {
		r = s3_delete(c, argv[2], &res);
		if (r == 0)
			printf("ok\n");
	} else if (strcmp(cmd, "abort") == 0 && argc == 4) {
		r = s3_mpu_abort(c, argv[2], argv[3], &res);
		if (r == 0)
			printf("ok\n");
	} else {
		fprintf(stderr, "tier-s3-probe: unknown command or wrong arguments\n");
		s3_client_free(c);
		return 2;
	}
	s3_client_free(c);
	return r < 0 ? fail(r, &res) : 0;
}
