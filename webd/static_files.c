/* webd's static files, the HTTP core's fallback for GET/HEAD that no route matches (a
 * path under /api/ gets 404): the browser UI under www_dir (the installed
 * directory, or the source tree's www/ when run from a build tree), with a MIME type by
 * extension, a strong ETag from size and modification time, Cache-Control: no-cache
 * (revalidate: answers are 304 while unchanged), and precompressed .br/.gz variants when
 * they exist and the client accepts them. "/" and directories serve their index.html;
 * a path without an extension that names no file serves /index.html (client routing). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "webd.h"

static char www[4096];

void webd_static_init(const char *www_dir)
{
	snprintf(www, sizeof www, "%s", www_dir);
	if (!www[0])
		kp_warn("no www directory configured: the browser UI is not served");
	else if (access(www, R_OK | X_OK) < 0)
		kp_warn("www directory %s: %s", www, strerror(errno));
	else
		kp_info("serving the browser UI from %s", www);
}

static const char *mime_of(const char *path)
{
	static const struct {
		const char *ext, *type;
	} types[] = {
	    {".html", "text/html; charset=utf-8"},
	    {".js", "text/javascript; charset=utf-8"},
	    {".mjs", "text/javascript; charset=utf-8"},
	    {".css", "text/css; charset=utf-8"},
	    {".json", "application/json"},
	    {".webmanifest", "application/manifest+json"},
	    {".svg", "image/svg+xml"},
	    {".png", "image/png"},
	    {".jpg", "image/jpeg"},
	    {".jpeg", "image/jpeg"},
	    {".gif", "image/gif"},
	    {".webp", "image/webp"},
	    {".ico", "image/vnd.microsoft.icon"},
	    {".woff2", "font/woff2"},
	    {".woff", "font/woff"},
	    {".txt", "text/plain; charset=utf-8"},
	    {".map", "application/json"},
	    {".wasm", "application/wasm"},
	};
	const char *dot = strrchr(path, '.');
	const char *slash = strrchr(path, '/');
	if (dot && (!slash || dot > slash))
		for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
			if (strcasecmp(dot, types[i].ext) == 0)
				return types[i].type;
	return "application/octet-stream";
}

static bool accepts(const struct web_req *r, const char *coding)
{
	const char *ae = web_req_header(r, "accept-encoding");
	if (!ae)
		return false;
	size_t n = strlen(coding);
	for (const char *p = ae; (p = strcasestr(p, coding)); p += n) {
		bool start = p == ae || p[-1] == ' ' || p[-1] == ',';
		const char *e = p + n;
		if (!start || (*e && *e != ',' && *e != ';' && *e != ' '))
			continue;
		while (*e == ' ')
			e++;
		if (!strncmp(e, ";q=0", 4) && (!e[4] || e[4] == ',' || !strncmp(e + 4, ".0", 2)))
			return false;
		return true;
	}
	return false;
}

static int open_regular(const char *path, struct stat *st)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	if (fstat(fd, st) < 0 || !S_ISREG(st->st_mode)) {
		int e = S_ISDIR(st->st_mode) ? -EISDIR : -ENOENT;
		close(fd);
		return e;
	}
	return fd;
}

void webd_static_serve(struct web_req *r)
{
	const char *p = web_req_path(r);
	if (strncmp(p, "/api/", 5) == 0) {
		web_reply_error(r, 404, "not_found", "no route %s", p);
		return;
	}
	if (!www[0]) {
		web_reply_error(r, 404, "not_found", "no browser UI installed");
		return;
	}
	char path[4096 + 600];
	bool dir = p[strlen(p) - 1] == '/';
	if (strlen(p) > 512) {
		web_reply_error(r, 404, "not_found", "no such file");
		return;
	}
	snprintf(path, sizeof path, "%s%s%s", www, p, dir ? "index.html" : "");
	struct stat st;
	int fd = open_regular(path, &st);
	if (fd == -EISDIR) {
		snprintf(path, sizeof path, "%s%s/index.html", www, p);
		fd = open_regular(path, &st);
	} else if (fd == -ENOENT && !strchr(strrchr(p, '/'), '.')) {
		snprintf(path, sizeof path, "%s/index.html", www);
		fd = open_regular(path, &st);
	}
	if (fd < 0) {
		if (fd != -ENOENT && fd != -ELOOP)
			kp_warn("serving %s: %s", path, strerror(-fd));
		web_reply_error(r, 404, "not_found", "no such file");
		return;
	}
	const char *type = mime_of(path);
	const char *coding = NULL;
	static const char *const codings[][2] = {{"br", ".br"}, {"gzip", ".gz"}};
	for (size_t i = 0; i < 2 && !coding; i++) {
		if (!accepts(r, codings[i][0]))
			continue;
		char zpath[sizeof path + 4];
		snprintf(zpath, sizeof zpath, "%s%s", path, codings[i][1]);
		struct stat zst;
		int zfd = open_regular(zpath, &zst);
		if (zfd < 0)
			continue;
		close(fd);
		fd = zfd;
		st = zst;
		coding = codings[i][0];
	}
	char etag[80];
	snprintf(etag, sizeof etag, "\"%llx-%llx%s%s\"", (unsigned long long)st.st_size,
		 (unsigned long long)st.st_mtim.tv_sec * 1000000000ull + (unsigned long long)st.st_mtim.tv_nsec,
		 coding ? "-" : "", coding ? coding : "");
	/* The UI loads nothing from elsewhere (snapshots arrive as blob: URLs, the MSE
	 * fallback's MediaSource as a blob: media URL) and is framed by no one; nosniff is on
	 * every answer already. */
	static const char csp[] =
	    "Content-Security-Policy: default-src 'self'; img-src 'self' blob:; media-src 'self' blob:; "
	    "frame-ancestors 'none'; base-uri 'none'; form-action 'self'\r\n";
	char extra[512];
	snprintf(extra, sizeof extra, "ETag: %s\r\nCache-Control: no-cache\r\nVary: Accept-Encoding\r\n%s%s%s%s", etag,
		 csp, coding ? "Content-Encoding: " : "", coding ? coding : "", coding ? "\r\n" : "");
	const char *inm = web_req_header(r, "if-none-match");
	if (inm && (strstr(inm, etag) || strcmp(inm, "*") == 0)) {
		close(fd);
		web_reply(r, 304, NULL, NULL, 0, extra);
		return;
	}
	if (web_stream_begin(r, 200, type, (uint64_t)st.st_size, extra) < 0) {
		close(fd);
		return;
	}
	if (web_req_method(r) == WEB_HEAD) {
		close(fd);
		web_stream_end(r);
		return;
	}
	web_stream_fd(r, fd, 0, (uint64_t)st.st_size);
	web_stream_end(r);
}
