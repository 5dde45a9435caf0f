/* One probe of the shards for the whole process (see include/gl/fleetstate.h). */
#include "gl/fleetstate.h"
#include "gl/log.h"
#include "gl/store.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct gl_fleetstate {
	char *dsn;
	int64_t stmt_ms;
	int period_s;
	pthread_mutex_t mu;
	pthread_cond_t cv;         /* the prober's wake-up, and a probe's end */
	pthread_t th;
	int started, stop, kick;
	pthread_key_t key;         /* the prober's session */
	struct gl_shard_route rt;  /* the last route published; under mu */
	uint64_t gen;              /* its generation: 0 none yet */
	uint64_t attempts, failed; /* probes ended, and failed */
	struct gl_err last_err;    /* the last failed probe's reason */
};

struct gl_fleetstate *gl_fleetstate_new(const char *dsn, int64_t stmt_ms, int period_s)
{
	struct gl_fleetstate *f = gl_xcalloc(1, sizeof *f);
	f->dsn = gl_xstrdup(dsn);
	f->stmt_ms = stmt_ms;
	f->period_s = period_s;
	pthread_mutex_init(&f->mu, NULL);
	pthread_cond_init(&f->cv, NULL);
	if (pthread_key_create(&f->key, gl_store_thread_close)) {
		gl_log(GL_LOG_ERROR, "fleet: cannot create the prober's session key");
		abort();
	}
	return f;
}

/* One probe on the prober's session, published under mu. */
static void probe_once(struct gl_fleetstate *f)
{
	struct gl_shard_route rt = {0};
	struct gl_store *st = NULL;
	struct gl_err err = {0};
	int rc = gl_store_thread(f->key, f->dsn, f->stmt_ms, &st, NULL, &err);
	if (!rc)
		rc = gl_shard_route(st, &rt, &err);
	pthread_mutex_lock(&f->mu);
	f->attempts++;
	if (rc) {
		f->failed++;
		f->last_err = err;
	} else {
		gl_shard_route_fini(&f->rt);
		f->rt = rt;
		memset(&rt, 0, sizeof rt);
		f->gen++;
	}
	pthread_cond_broadcast(&f->cv);
	pthread_mutex_unlock(&f->mu);
	if (rc)
		gl_log(GL_LOG_WARN, "fleet: probing the shards: %s", err.msg);
	gl_shard_route_fini(&rt);
}

static void *prober_main(void *arg)
{
	struct gl_fleetstate *f = arg;
	for (;;) {
		struct timespec until;
		probe_once(f);
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += f->period_s;
		pthread_mutex_lock(&f->mu);
		while (!f->stop && !f->kick)
			if (pthread_cond_timedwait(&f->cv, &f->mu, &until))
				break;
		f->kick = 0;
		if (f->stop) {
			pthread_mutex_unlock(&f->mu);
			break;
		}
		pthread_mutex_unlock(&f->mu);
	}
	gl_store_thread_close(pthread_getspecific(f->key));
	pthread_setspecific(f->key, NULL);
	return NULL;
}

int gl_fleetstate_get(struct gl_fleetstate *f, uint64_t *gen, struct gl_shard_route *rt, struct gl_err *err)
{
	int rc = 0;
	pthread_mutex_lock(&f->mu);
	if (!f->started) {
		if (pthread_create(&f->th, NULL, prober_main, f)) {
			pthread_mutex_unlock(&f->mu);
			return gl_err_set(err, GL_EINTERNAL, "fleet: cannot start the prober thread");
		}
		f->started = 1;
	}
	if (!f->gen) {
		/* no route yet: the prober's next attempt (made now) decides */
		uint64_t a = f->attempts;
		f->kick = 1;
		pthread_cond_broadcast(&f->cv);
		while (f->attempts == a && !f->stop)
			pthread_cond_wait(&f->cv, &f->mu);
		if (!f->gen)
			rc = gl_err_set(err, GL_EDB, "%s", f->last_err.msg[0] ? f->last_err.msg : "fleet: not probed");
	}
	if (!rc && *gen != f->gen) {
		gl_shard_route_copy(rt, &f->rt);
		*gen = f->gen;
	}
	pthread_mutex_unlock(&f->mu);
	return rc;
}

void gl_fleetstate_counts(struct gl_fleetstate *f, uint64_t *probes, uint64_t *failed)
{
	pthread_mutex_lock(&f->mu);
	*probes = f->attempts;
	*failed = f->failed;
	pthread_mutex_unlock(&f->mu);
}

void gl_fleetstate_free(struct gl_fleetstate *f)
{
	if (!f)
		return;
	pthread_mutex_lock(&f->mu);
	f->stop = 1;
	pthread_cond_broadcast(&f->cv);
	pthread_mutex_unlock(&f->mu);
	if (f->started)
		pthread_join(f->th, NULL);
	gl_shard_route_fini(&f->rt);
	pthread_key_delete(f->key);
	pthread_cond_destroy(&f->cv);
	pthread_mutex_destroy(&f->mu);
	free(f->dsn);
	free(f);
}
