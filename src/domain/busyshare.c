/* The busy share of duty-cycle samples (see include/gl/busyshare.h). */
#include "gl/busyshare.h"

#include <math.h>
#include <string.h>

void gl_busyshare_init(struct gl_busyshare *b)
{
	memset(b, 0, sizeof *b);
	b->last_t_ms = GL_TIME_NONE;
}

int gl_busyshare_add(struct gl_busyshare *b, const struct gl_busyshare_params *p, int64_t t_ms, double duty,
		     double fb_used_mib)
{
	int64_t dt, busy;

	if (b->last_t_ms != GL_TIME_NONE && t_ms <= b->last_t_ms) {
		b->rejected++;
		return -GL_EINVAL;
	}
	dt = b->last_t_ms == GL_TIME_NONE ? 0 : t_ms - b->last_t_ms;
	if (p->max_gap_ms > 0 && dt > p->max_gap_ms)
		dt = p->max_gap_ms;
	b->last_t_ms = t_ms;
	b->samples++;
	b->covered_ms += dt;
	if (!(duty >= 0)) {
		b->nodata_ms += dt;
		return 0;
	}
	busy = duty >= 1 ? dt : llround(duty * (double)dt);
	b->busy_ms += busy;
	b->idle_ms += dt - busy;
	if (p->held_mib > 0 && fb_used_mib >= p->held_mib)
		b->held_idle_ms += dt - busy;
	return 0;
}

int gl_busyshare_ratio(const struct gl_busyshare *b, double *ratio)
{
	int64_t known = b->busy_ms + b->idle_ms;
	if (known <= 0)
		return -GL_ENOTFOUND;
	*ratio = (double)b->busy_ms / (double)known;
	return 0;
}
