/* The cost model as it stands (see include/gl/ratebook.h). */
#include "gl/ratebook.h"
#include "db_int.h"
#include "gl/pgrow.h"

#include <stdlib.h>
#include <string.h>

#define RT(t, m) GL_PGROW(struct gl_ratebook_rate, t, m)
static const struct gl_pgrow_field rate_fields[] = {
	RT(STR, gpu_model), RT(STR, currency), RT(I64, micros_per_gpu_hour), RT(STR, valid_from), RT(STR, valid_to),
};
#undef RT
#define OW(t, m) GL_PGROW(struct gl_ratebook_owner, t, m)
static const struct gl_pgrow_field owner_fields[] = {
	OW(I64, priority), OW(STR, cluster), OW(STR, match_field), OW(STR, match_value), OW(STR, team),
	OW(STR, project), OW(STR, cost_center),
};
#undef OW

int gl_ratebook_read(struct gl_store *st, struct gl_ratebook *rb, struct gl_err *err)
{
	PGconn *c = gl_db_conn(st);
	void *rates = NULL, *owners = NULL;
	int rc;

	memset(rb, 0, sizeof *rb);
	rc = gl_pgrow_query(c,
		   "SELECT gpu_model, currency, micros_per_gpu_hour, valid_from::text AS valid_from,"
		   " valid_to::text AS valid_to FROM rates ORDER BY gpu_model, valid_from",
		   0, NULL, rate_fields, GL_ARRAY_LEN(rate_fields), sizeof *rb->rates, &rates, &rb->n_rates, &rb->text[0], err);
	rb->rates = rates;
	if (rc)
		return rc;
	rc = gl_pgrow_query(c,
		   "SELECT priority, coalesce(cluster, '*') AS cluster, match_field, match_value, team,"
		   " coalesce(project, '') AS project, coalesce(cost_center, '') AS cost_center FROM owners"
		   " ORDER BY priority, rule_id",
		   0, NULL, owner_fields, GL_ARRAY_LEN(owner_fields), sizeof *rb->owners, &owners, &rb->n_owners, &rb->text[1], err);
	rb->owners = owners;
	return rc;
}

void gl_ratebook_fini(struct gl_ratebook *rb)
{
	free(rb->rates);
	free(rb->owners);
	free(rb->text[0]);
	free(rb->text[1]);
	memset(rb, 0, sizeof *rb);
}
