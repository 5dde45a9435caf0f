/* gpuledger — in-process health registry: each source (and each scrape
 * target) reports its last success and last error here; /metrics and
 * /healthz read it. Thread-safe (the daemon loop writes, HTTP threads read).
 *
 * Ownership: strings are copied in; nothing is returned that needs freeing.
 */
#ifndef GL_HEALTH_H
#define GL_HEALTH_H

#include "gl/common.h"
#include "gl/strbuf.h"

#include <stdint.h>

#define GL_HEALTH_MAX 4096 /* entries; beyond it new keys are dropped (and counted) */

/* source: "sacct", "kube", "dcgm"; key: cluster or target URL. ok = 1 on
 * success (clears the error), 0 on failure (err is kept as last_error). */
void gl_health_report(const char *source, const char *cluster, const char *key, int ok, int64_t at_s,
		      const char *err, double duration_s);

/* Appends Prometheus text: gpuledger_source_up, _last_success_timestamp_seconds,
 * _last_error_timestamp_seconds, _consecutive_failures, _last_duration_seconds. */
void gl_health_metrics(struct gl_strbuf *out);

/* The daemon's audit anchor check (include/gl/anchor.h): state 1 when the
 * chain matched its last anchor (or there was none yet), 0 when it did not,
 * -1 when the anchor file could not be read (the caller logs why).
 * gl_health_metrics then adds
 * gpuledger_audit_anchor_mismatch (1 unless the last check matched),
 * gpuledger_audit_anchor_last_check_timestamp_seconds and
 * gpuledger_audit_anchor_publish_failures_total; nothing before the first
 * report (no audit.anchor_file). */
void gl_health_anchor_report(int state, int64_t at_s);
void gl_health_anchor_publish_failed(void);
/* Several instances (docs/scale.md): this process's name, and for each
 * leased job whether it runs here and which instance holds it. Metrics:
 * gpuledger_instance_info{instance}, gpuledger_lease_held{lease},
 * gpuledger_lease_holder_info{lease,instance}. */
void gl_health_instance(const char *instance);
void gl_health_lease(const char *lease, int held, const char *holder_instance);

/* Number of entries whose last report failed. */
size_t gl_health_failing(void);

/* For tests. */
void gl_health_reset(void);

#endif
