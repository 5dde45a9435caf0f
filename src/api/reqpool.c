/* A bounded pool of task threads (see include/gl/reqpool.h). */
#include "gl/reqpool.h"
#include "gl/log.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct task {
	gl_reqpool_fn run, drop;
	void *arg;
	struct task *next;
};

struct gl_reqpool {
	char name[16];
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct task *head, *tail;
	size_t waiting, running, queue_max, nthreads;
	pthread_t *threads;
	int stopping, stopped;
	void (*init)(void *cls);
	void *init_cls;
};

static void *worker(void *arg)
{
	struct gl_reqpool *p = arg;
	if (p->init)
		p->init(p->init_cls);
	pthread_mutex_lock(&p->mu);
	for (;;) {
		struct task *t;
		while (!p->head && !p->stopping)
			pthread_cond_wait(&p->cv, &p->mu);
		if (!p->head)
			break;
		t = p->head;
		p->head = t->next;
		if (!p->head)
			p->tail = NULL;
		p->waiting--;
		p->running++;
		pthread_mutex_unlock(&p->mu);
		t->run(t->arg);
		free(t);
		pthread_mutex_lock(&p->mu);
		p->running--;
	}
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

struct gl_reqpool *gl_reqpool_new(const char *name, size_t threads, size_t queue_max, void (*init)(void *cls),
				  void *cls)
{
	struct gl_reqpool *p = gl_xcalloc(1, sizeof *p);
	snprintf(p->name, sizeof p->name, "%s", name);
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->cv, NULL);
	p->queue_max = queue_max;
	p->init = init;
	p->init_cls = cls;
	p->threads = gl_xcalloc(threads ? threads : 1, sizeof *p->threads);
	for (size_t i = 0; i < threads; i++) {
		char tn[16];
		if (pthread_create(&p->threads[i], NULL, worker, p)) {
			gl_log(GL_LOG_ERROR, "http: cannot start a %s thread", p->name);
			abort();
		}
		snprintf(tn, sizeof tn, "gl-%.8s-%zu", p->name, i);
		pthread_setname_np(p->threads[i], tn);
		p->nthreads++;
	}
	return p;
}

int gl_reqpool_submit(struct gl_reqpool *p, gl_reqpool_fn run, gl_reqpool_fn drop, void *arg)
{
	struct task *t;
	pthread_mutex_lock(&p->mu);
	if (p->stopping || p->waiting >= p->queue_max) {
		pthread_mutex_unlock(&p->mu);
		return -GL_EBUSY;
	}
	t = gl_xcalloc(1, sizeof *t);
	*t = (struct task){run, drop, arg, NULL};
	if (p->tail)
		p->tail->next = t;
	else
		p->head = t;
	p->tail = t;
	p->waiting++;
	pthread_cond_signal(&p->cv);
	pthread_mutex_unlock(&p->mu);
	return 0;
}

void gl_reqpool_stop(struct gl_reqpool *p)
{
	struct task *left;
	if (!p)
		return;
	pthread_mutex_lock(&p->mu);
	if (p->stopped) {
		pthread_mutex_unlock(&p->mu);
		return;
	}
	p->stopping = 1;
	left = p->head;
	p->head = p->tail = NULL;
	p->waiting = 0;
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
	while (left) {
		struct task *n = left->next;
		if (left->drop)
			left->drop(left->arg);
		free(left);
		left = n;
	}
	for (size_t i = 0; i < p->nthreads; i++)
		pthread_join(p->threads[i], NULL);
	pthread_mutex_lock(&p->mu);
	p->stopped = 1;
	pthread_mutex_unlock(&p->mu);
}

void gl_reqpool_free(struct gl_reqpool *p)
{
	if (!p)
		return;
	gl_reqpool_stop(p);
	pthread_mutex_destroy(&p->mu);
	pthread_cond_destroy(&p->cv);
	free(p->threads);
	free(p);
}

void gl_reqpool_load(struct gl_reqpool *p, size_t *waiting, size_t *running)
{
	pthread_mutex_lock(&p->mu);
	*waiting = p->waiting;
	*running = p->running;
	pthread_mutex_unlock(&p->mu);
}
