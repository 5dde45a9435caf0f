/* Producing report files (see include/gl/reports.h). */
#include "gl/reports.h"
#include "gl/report.h"
#include "gl/config.h"
#include "gl/report_pdf.h"
#include "gl/report_style.h"
#include "gl/zip.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/sha.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

const char *const gl_reports_ctype[] = {"text/csv; charset=utf-8", "text/html; charset=utf-8", "application/pdf",
					"application/zip"};

int gl_reports_format_parse(const char *s, enum gl_settings_report_format *f, struct gl_err *err)
{
	if (!s || !strcmp(s, "csv"))
		*f = GL_SETTINGS_REPORT_CSV;
	else if (!strcmp(s, "html"))
		*f = GL_SETTINGS_REPORT_HTML;
	else if (!strcmp(s, "pdf"))
		*f = GL_SETTINGS_REPORT_PDF;
	else if (!strcmp(s, "zip"))
		*f = GL_SETTINGS_REPORT_ZIP;
	else
		return gl_err_set(err, GL_EINVAL, "format: '%s' is not csv, html, pdf or zip", s);
	return 0;
}

int gl_reports_share_parse(const char *s, enum gl_chargeback_share_idle *sh, struct gl_err *err)
{
	if (gl_chargeback_share_parse(s, sh))
		return gl_err_set(err, GL_EINVAL, "shareIdle: '%s' is not " GL_CHARGEBACK_SHARE_NAMES, s);
	return 0;
}

/* Every CSV table under its file name; the entries carry the month's first
 * second as their time, so a closed month zips to the same bytes. */
static int render_zip(const struct gl_sbmodel *sb, struct gl_strbuf *out, struct gl_err *err)
{
	struct gl_strbuf csv = GL_STRBUF_INIT;
	struct gl_zip z;
	int rc = 0;
	gl_zip_init(&z, out, sb->start_s);
	for (size_t t = 0; gl_report_tables[t] && !rc; t++) {
		char name[128];
		gl_strbuf_reset(&csv);
		if (gl_report_csv(sb, gl_report_tables[t], &csv)) {
			rc = gl_err_set(err, GL_EINVAL, "table: unknown table '%s'", gl_report_tables[t]);
			break;
		}
		gl_report_file_name(sb, gl_report_tables[t], "csv", name, sizeof name);
		rc = gl_zip_add(&z, name, csv.p, csv.len, err);
	}
	if (rc)
		gl_zip_abandon(&z);
	else
		gl_zip_finish(&z);
	gl_strbuf_fini(&csv);
	return rc;
}

/* Where the templates are: a relative reports.template_dir from the
 * working directory (as server.web_dir), else beside the binary, so the
 * default finds the repository's reports/ from build/gpuledger and an
 * installed PREFIX/share/gpuledger/reports from PREFIX/bin/gpuledger,
 * whatever directory the daemon was started in. */
static const char *template_dir(const char *dir, char *buf, size_t n)
{
	static const char *const beside[] = {"/../", "/../share/gpuledger/"};
	char exe[4096], probe[4200];
	ssize_t len;
	snprintf(probe, sizeof probe, "%s/showback.html", dir);
	if (dir[0] == '/' || !access(probe, R_OK) || (len = readlink("/proc/self/exe", exe, sizeof exe - 1)) <= 0)
		return dir;
	exe[len] = '\0';
	if (strrchr(exe, '/'))
		*strrchr(exe, '/') = '\0';
	for (size_t i = 0; i < sizeof beside / sizeof beside[0]; i++) {
		snprintf(buf, n, "%s%s%s", exe, beside[i], dir);
		snprintf(probe, sizeof probe, "%s/showback.html", buf);
		if (!access(probe, R_OK))
			return buf;
	}
	return dir; /* the error then names the configured directory */
}

/* HTML and PDF in the site's look, read at each rendering so an edited
 * template shows in the next report without a restart. */
static int render_styled(const struct gl_sbmodel *sb, enum gl_settings_report_format f, const struct gl_config *cfg,
			 int64_t generated_at_s, struct gl_strbuf *out, struct gl_err *err)
{
	struct gl_report_style st;
	char buf[4200];
	int rc = gl_report_style_load(template_dir(cfg->reports_template_dir, buf, sizeof buf),
				      cfg->reports_thousands_separator, cfg->reports_decimal_separator, &st, err);
	if (rc) {
		/* the site's files, not the request, are wrong: never a 400/404 */
		char msg[sizeof err->msg];
		snprintf(msg, sizeof msg, "%s", err->msg);
		return gl_err_set(err, GL_ECONFIG, "%s", msg);
	}
	if (f == GL_SETTINGS_REPORT_HTML)
		gl_report_html(sb, &st, generated_at_s, out);
	else
		rc = gl_report_pdf(sb, &st, generated_at_s, out, err);
	gl_report_style_fini(&st);
	return rc;
}

