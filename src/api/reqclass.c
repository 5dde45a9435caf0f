/* Heavy or light (see include/gl/reqclass.h). */
#include "gl/reqclass.h"
#include "gl/common.h"
#include "gl/window.h"

#include <stdlib.h>

int gl_reqclass_heavy(enum gl_reqclass cls, const char *window, const char *step, int64_t now_s,
		      int64_t heavy_window_days, int64_t heavy_steps)
{
	struct gl_window w, *steps;
	struct gl_err err = {0};
	enum gl_window_step st = GL_WINDOW_STEP_NONE;
	size_t n = 0;
	int heavy;

	if (cls == GL_REQCLASS_HEAVY)
		return 1;
	if (cls != GL_REQCLASS_WINDOWED)
		return 0;
	if (window) {
		if (gl_window_parse(window, now_s, &w, &err))
			return 0;
	} else {
		w.end_s = now_s;
		w.start_s = now_s - GL_REQCLASS_DEFAULT_WINDOW_S;
	}
	if (w.end_s - w.start_s > heavy_window_days * 86400)
		return 1;
	if (step && gl_window_step_parse(step, &st, &err))
		return 0;
	if (st == GL_WINDOW_STEP_NONE)
		return 0;
	/* the steps the handler would make: the exact count, aligned to UTC
	 * boundaries as gl_window_split aligns them */
	steps = gl_xcalloc((size_t)heavy_steps + 1, sizeof *steps);
	heavy = gl_window_split(&w, st, steps, (size_t)heavy_steps, &n, &err) != 0;
	free(steps);
	return heavy;
}
