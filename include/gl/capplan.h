/* gpuledger — planned capacity and what it means for saturation (pure: no
 * I/O, no clock; docs/forecast.md, "Capacity planning").
 *
 * A plan is a list of effective-dated changes per cluster and GPU model
 * ("+64 h100 in c1 from 2027-02-01", "retire 32 v100 on 2027-03-31"), from
 * the config (capacity_plan:), the API (POST /v1/capacity/plan) or a what-if
 * (plan= on /v1/capacity/forecast, never saved). A change dated today or
 * earlier is history: the inventory already shows what happened, so it is
 * not applied again. Given the GPUs available now and a demand forecast per
 * step (its quantiles), this module gives the capacity step line, the
 * probability of saturation per step, the first dates it passes 50 % and
 * 80 %, and the GPUs to buy by each date to keep it under a level.
 *
 * Ownership: arrays returned through pointers are the caller's to free();
 * gl_capplan_fleet_fini() frees a fleet's arrays. Inputs are borrowed.
 */
#ifndef GL_CAPPLAN_H
#define GL_CAPPLAN_H

#include "gl/common.h"
#include "gl/forecast.h"

#include <stddef.h>
#include <stdint.h>

#define GL_CAPPLAN_NAME_MAX 128
#define GL_CAPPLAN_MAX_GPUS 1000000 /* one change; more is a typo */

struct gl_capplan_change {
	char cluster[GL_CAPPLAN_NAME_MAX];
	char gpu_model[GL_CAPPLAN_NAME_MAX]; /* canonical (the caller canonicalises) */
	int64_t gpus;   /* > 0 added, < 0 retired; never 0 */
	int64_t day_s;  /* effective from 00:00 UTC of this day */
	char source[16]; /* "config", "api", "what-if" */
	int line;       /* config: the entry's line; 0 otherwise */
	int64_t id;     /* stored rows: the row's id; 0 otherwise */
	char note[200];
};

/* What-if text: entries "CLUSTER,GPU_MODEL,+N|-N,YYYY-MM-DD" separated by
 * ';' (a cluster or model holding ',' or ';' cannot be named this way).
 * *out is NULL with *n 0 for "". Errors say "entry K ('...'): field: why". */
int gl_capplan_parse(const char *text, struct gl_capplan_change **out, size_t *n, struct gl_err *err) GL_MUSTCHECK;

/* GPUs present now of one model in one cluster. */
struct gl_capplan_count {
	char cluster[GL_CAPPLAN_NAME_MAX];
	char gpu_model[GL_CAPPLAN_NAME_MAX];
	int64_t gpus;
};

/* The fleet a plan is checked against. */
struct gl_capplan_fleet {
	char (*clusters)[GL_CAPPLAN_NAME_MAX]; /* clusters known (stored or configured as a source) */
	size_t n_clusters;
	char (*models)[GL_CAPPLAN_NAME_MAX];   /* canonical models known (inventory, jobs, rates, aliases) */
	size_t n_models;
	struct gl_capplan_count *present;      /* GPUs present now per cluster and model */
	size_t n_present;
	int64_t today_s;                       /* 00:00 UTC of today: changes up to it are history */
};
void gl_capplan_fleet_fini(struct gl_capplan_fleet *f);

/* Checks a plan: every cluster and model known, no count of 0 (entries
 * carry the sign), and no retirement of more GPUs of a model in a cluster
 * than are there on its day (present now, plus the later changes before
 * it, in date order). On failure returns -GL_EINVAL with *bad the index of
 * the entry and *field "cluster", "gpu_model", "gpus" or "date", and err
 * saying why (without the entry's name: the caller prefixes it). */
int gl_capplan_check(const struct gl_capplan_fleet *f, const struct gl_capplan_change *plan, size_t n, size_t *bad,
		     const char **field, struct gl_err *err) GL_MUSTCHECK;

/* GPUs present now of cluster/model in the fleet (0 when none). */
int64_t gl_capplan_present(const struct gl_capplan_fleet *f, const char *cluster, const char *gpu_model);

/* The capacity over [from_s, to_s): base (GPUs available now; NaN unknown)
 * with the plan's changes in force by then, the least of it over the span
 * (a retirement mid-week counts for the week). NaN when base is NaN. */
double gl_capplan_capacity(double base, const struct gl_capplan_change *plan, size_t n, const char *cluster,
			   const char *gpu_model, int64_t today_s, int64_t from_s, int64_t to_s);

/* One step of a demand forecast against capacity. */
struct gl_capplan_step {
	int64_t start_s, end_s;
	double q[5];      /* demand quantiles .025 .1 .5 .9 .975; q[0] NaN: no interval */
	double capacity;  /* GPUs available in the step (NaN unknown) */
	long origins;     /* backtest origins the step's band was scored on (0: none) */
	int trend;        /* a trend method's forecast (chosen by its backtest) */
};

