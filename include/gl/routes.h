/* gpuledger — the route table and the handlers behind it.
 * Ownership: static table; handlers follow include/gl/server.h. */
#ifndef GL_ROUTES_H
#define GL_ROUTES_H

#include "gl/server.h"

/* Terminated by an entry with path == NULL. */
extern const struct gl_server_route gl_routes[];

int gl_route_healthz(struct gl_req *req, struct gl_resp *resp);
/* /healthz from the last check when it is under a second old (1, resp
 * filled; never touches the database), else 0: gl_route_healthz must
 * check. */
int gl_route_healthz_cached(struct gl_req *req, struct gl_resp *resp);
int gl_route_metrics(struct gl_req *req, struct gl_resp *resp);
int gl_route_jobs(struct gl_req *req, struct gl_resp *resp);
int gl_route_ingest_runs(struct gl_req *req, struct gl_resp *resp);
/* src/api/routes_admin.c */
int gl_route_audit(struct gl_req *req, struct gl_resp *resp);
int gl_route_audit_verify(struct gl_req *req, struct gl_resp *resp);
int gl_route_tokens(struct gl_req *req, struct gl_resp *resp);
/* The calling token's name, role and owner scope (any role). */
int gl_route_whoami(struct gl_req *req, struct gl_resp *resp);
int gl_route_chargeback(struct gl_req *req, struct gl_resp *resp);
/* On a central's worker session at start (server.c): the statements a
 * chargeback plans once per session over the shards planned now (see
 * routes_accounting.c); built_day_s: a day every shard holds built, or -1. */
int gl_route_chargeback_warm(struct gl_store *st, const struct gl_config *cfg, int64_t built_day_s, int64_t now_s,
			     struct gl_err *err) GL_MUSTCHECK;
/* src/api/routes_runs.c */
int gl_route_runs(struct gl_req *req, struct gl_resp *resp);
int gl_route_run(struct gl_req *req, struct gl_resp *resp);
int gl_route_queue(struct gl_req *req, struct gl_resp *resp);
int gl_route_idle(struct gl_req *req, struct gl_resp *resp);
/* src/api/routes_reports.c */
int gl_route_report_showback(struct gl_req *req, struct gl_resp *resp);
int gl_route_reports(struct gl_req *req, struct gl_resp *resp);
/* GET /v1/reports/{id}: one recorded file, its sha256 the ETag */
int gl_route_report_file(struct gl_req *req, struct gl_resp *resp);
int gl_route_budgets(struct gl_req *req, struct gl_resp *resp);
/* src/api/routes_hook.c */
int gl_route_idle_candidates(struct gl_req *req, struct gl_resp *resp);
int gl_route_hook_actions(struct gl_req *req, struct gl_resp *resp);
int gl_route_hook_record(struct gl_req *req, struct gl_resp *resp);
/* src/api/routes_capacity.c */
int gl_route_capacity(struct gl_req *req, struct gl_resp *resp);
int gl_route_inventory(struct gl_req *req, struct gl_resp *resp);
/* src/api/routes_inference.c */
int gl_route_inference(struct gl_req *req, struct gl_resp *resp);
/* src/api/routes_forecast.c */
int gl_route_forecast(struct gl_req *req, struct gl_resp *resp);
int gl_route_capacity_forecast(struct gl_req *req, struct gl_resp *resp);
/* src/api/routes_capplan.c */
int gl_route_capacity_plan(struct gl_req *req, struct gl_resp *resp);
int gl_route_capacity_plan_post(struct gl_req *req, struct gl_resp *resp);

#endif
