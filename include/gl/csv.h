/* gpuledger — RFC 4180 CSV output for API tables and reports.
 * Fields that a spreadsheet would run as a formula (leading = + - @, tab,
 * CR) are prefixed with a single quote; fields with , " CR LF are quoted.
 * Ownership: appends to the caller's strbuf. */
#ifndef GL_CSV_H
#define GL_CSV_H

#include "gl/strbuf.h"

/* Appends one text field (not numbers: a leading '-' on a number is fine,
 * use gl_csv_raw for those). */
void gl_csv_field(struct gl_strbuf *o, const char *s);
/* Appends a field verbatim (numbers we formatted ourselves). */
void gl_csv_raw(struct gl_strbuf *o, const char *s);
/* Appends v as PostgreSQL prints a double precision (extra_float_digits 1,
 * its default): the shortest decimal that reads back as v, fixed for
 * decimal exponents -4..14, else as d.ddde+XX; NaN, Infinity, -Infinity.
 * A cell of a double precision column then reads as the database wrote it. */
void gl_csv_f8(struct gl_strbuf *o, double v);
/* Ends the record with CRLF, as RFC 4180 says. */
void gl_csv_end(struct gl_strbuf *o);

#endif
