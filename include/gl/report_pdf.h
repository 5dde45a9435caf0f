/* gpuledger — the showback report as PDF (A4): a cover page with the totals
 * and the partial-data notes, the charts (GPU-hours by owner per day,
 * busy/idle split, cost month over month) and the tables, page numbers and
 * a generated-at line on every page. Drawn with cairo's PDF surface and
 * pango for text (shaping, non-Latin owner names) rather than by hand.
 *
 * No I/O beyond memory: the document is appended to the caller's strbuf.
 * Ownership: the model is borrowed.
 */
#ifndef GL_REPORT_PDF_H
#define GL_REPORT_PDF_H

#include "gl/report.h"
#include "gl/showback.h"
#include "gl/strbuf.h"

/* Geometry, type and number separators come from style (its pdf layout,
 * read from reports/pdf-layout.yaml by gl_report_style_load). */
int gl_report_pdf(const struct gl_sbmodel *sb, const struct gl_report_style *style, int64_t generated_at_s,
		  struct gl_strbuf *out, struct gl_err *err) GL_MUSTCHECK;

#endif
