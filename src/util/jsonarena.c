/* Per-thread bump arena behind the cJSON hooks (see include/gl/jsonarena.h). */
#include "gl/jsonarena.h"
#include "gl/common.h"

#include <cjson/cJSON.h>
#include <pthread.h>
#include <stdalign.h>
#include <stdint.h>
#include <stdlib.h>

#define ARENA_ALIGN 16
#define ARENA_MIN_CHUNK ((size_t)1 << 20)
#define ARENA_MAX_CHUNK ((size_t)64 << 20)

struct chunk {
	struct chunk *next;
	size_t cap, used;
	alignas(ARENA_ALIGN) unsigned char data[];
};

static _Thread_local struct {
	int on;
	struct chunk *head;
	size_t next_cap;
} t_arena;

static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void *hook_malloc(size_t n)
{
	struct chunk *c;
	if (!t_arena.on)
		return malloc(n);
	n = (n + ARENA_ALIGN - 1) & ~(size_t)(ARENA_ALIGN - 1);
	c = t_arena.head;
	if (!c || c->cap - c->used < n) {
		size_t cap = t_arena.next_cap > n ? t_arena.next_cap : n;
		c = malloc(sizeof *c + cap);
		if (!c)
			return NULL; /* cJSON reports it as a parse failure */
		c->next = t_arena.head;
		c->cap = cap;
		c->used = 0;
		t_arena.head = c;
		if (t_arena.next_cap < ARENA_MAX_CHUNK)
			t_arena.next_cap *= 2;
	}
	c->used += n;
	return c->data + c->used - n;
}

/* Inside an arena a pointer may still come from before it (malloc): only
 * arena pointers are left for gl_jsonarena_end(). */
static void hook_free(void *p)
{
	if (t_arena.on)
		for (const struct chunk *c = t_arena.head; c; c = c->next)
			if ((uintptr_t)p >= (uintptr_t)c->data && (uintptr_t)p < (uintptr_t)(c->data + c->cap))
				return;
	free(p);
}

static void install(void)
{
	cJSON_Hooks h = {.malloc_fn = hook_malloc, .free_fn = hook_free};
	cJSON_InitHooks(&h);
}

void gl_jsonarena_init(void)
{
	pthread_once(&g_once, install);
}

void gl_jsonarena_begin(size_t size_hint)
{
	gl_jsonarena_init();
	t_arena.on = 1;
	t_arena.next_cap = size_hint < ARENA_MIN_CHUNK ? ARENA_MIN_CHUNK
			   : size_hint > ARENA_MAX_CHUNK ? ARENA_MAX_CHUNK
							 : size_hint;
}

void gl_jsonarena_end(void)
{
	struct chunk *c = t_arena.head;
	while (c) {
		struct chunk *n = c->next;
		free(c);
		c = n;
	}
	t_arena.head = NULL;
	t_arena.on = 0;
}
