/* gpuledger fleet simulator — the real trace slices it replays
 * (scripts/demo/traces: Philly jobs with their GPUs' utilisation after start,
 * Alibaba openb whole-GPU pods, Alibaba GenAI per-pod duty cycles).
 *
 * Pure: parses buffers the caller read. Errors name `name:line`.
 * Ownership: struct gl_simtrace_traces owns every array; gl_simtrace_fini frees
 * them (a zeroed struct is empty and safe to fini).
 */
#ifndef GL_SIMTRACE_H
#define GL_SIMTRACE_H
#include "gl/common.h"
#include <stddef.h>
#include <stdint.h>

#define GL_SIMTRACE_UTIL_MINUTES 4 /* Philly: per-minute utilisation t+0..t+3 */

struct gl_simtrace_pjob {           /* one Philly job */
	int32_t week_s;        /* submit, second of the week */
	int32_t gpus;
	int64_t runtime_s;
	int failed;            /* status Failed (else Pass) */
	char vc[16], user[16];
	int32_t util_first;    /* its GPUs' values in util[]: util_ngpus x GL_SIMTRACE_UTIL_MINUTES */
	int32_t util_ngpus;
};

struct gl_simtrace_pod {            /* one openb pod */
	int32_t week_s;        /* creation, second of the trace's week */
	int32_t gpus;
	int64_t duration_s;    /* deletion - scheduled */
	int failed;            /* pod_phase Failed */
	int censored;          /* still Running at the trace's end */
	char qos[16];
};

struct gl_simtrace_duty {           /* one GenAI pod's duty cycle series */
	char name[16];
	int32_t first, n;      /* values in duty[] */
};

struct gl_simtrace_traces {
	struct gl_simtrace_pjob *jobs;
	size_t njobs;
	uint8_t *util;         /* percent */
	size_t nutil;
	struct gl_simtrace_pod *pods;
	size_t npods;
	struct gl_simtrace_duty *series;
	size_t nseries;
	uint8_t *duty;         /* percent */
	size_t nduty;
	int32_t duty_step_s;   /* seconds between two duty values (114) */
};

/* Each parses one file's text (tab-separated, `#` lines skipped) and adds
 * its rows; a malformed line is an error naming name:line (the slices are
 * ours, so nothing is skipped quietly). */
int gl_simtrace_parse_philly(struct gl_simtrace_traces *t, const char *name, const char *buf, size_t n,
			     struct gl_err *err) GL_MUSTCHECK;
int gl_simtrace_parse_pods(struct gl_simtrace_traces *t, const char *name, const char *buf, size_t n,
			   struct gl_err *err) GL_MUSTCHECK;
int gl_simtrace_parse_duty(struct gl_simtrace_traces *t, const char *name, const char *buf, size_t n,
			   struct gl_err *err) GL_MUSTCHECK;
void gl_simtrace_fini(struct gl_simtrace_traces *t);

#endif
