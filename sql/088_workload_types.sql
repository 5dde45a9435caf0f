-- Workload type (training, inference, interactive, batch, development or
-- any name a site uses) as an accounting dimension (docs/config.md,
-- workload_types). Effective-dated rules like owners (sql/004, 011), and
-- resolved the same way: the first rule (priority, then id) in force at the
-- job's start that matches; a job no rule matches is 'unclassified'. The
-- type is the job's, for its whole life, as its owner is: every GPU-second
-- of a job is in exactly one type.
CREATE TABLE workload_rules (
    rule_id       bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    priority      integer NOT NULL DEFAULT 100,       -- lower first; first match wins
    cluster       text,                               -- NULL: any cluster
    match_field   text NOT NULL,                      -- account | user | partition | qos | wckey | namespace | label:<key> | endpoint
    match_value   text NOT NULL,                      -- exact value, or '*' for any
    workload_type text NOT NULL,
    valid_from    timestamptz NOT NULL DEFAULT '-infinity',
    valid_to      timestamptz NOT NULL DEFAULT 'infinity',
    source        text NOT NULL DEFAULT 'config',
    created_at    timestamptz NOT NULL DEFAULT now(),
    CHECK (valid_from < valid_to)
);
CREATE INDEX workload_rules_lookup_idx ON workload_rules (match_field, match_value, valid_from);

-- The serving endpoints a job was scraped for (serving_jobs, sql/052), the
-- values an 'endpoint' rule matches: a view to join (one hash join for a
-- query's jobs) and a function for one job; a job that serves nothing has
-- no row, and '{}' from the function.
CREATE VIEW job_endpoints AS
    SELECT sj.job_pk, array_agg(DISTINCT e.name ORDER BY e.name) AS endpoints
    FROM serving_jobs sj JOIN serving_endpoints e ON e.endpoint_id = sj.endpoint_id
    GROUP BY sj.job_pk;

CREATE FUNCTION gl_job_endpoints(p_job_pk bigint) RETURNS text[]
LANGUAGE sql STABLE AS $$
    SELECT coalesce((SELECT endpoints FROM job_endpoints WHERE job_pk = p_job_pk), '{}')
$$;

-- The value of a job's field a rule names (owners and workload rules
-- match the same fields): label:<key> reads the Kubernetes labels kept in
-- tags->'labels'; NULL for a field no job has.
CREATE FUNCTION gl_rule_value(p_field text, p_account text, p_user text, p_partition text, p_qos text,
                              p_wckey text, p_namespace text, p_tags jsonb)
RETURNS text
LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE p_field
               WHEN 'account' THEN p_account
               WHEN 'user' THEN p_user
               WHEN 'partition' THEN p_partition
               WHEN 'qos' THEN p_qos
               WHEN 'wckey' THEN p_wckey
               WHEN 'namespace' THEN p_namespace
               ELSE CASE WHEN p_field LIKE 'label:%' THEN p_tags -> 'labels' ->> substr(p_field, 7) END
           END
$$;

-- gl_owner (sql/011) as it was, its field match now gl_rule_value's.
CREATE OR REPLACE FUNCTION gl_owner(p_cluster text, p_account text, p_user text, p_partition text, p_qos text,
                                    p_wckey text, p_namespace text, p_tags jsonb, p_at timestamptz)
RETURNS TABLE (team text, project text, cost_center text)
LANGUAGE sql STABLE AS $$
    SELECT o.team, nullif(o.project, ''), nullif(o.cost_center, '')
    FROM owners o
    WHERE (o.cluster IS NULL OR o.cluster = '' OR o.cluster = p_cluster)
      AND o.valid_from <= p_at AND p_at < o.valid_to
      AND (o.match_value = '*'
           OR o.match_value = gl_rule_value(o.match_field, p_account, p_user, p_partition, p_qos, p_wckey,
                                            p_namespace, p_tags))
    ORDER BY o.priority, o.rule_id
    LIMIT 1
$$;

-- The workload type of a job at p_at (its start). 'endpoint' matches a job
-- that serves the named endpoint ('*': any serving job, never every job).
CREATE FUNCTION gl_workload_type(p_cluster text, p_account text, p_user text, p_partition text, p_qos text,
                                 p_wckey text, p_namespace text, p_tags jsonb, p_endpoints text[],
                                 p_at timestamptz)
RETURNS text
LANGUAGE sql STABLE AS $$
    SELECT coalesce((
        SELECT w.workload_type
        FROM workload_rules w
        WHERE (w.cluster IS NULL OR w.cluster = '' OR w.cluster = p_cluster)
          AND w.valid_from <= p_at AND p_at < w.valid_to
          AND CASE WHEN w.match_field = 'endpoint'
                   THEN (w.match_value = '*' AND cardinality(p_endpoints) > 0) OR w.match_value = ANY (p_endpoints)
                   ELSE w.match_value = '*'
                        OR w.match_value = gl_rule_value(w.match_field, p_account, p_user, p_partition, p_qos,
                                                         p_wckey, p_namespace, p_tags)
              END
        ORDER BY w.priority, w.rule_id
        LIMIT 1), 'unclassified')
$$;

-- The rollups carry the type. With no rule every job is 'unclassified',
-- which is what the default gives the days already built: none is stale.
ALTER TABLE usage_daily ADD COLUMN d_workload_type text NOT NULL DEFAULT 'unclassified';
ALTER TABLE usage_daily_owner ADD COLUMN d_workload_type text NOT NULL DEFAULT 'unclassified';

-- A write to the rules other than a cost-model load makes every day stale,
-- as one to owners does (sql/012, 030); the load marks only the days its
-- change touches (src/store/costing.c).
CREATE TRIGGER workload_rules_daily_stale AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON workload_rules
    FOR EACH STATEMENT EXECUTE FUNCTION gl_usage_daily_stale_all();
