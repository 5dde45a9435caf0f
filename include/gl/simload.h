/* gpuledger fleet simulator — reading the trace slices from a folder (the
 * I/O beside the pure parsers of gl/simtrace.h).
 *
 * Ownership: adds to the caller's struct gl_simtrace_traces (gl_simtrace_fini). */
#ifndef GL_SIMLOAD_H
#define GL_SIMLOAD_H
#include "gl/simtrace.h"

/* dir/philly_jobs.tsv, dir/openb_pods.tsv and dir/genai_duty.tsv
 * (scripts/demo/traces); an unreadable file or a bad line names path:line. */
int gl_simload_traces(const char *dir, struct gl_simtrace_traces *tr, struct gl_err *err) GL_MUSTCHECK;

#endif
