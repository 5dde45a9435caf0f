/* gpuledger — which pool runs an API request (docs/security.md, "Heavy
 * requests"). Pure: the time is a parameter. Ownership: nothing is kept.
 */
#ifndef GL_REQCLASS_H
#define GL_REQCLASS_H

#include <stdint.h>

/* A route's class, in the route table (include/gl/server.h). */
enum gl_reqclass {
	GL_REQCLASS_LIGHT = 0, /* the main pool */
	GL_REQCLASS_PROBE,     /* /healthz, /metrics: never behind the pools; reserved connections */
	GL_REQCLASS_WINDOWED,  /* heavy or light by its window and step */
	GL_REQCLASS_HEAVY,     /* always the heavy pool */
};

/* 31 days: the longest default window of a route (chargeback's month) */
#define GL_REQCLASS_DEFAULT_WINDOW_S (31 * 86400)

/* 1 when a request of class cls runs in the heavy pool: always for
 * GL_REQCLASS_HEAVY; for GL_REQCLASS_WINDOWED when its window (window=, absent:
 * GL_REQCLASS_DEFAULT_WINDOW_S) is longer than heavy_window_days, or its
 * step= cuts it into more than heavy_steps steps. A window or step that
 * does not parse is light: the handler answers 400 at once. */
int gl_reqclass_heavy(enum gl_reqclass cls, const char *window, const char *step, int64_t now_s,
		      int64_t heavy_window_days, int64_t heavy_steps);

#endif
