-- 132: the cold window's one scan of the jobs in PostgreSQL's parallel
-- workers (issue 31; docs/scale.md, "A cold window").
--
-- A statement that calls one PARALLEL UNSAFE function (the default) gets
-- no parallel plan anywhere. The functions the accounting statements call
-- only read tables and their arguments: no writes, sequences, temporary
-- tables, SET or exception blocks, so they are PARALLEL SAFE. The exporter
-- usage functions read gpu_usage_jobs, whose partitions may be foreign
-- tables (a shard's or the fleet's): they run in the leader (RESTRICTED),
-- which still lets the rest of the statement run in workers.
ALTER FUNCTION gl_job_run_kind(text, jsonb, bigint, bigint) PARALLEL SAFE;
ALTER FUNCTION gl_rule_value(text, text, text, text, text, text, text, jsonb) PARALLEL SAFE;
ALTER FUNCTION gl_owner(text, text, text, text, text, text, text, jsonb, timestamptz) PARALLEL SAFE;
ALTER FUNCTION gl_workload_type(text, text, text, text, text, text, text, jsonb, text[], timestamptz) PARALLEL SAFE;
ALTER FUNCTION gl_steps_starts(bigint[]) PARALLEL SAFE;
ALTER FUNCTION gl_steps_ends(bigint[], bigint[]) PARALLEL SAFE;
ALTER FUNCTION gl_attribution_rank(text) PARALLEL SAFE;
ALTER FUNCTION gl_job_usage_steps(timestamptz[], timestamptz[]) PARALLEL RESTRICTED;
ALTER FUNCTION gl_job_usage(timestamptz, timestamptz) PARALLEL RESTRICTED;

-- The planner's estimate of the owner-attribute sets a scan of the jobs
-- groups into: without these it multiplies each column's distinct values
-- (a year of 10 M jobs: 1 M sets for 4,000), takes summing in the workers
-- for no gain and sends every job to the leader. Two objects: one holds
-- at most eight columns.
CREATE STATISTICS jobs_owner_sets_nd (ndistinct)
    ON cluster_id, user_name, account, partition, qos, namespace, wckey, gpu_type FROM jobs;
CREATE STATISTICS jobs_kind_sets_nd (ndistinct)
    ON tags, array_job_id, het_job_id, node_gpu_model FROM jobs;
ANALYZE jobs;
