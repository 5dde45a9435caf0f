/* The dashboard's static files (see include/gl/static.h). */
#include "gl/static.h"
#include "gl/log.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

struct gl_static {
	struct gl_static_file *files; /* sorted by path */
	size_t n, cap;
	size_t bytes;
};

static const struct {
	const char *ext;
	const char *mime;
	int text; /* worth gzipping */
} mime_table[] = {
	{"html", "text/html; charset=utf-8", 1},
	{"js", "text/javascript; charset=utf-8", 1},
	{"mjs", "text/javascript; charset=utf-8", 1},
	{"css", "text/css; charset=utf-8", 1},
	{"json", "application/json", 1},
	{"map", "application/json", 1},
	{"svg", "image/svg+xml", 1},
	{"txt", "text/plain; charset=utf-8", 1},
	{"md", "text/markdown; charset=utf-8", 1},
	{"csv", "text/csv; charset=utf-8", 1},
	{"webmanifest", "application/manifest+json", 1},
	{"ico", "image/x-icon", 1},
	{"png", "image/png", 0},
	{"jpg", "image/jpeg", 0},
	{"jpeg", "image/jpeg", 0},
	{"gif", "image/gif", 0},
	{"webp", "image/webp", 0},
	{"woff2", "font/woff2", 0},
	{"woff", "font/woff", 0},
};

static int mime_index(const char *name)
{
	const char *dot = strrchr(name, '.'), *slash = strrchr(name, '/');
	if (!dot || (slash && dot < slash))
		return -1;
	for (size_t i = 0; i < GL_ARRAY_LEN(mime_table); i++)
		if (!strcasecmp(dot + 1, mime_table[i].ext))
			return (int)i;
	return -1;
}

const char *gl_static_mime(const char *name)
{
	int i = mime_index(name);
	return i < 0 ? "application/octet-stream" : mime_table[i].mime;
}

/* Skips optional whitespace. */
static const char *ows(const char *p)
{
	while (*p == ' ' || *p == '\t')
		p++;
	return p;
}

int gl_static_accepts_gzip(const char *h)
{
	/* "gzip;q=0" is a refusal, "*" admits gzip unless gzip is listed with q=0 */
	int star = 0, gzip = -1;
	for (const char *p = h; p && *p;) {
		const char *end = strchr(p, ',');
		size_t n = end ? (size_t)(end - p) : strlen(p);
		const char *tok, *semi;
		size_t tn;
		double q = 1.0;
		char buf[64];
		if (n >= sizeof buf)
			n = sizeof buf - 1;
		memcpy(buf, p, n);
		buf[n] = '\0';
		tok = ows(buf);
		semi = strchr(tok, ';');
		tn = semi ? (size_t)(semi - tok) : strlen(tok);
		while (tn && (tok[tn - 1] == ' ' || tok[tn - 1] == '\t'))
			tn--;
		if (semi) {
			const char *qs = ows(semi + 1);
			if ((qs[0] == 'q' || qs[0] == 'Q') && ows(qs + 1)[0] == '=')
				q = strtod(ows(ows(qs + 1) + 1), NULL);
		}
		if ((tn == 4 && !strncasecmp(tok, "gzip", 4)) || (tn == 6 && !strncasecmp(tok, "x-gzip", 6)))
			gzip = q > 0;
		else if (tn == 1 && tok[0] == '*')
			star = q > 0;
		if (!end)
			break;
		p = end + 1;
	}
	return gzip >= 0 ? gzip : star;
}

int gl_static_etag_matches(const char *h, const char *etag)
{
	size_t en = strlen(etag);
	for (const char *p = h; p && *p;) {
		const char *end = strchr(p, ',');
		size_t n;
		p = ows(p);
		n = end ? (size_t)(end - p) : strlen(p);
		while (n && (p[n - 1] == ' ' || p[n - 1] == '\t'))
			n--;
		if (n == 1 && p[0] == '*')
			return 1;
		if (n > 2 && p[0] == 'W' && p[1] == '/') {
			p += 2;
			n -= 2;
		}
		if (n == en && !memcmp(p, etag, n))
			return 1;
		if (!end)
			break;
		p = end + 1;
	}
	return 0;
}

static int cmp_file(const void *a, const void *b)
{
	return strcmp(((const struct gl_static_file *)a)->path, ((const struct gl_static_file *)b)->path);
}

static void make_etag(const unsigned char *data, size_t len, const char *suffix, char *out, size_t n)
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;
	char hex[33];
	EVP_Digest(data, len, md, &mdlen, EVP_sha256(), NULL);
	for (int i = 0; i < 16; i++)
		snprintf(hex + 2 * i, 3, "%02x", md[i]);
	snprintf(out, n, "\"%s%s\"", hex, suffix);
}

/* gzip at the best level: done once per file, so the cost is at start only. */
static int gzip_bytes(const unsigned char *in, size_t len, unsigned char **out, size_t *out_len)
{
	z_stream z;
	uLong cap = compressBound((uLong)len) + 32;
	unsigned char *buf;
	int zr;

	memset(&z, 0, sizeof z);
	if (deflateInit2(&z, Z_BEST_COMPRESSION, Z_DEFLATED, 15 + 16, 9, Z_DEFAULT_STRATEGY) != Z_OK)
		return -1;
	buf = gl_xmalloc(cap);
	z.next_in = (Bytef *)(uintptr_t)in;
	z.avail_in = (uInt)len;
	z.next_out = buf;
	z.avail_out = (uInt)cap;
	zr = deflate(&z, Z_FINISH);
	deflateEnd(&z);
	if (zr != Z_STREAM_END) {
		free(buf);
		return -1;
	}
	*out = buf;
	*out_len = cap - z.avail_out;
	return 0;
}

