/* gpuledger — a fixed pool of threads running queued tasks (the HTTP
 * server's main, heavy and probe pools): at most `threads` tasks run at
 * once, at most `queue_max` wait, and a stop answers the waiting ones
 * without running them.
 *
 * Ownership: gl_reqpool_new's result is stopped and freed by
 * gl_reqpool_free. A task's arg stays the caller's: the pool hands it to
 * exactly one of run or drop. Thread-safe.
 */
#ifndef GL_REQPOOL_H
#define GL_REQPOOL_H

#include "gl/common.h"

#include <stddef.h>

typedef void (*gl_reqpool_fn)(void *arg);

struct gl_reqpool;

/* init (may be NULL) runs first in each new thread (e.g. to name what its
 * database connection is for). name: for the log and the threads' names. */
struct gl_reqpool *gl_reqpool_new(const char *name, size_t threads, size_t queue_max, void (*init)(void *cls),
				  void *cls);
/* Queues run(arg): 0, or -GL_EBUSY when queue_max tasks wait already or
 * the pool is stopping (run is then not called). */
int gl_reqpool_submit(struct gl_reqpool *p, gl_reqpool_fn run, gl_reqpool_fn drop, void *arg) GL_MUSTCHECK;
/* Refuses new tasks, calls drop for the tasks still waiting, waits for the
 * running ones and joins the threads. Idempotent. */
void gl_reqpool_stop(struct gl_reqpool *p);
void gl_reqpool_free(struct gl_reqpool *p);
/* Tasks waiting and running now. */
void gl_reqpool_load(struct gl_reqpool *p, size_t *waiting, size_t *running);

#endif
