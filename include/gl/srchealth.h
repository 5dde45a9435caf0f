/* gpuledger — how ingest reports a source's (or a scrape target's) health
 * without knowing who keeps it. ingest/ may not include daemon/ headers
 * (docs/ARCHITECTURE.md), so the registry of include/gl/health.h is set as
 * the sink by the program (src/cli/main.c, before any thread starts) and
 * ingest calls gl_srchealth_report. With no sink set (a test program that
 * links ingest alone) a report goes nowhere.
 *
 * Ownership: the strings are the caller's, valid for the call only; the
 * sink copies what it keeps.
 */
#ifndef GL_SRCHEALTH_H
#define GL_SRCHEALTH_H

#include <stdint.h>

/* The arguments of gl_health_report: source "sacct", "kube", "dcgm", ...;
 * key the cluster or the target URL; ok 1 on success, 0 on failure (err
 * says why); at_s the time of the attempt; duration_s how long it took. */
typedef void (*gl_srchealth_sink_fn)(const char *source, const char *cluster, const char *key, int ok,
				     int64_t at_s, const char *err, double duration_s);

/* Sets (or, with NULL, clears) the sink. Not for concurrent use with
 * gl_srchealth_report: set it once, before the threads that report. */
void gl_srchealth_set_sink(gl_srchealth_sink_fn sink);

/* Hands one report to the sink, if any. */
void gl_srchealth_report(const char *source, const char *cluster, const char *key, int ok, int64_t at_s,
			 const char *err, double duration_s);

#endif