/* Step i's quantiles and origins from a demand forecast (capacity and
 * times are the caller's). */
void gl_capplan_step_fill(struct gl_capplan_step *s, const struct gl_forecast_result *fc, int i);

/* P(demand >= capacity) of a step; NaN when either is unknown. */
double gl_capplan_p_saturation(const struct gl_capplan_step *s);

/* The first step whose probability of saturation reaches p (0.5, 0.8), or
 * -1 (none, or unknown before it). A date is given only when the backtest
 * supports it: the forecast is a trend method's (chosen only where its
 * backtest beat every level method), or some step from that one to the
 * first unknown still has P(saturation) >= p with its demand 1.645
 * standard errors of its median lower (1.2533 sigma / sqrt(origins), sigma
 * from the 80 % band): p reached with one-sided 95 % confidence in the
 * level. A level estimated at about capacity from noisy history is no
 * date (its P hovers about p, now above, now below, from one week of
 * history to the next); a constant demand above capacity is. */
long gl_capplan_first_saturated(const struct gl_capplan_step *s, size_t n, double p);

struct gl_capplan_purchase {
	int64_t need_by_s;  /* the step's start: the GPUs must be in service by then */
	int64_t order_by_s; /* need_by less the procurement lead time */
	int64_t gpus;       /* more GPUs needed from then on (beyond those bought before) */
	int64_t total;      /* GPUs bought by then, in all */
	int late;           /* order_by is before today: they cannot arrive in time */
};

/* The purchases that keep P(saturation) under level (0.025..0.5) through
 * the steps: at each step the capacity must exceed the demand quantile of
 * 1 - level; GPUs bought stay. *out (caller frees) is NULL when none are
 * needed. -GL_EINVAL when a step's demand interval or capacity is unknown
 * (*at: that step) or level is out of range. */
int gl_capplan_recommend(const struct gl_capplan_step *s, size_t n, double level, int64_t lead_s, int64_t today_s,
			 struct gl_capplan_purchase **out, size_t *n_out, size_t *at, struct gl_err *err) GL_MUSTCHECK;

/* ---- the outlook of one cluster/model ---- */

/* Demand per cluster and GPU model, by day (store: gl_capplandb_demand). */
struct gl_capplan_key {
	char cluster[GL_CAPPLAN_NAME_MAX];
	char gpu_model[GL_CAPPLAN_NAME_MAX];
	double capacity;        /* GPUs available in the window's last hour; NaN unknown */
	int cluster_inventory;  /* its cluster has an inventory: a model it lacks has 0 GPUs there */
	double *peak;           /* nd days: the day's largest hourly allocated + pending GPUs */
	struct gl_forecast_satday *sat; /* nd days: minutes with GPUs waiting */
};
struct gl_capplan_demand {
	size_t nd, nk;
	int64_t start_s;        /* 00:00 UTC of the first day */
	struct gl_capplan_key *keys;
};
void gl_capplan_demand_fini(struct gl_capplan_demand *d);
/* The key of cluster/model, added (no demand, capacity unknown) when absent. */
struct gl_capplan_key *gl_capplan_demand_key(struct gl_capplan_demand *d, const char *cluster, const char *gpu_model);

struct gl_capplan_outlook_opts {
	int weekly;             /* steps of a week (a Monday's) instead of a day */
	int horizon;            /* steps ahead */
	int64_t end_s;          /* the history's end: the first step starts here */
	int64_t today_s;        /* plan changes up to it are history; orders before it are late */
	int64_t lead_s;         /* procurement lead time */
	double risk;            /* the purchases keep P(saturation) under it */
	const struct gl_capplan_change *plan;
	size_t n_plan;
};

struct gl_capplan_outlook {
	struct gl_forecast_result fc;  /* the peak demand forecast by step */
	double *hist;                  /* n_hist: peak demand per step of history */
	size_t n_hist;
	struct gl_capplan_step *steps; /* fc.horizon: quantiles and the capacity step line */
	long sat50, sat80;             /* first step with P(saturation) >= 50 / 80 %, or -1 */
	struct gl_capplan_purchase *purchases; /* NULL when none or unknown */
	size_t n_purchases;
	int purchases_known;           /* 0: capacity or the demand interval unknown (note says from when) */
	char note[200];
};
/* Forecasts k's peak demand by step and sets it against capacity (k's, with
 * the plan's changes after today_s): saturation and purchases. k->peak
 * holds nd days; weekly steps are whole weeks from the first day (which the
 * caller makes a Monday). Release with gl_capplan_outlook_fini. */
int gl_capplan_outlook(const struct gl_capplan_key *k, size_t nd, int64_t start_s,
		       const struct gl_capplan_outlook_opts *o, struct gl_capplan_outlook *out,
		       struct gl_err *err) GL_MUSTCHECK;
void gl_capplan_outlook_fini(struct gl_capplan_outlook *o);

#endif