static int read_all(int fd, const char *path, size_t size, unsigned char **out, struct gl_err *err)
{
	unsigned char *buf = gl_xmalloc(size ? size : 1);
	size_t got = 0;
	while (got < size) {
		ssize_t k = read(fd, buf + got, size - got);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			free(buf);
			return gl_err_set(err, GL_EIO, "%s: %s", path, k < 0 ? strerror(errno) : "file shrank while read");
		}
		got += (size_t)k;
	}
	*out = buf;
	return 0;
}

static int add_file(struct gl_static *s, int dirfd, const char *name, const char *fs_path, const char *url_path,
		    struct gl_err *err)
{
	struct gl_static_file f;
	struct stat st;
	int fd, rc = 0, mi;

	memset(&f, 0, sizeof f);
	/* O_NOFOLLOW: a symlink planted after the directory scan still never opens */
	fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return gl_err_set(err, GL_EIO, "%s: %s", fs_path, strerror(errno));
	if (fstat(fd, &st) || !S_ISREG(st.st_mode))
		goto out; /* not a regular file: not served */
	if (s->n == GL_STATIC_MAX_FILES || s->bytes + (size_t)st.st_size > GL_STATIC_MAX_BYTES) {
		rc = gl_err_set(err, GL_ERANGE, "%s: the web directory has more than %d files or %u bytes", fs_path,
				GL_STATIC_MAX_FILES, GL_STATIC_MAX_BYTES);
		goto out;
	}
	if ((rc = read_all(fd, fs_path, (size_t)st.st_size, &f.data, err)))
		goto out;
	f.len = (size_t)st.st_size;
	f.path = gl_xstrdup(url_path);
	mi = mime_index(name);
	f.mime = gl_static_mime(name);
	make_etag(f.data, f.len, "", f.etag, sizeof f.etag);
	if (mi >= 0 && mime_table[mi].text && f.len > 256 && gzip_bytes(f.data, f.len, &f.gz, &f.gz_len) == 0 &&
	    f.gz_len >= f.len) {
		free(f.gz);
		f.gz = NULL;
	}
	if (f.gz)
		make_etag(f.data, f.len, "-gz", f.etag_gz, sizeof f.etag_gz);
	if (s->n == s->cap) {
		s->cap = s->cap ? s->cap * 2 : 32;
		s->files = gl_xrealloc(s->files, s->cap * sizeof *s->files);
	}
	s->files[s->n++] = f;
	s->bytes += f.len;
out:
	close(fd);
	return rc;
}

static int walk(struct gl_static *s, int dirfd, const char *fs_dir, const char *url_dir, int depth, struct gl_err *err)
{
	DIR *d;
	struct dirent *e;
	int rc = 0;

	if (depth > 16)
		return gl_err_set(err, GL_ERANGE, "%s: directories nested too deep", fs_dir);
	d = fdopendir(dirfd);
	if (!d) {
		close(dirfd);
		return gl_err_set(err, GL_EIO, "%s: %s", fs_dir, strerror(errno));
	}
	while (!rc && (e = readdir(d))) {
		char fs_path[4096], url_path[2048];
		struct stat st;
		/* dotfiles (and . and ..) are never part of the site, nor an npm
		 * work tree left by scripts/vendor-web.sh */
		if (e->d_name[0] == '.' || !strcmp(e->d_name, "node_modules"))
			continue;
		if ((size_t)snprintf(fs_path, sizeof fs_path, "%s/%s", fs_dir, e->d_name) >= sizeof fs_path ||
		    (size_t)snprintf(url_path, sizeof url_path, "%s/%s", url_dir, e->d_name) >= sizeof url_path)
			continue;
		if (fstatat(dirfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW))
			continue;
		if (S_ISDIR(st.st_mode)) {
			int sub = openat(dirfd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (sub < 0)
				continue;
			rc = walk(s, sub, fs_path, url_path, depth + 1, err);
		} else if (S_ISREG(st.st_mode)) {
			rc = add_file(s, dirfd, e->d_name, fs_path, url_path, err);
		}
	}
	closedir(d);
	return rc;
}

int gl_static_load(const char *dir, struct gl_static **out, struct gl_err *err)
{
	struct gl_static *s = gl_xcalloc(1, sizeof *s);
	int fd, rc;

	*out = NULL;
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		rc = gl_err_set(err, errno == ENOENT || errno == ENOTDIR ? GL_ENOTFOUND : GL_EIO, "server.web_dir %s: %s",
				dir, strerror(errno));
		goto out;
	}
	if ((rc = walk(s, fd, dir, "", 0, err)))
		goto out;
	if (s->n)
		gl_qsort(s->files, s->n, sizeof *s->files, cmp_file);
out:
	if (rc) {
		gl_static_free(s);
		return rc;
	}
	*out = s;
	return 0;
}

void gl_static_free(struct gl_static *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n; i++) {
		free(s->files[i].path);
		free(s->files[i].data);
		free(s->files[i].gz);
	}
	free(s->files);
	free(s);
}

size_t gl_static_count(const struct gl_static *s)
{
	return s ? s->n : 0;
}

const struct gl_static_file *gl_static_find(const struct gl_static *s, const char *url_path)
{
	char buf[2048];
	struct gl_static_file key;
	size_t n;

	if (!s || !url_path || url_path[0] != '/')
		return NULL;
	n = strlen(url_path);
	if (url_path[n - 1] == '/') {
		if ((size_t)snprintf(buf, sizeof buf, "%sindex.html", url_path) >= sizeof buf)
			return NULL;
		url_path = buf;
	}
	key.path = (char *)(uintptr_t)url_path;
	return s->n ? gl_bsearch(&key, s->files, s->n, sizeof *s->files, cmp_file) : NULL;
}