int gl_reports_render(const struct gl_sbmodel *sb, enum gl_settings_report_format f, const char *table,
		      const struct gl_config *cfg, int64_t generated_at_s, struct gl_strbuf *out, struct gl_err *err)
{
	switch (f) {
	case GL_SETTINGS_REPORT_CSV:
		if (gl_report_csv(sb, table ? table : "owners", out))
			return gl_err_set(err, GL_EINVAL, "table: unknown table '%s'", table);
		return 0;
	case GL_SETTINGS_REPORT_HTML:
	case GL_SETTINGS_REPORT_PDF:
		return render_styled(sb, f, cfg, generated_at_s, out, err);
	case GL_SETTINGS_REPORT_ZIP:
		return render_zip(sb, out, err);
	}
	return gl_err_set(err, GL_EINVAL, "format: unknown");
}

void gl_reports_sha256(const void *data, size_t n, char out[65])
{
	unsigned char md[SHA256_DIGEST_LENGTH];
	SHA256(data, n, md);
	for (size_t i = 0; i < sizeof md; i++)
		snprintf(out + 2 * i, 3, "%02x", md[i]);
}

int gl_reports_write_file(const char *dir, const char *name, const struct gl_strbuf *b, struct gl_err *err)
{
	char tmp[4096], path[4096];
	FILE *fp = NULL;
	int rc = 0, fd = -1;
	snprintf(path, sizeof path, "%s/%s", dir, name);
	/* a name no one can guess or plant beforehand (a symlink at a
	 * predictable .tmp name would have redirected the write), created
	 * exclusively (O_EXCL follows no symlink), then an atomic rename into
	 * place. Not mkstemp: its 0600 would have to be widened by hand, past
	 * the umask that decides who may read a report as any file we make. */
	for (int tries = 0; fd < 0 && tries < 100; tries++) {
		unsigned char rnd[6];
		if (getrandom(rnd, sizeof rnd, 0) != (ssize_t)sizeof rnd)
			return gl_err_set(err, GL_EIO, "%s: getrandom: %s", dir, strerror(errno));
		snprintf(tmp, sizeof tmp, "%s/.%s.%02x%02x%02x%02x%02x%02x", dir, name, rnd[0], rnd[1], rnd[2], rnd[3],
			 rnd[4], rnd[5]);
		fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
		if (fd < 0 && errno != EEXIST)
			return gl_err_set(err, GL_EIO, "%s: %s", tmp, strerror(errno));
	}
	if (fd < 0)
		return gl_err_set(err, GL_EIO, "%s: no free temporary name", tmp);
	if (!(fp = fdopen(fd, "wb"))) {
		rc = gl_err_set(err, GL_EIO, "%s: %s", tmp, strerror(errno));
		close(fd);
		goto out;
	}
	if (b->len && fwrite(b->p, 1, b->len, fp) != b->len)
		rc = gl_err_set(err, GL_EIO, "%s: %s", tmp, strerror(errno));
	if (fclose(fp) && !rc)
		rc = gl_err_set(err, GL_EIO, "%s: %s", tmp, strerror(errno));
	if (!rc && rename(tmp, path))
		rc = gl_err_set(err, GL_EIO, "%s: %s", path, strerror(errno));
out:
	if (rc)
		unlink(tmp);
	return rc;
}

int gl_reports_write_set(const struct gl_sbmodel *sb, enum gl_settings_report_format f, const char *dir,
			 const struct gl_config *cfg, int64_t generated_at_s, struct gl_reports_file *files, size_t max, size_t *n,
			 struct gl_err *err)
{
	struct gl_strbuf b = GL_STRBUF_INIT;
	int rc = 0;

	*n = 0;
	if (mkdir(dir, 0755) && errno != EEXIST)
		return gl_err_set(err, GL_EIO, "%s: %s", dir, strerror(errno));
	for (size_t t = 0; f == GL_SETTINGS_REPORT_CSV ? gl_report_tables[t] != NULL : t < 1; t++) {
		const char *table = f == GL_SETTINGS_REPORT_CSV ? gl_report_tables[t] : NULL;
		struct gl_reports_file *o;
		if (*n == max) {
			rc = gl_err_set(err, GL_ERANGE, "reports: more than %zu files", max);
			goto out;
		}
		o = &files[(*n)++];
		gl_strbuf_reset(&b);
		if ((rc = gl_reports_render(sb, f, table, cfg, generated_at_s, &b, err)))
			goto out;
		gl_report_file_name(sb, table, gl_settings_report_ext[f], o->name, sizeof o->name);
		gl_reports_sha256(b.p, b.len, o->sha256);
		o->bytes = b.len;
		if ((rc = gl_reports_write_file(dir, o->name, &b, err)))
			goto out;
	}
out:
	gl_strbuf_fini(&b);
	return rc;
}
