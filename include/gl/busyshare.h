/* gpuledger — how busy a GPU was, from duty-cycle samples.
 *
 * Pure: no I/O, no clock, no libpq; times are parameters.
 *
 * A duty-cycle counter says what share of its own short sample period had a
 * kernel running: nvidia-smi's utilization.gpu and the exporters built on it
 * (nvidia_smi_utilization_gpu_ratio), DCGM's GPU_UTIL and
 * PROF_GR_ENGINE_ACTIVE, AMD's gpu_gfx_activity. A GPU that runs kernels
 * half the time reads about 50 % in a sample, so a sample is not "busy" or
 * "idle" as a whole: of the time it stands for, duty x that time is busy and
 * the rest idle. Reading any non-zero sample as a busy interval (the
 * exporter rollup's "one busy sample makes the bucket busy") would call such
 * a GPU busy all the time.
 *
 * The time a sample stands for is the one rule of docs/ingest.md: since the
 * GPU's previous sample, at most max_gap_ms; a GPU's first sample covers
 * nothing, and a silence longer than max_gap_ms is unobserved, never
 * guessed. A sample without a duty value covers its time as "no data".
 * Idle time during which the GPU held at least held_mib of framebuffer is
 * also counted as held_idle_ms: memory allocated, no kernels running.
 *
 * Exactness: integer milliseconds; each sample's busy part is its covered
 * time x duty rounded to the millisecond once, so busy + idle + no data
 * equals covered exactly.
 *
 * Ownership: plain values; nothing is allocated.
 */
#ifndef GL_BUSYSHARE_H
#define GL_BUSYSHARE_H

#include "gl/common.h"

#include <stddef.h>
#include <stdint.h>

struct gl_busyshare_params {
	int64_t max_gap_ms; /* > 0: the longest time one sample may stand for */
	double held_mib;    /* framebuffer used from which idle time is "held idle"; <= 0: off */
};

struct gl_busyshare {
	int64_t covered_ms;   /* busy + idle + no data */
	int64_t busy_ms;
	int64_t idle_ms;
	int64_t nodata_ms;
	int64_t held_idle_ms; /* part of idle_ms with memory held */
	size_t samples;       /* accepted */
	size_t rejected;      /* not after the previous one: not counted twice */
	int64_t last_t_ms;    /* GL_TIME_NONE before the first sample */
};

void gl_busyshare_init(struct gl_busyshare *b);

/* Adds the sample taken at t_ms: duty in [0, 1] (above 1 is taken as 1, a
 * negative value or NaN means no duty value), fb_used_mib < 0 when unknown.
 * -GL_EINVAL (counted in rejected, nothing else changes) when t_ms is not
 * after the previous sample's time. */
int gl_busyshare_add(struct gl_busyshare *b, const struct gl_busyshare_params *p, int64_t t_ms, double duty,
		     double fb_used_mib) GL_MUSTCHECK;

/* busy / (busy + idle) in [0, 1]; -GL_ENOTFOUND when no time had a duty value. */
int gl_busyshare_ratio(const struct gl_busyshare *b, double *ratio) GL_MUSTCHECK;

#endif
