/* gpuledger — reading a site's report look at run time: the HTML template
 * and stylesheet and the PDF layout constants from the template directory
 * (reports.template_dir, by default the top-level reports/), and the
 * number separators from the configuration. A site restyles its reports by
 * editing those files; nothing is compiled in.
 *
 * Files: DIR/showback.html (placeholders {{title}}, {{css}} and exactly one
 * {{body}}), DIR/showback.css, DIR/pdf-layout.yaml (one flat mapping, every
 * key of struct gl_report_pdf_layout). A bad file is an error naming
 * file:line and the reason.
 *
 * Ownership: gl_report_style_load fills the caller's struct;
 * gl_report_style_fini frees what it allocated.
 */
#ifndef GL_REPORT_STYLE_H
#define GL_REPORT_STYLE_H

#include "gl/report.h"

int gl_report_style_load(const char *dir, const char *thousands, const char *decimal, struct gl_report_style *st,
			 struct gl_err *err) GL_MUSTCHECK;
void gl_report_style_fini(struct gl_report_style *st);

#endif
