/* gpuledger — a per-thread bump arena for cJSON trees that are parsed, read
 * and dropped whole (the multi-megabyte PodList and NodeList documents).
 *
 * cJSON allocates every value and every string separately; on a 100 MB
 * PodList that is most of the parse time (kube parse 1.0 s -> see
 * docs/bench.md). Between gl_jsonarena_begin() and gl_jsonarena_end() every
 * cJSON allocation made BY THIS THREAD comes from one growing arena and is
 * released at once by gl_jsonarena_end(); other threads keep malloc/free.
 *
 * Rules: a cJSON tree built inside an arena must not outlive it (do not
 * cJSON_Delete it after gl_jsonarena_end(); deleting it before is allowed and
 * a no-op). Arenas do not nest. gl_jsonarena_init() installs the cJSON hooks
 * (process-wide): call it once before starting threads; begin() calls it too.
 *
 * Ownership: the arena's memory belongs to the calling thread until end().
 */
#ifndef GL_JSONARENA_H
#define GL_JSONARENA_H

#include <stddef.h>

void gl_jsonarena_init(void);
/* size_hint: expected bytes of the tree (about 3x the JSON text is typical);
 * 0 = a default. */
void gl_jsonarena_begin(size_t size_hint);
void gl_jsonarena_end(void);

#endif
