-- 058: time-series tables kept in time partitions made ahead of need, and
-- retention that drops whole partitions, never rows (docs/scale.md, "Time
-- partitioning and retention").

-- ingest_runs gains a row per source per run (a source every 30 s is ~2,900
-- rows a day per cluster): monthly partitions by started_at, so an old month
-- goes with one DROP. LIKE carries every column an earlier migration added.
ALTER TABLE ingest_runs RENAME TO ingest_runs_unpartitioned;
ALTER TABLE ingest_runs_unpartitioned RENAME CONSTRAINT ingest_runs_pkey TO ingest_runs_unpartitioned_pkey;
ALTER INDEX ingest_runs_source_idx RENAME TO ingest_runs_unpartitioned_source_idx;
CREATE TABLE ingest_runs (LIKE ingest_runs_unpartitioned
    INCLUDING DEFAULTS INCLUDING IDENTITY INCLUDING CONSTRAINTS INCLUDING GENERATED INCLUDING STORAGE INCLUDING COMMENTS)
    PARTITION BY RANGE (started_at);
-- The partition key must be in the key; run_id still leads it, so a lookup
-- or a page by run_id is one index probe per month.
ALTER TABLE ingest_runs ADD PRIMARY KEY (run_id, started_at);
ALTER TABLE ingest_runs ADD FOREIGN KEY (cluster_id) REFERENCES clusters;
CREATE INDEX ingest_runs_source_idx ON ingest_runs (source, cluster_id, started_at DESC);
-- Catches a run of a month nobody made ahead (no daemon ran for months):
-- such a month stays there, since moving rows out would take a DELETE.
CREATE TABLE ingest_runs_default PARTITION OF ingest_runs DEFAULT;

-- Monthly ingest_runs partitions from the month of from_day on.
-- SECURITY DEFINER (as 050's partition makers): only the owner of a
-- partitioned table adds or drops its partitions, and the daemon runs as
-- the service's role.
CREATE FUNCTION gl_ingest_runs_partitions_ensure(from_day date, months integer) RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_catalog, pg_temp SET TimeZone = 'UTC' AS $$
DECLARE
    m date := date_trunc('month', from_day)::date;
    lo timestamptz;
    hi timestamptz;
    part text;
    made integer := 0;
BEGIN
    FOR i IN 1..months LOOP
        part := 'ingest_runs_' || to_char(m, 'YYYY_MM');
        lo := m::timestamp AT TIME ZONE 'UTC';
        hi := (m + interval '1 month')::timestamp AT TIME ZONE 'UTC';
        IF to_regclass(part) IS NULL
           AND NOT EXISTS (SELECT 1 FROM ingest_runs_default WHERE started_at >= lo AND started_at < hi) THEN
            EXECUTE format('CREATE TABLE %I PARTITION OF ingest_runs FOR VALUES FROM (%L) TO (%L)', part, lo, hi);
            made := made + 1;
        END IF;
        m := (m + interval '1 month')::date;
    END LOOP;
    RETURN made;
END $$;

-- every month that holds a run, and the next three
SELECT gl_ingest_runs_partitions_ensure(m0::date,
           (SELECT count(*) FROM generate_series(m0, date_trunc('month', now()) + interval '2 months',
                                                 interval '1 month'))::integer)
  FROM (SELECT date_trunc('month', coalesce(min(started_at), now())) AS m0 FROM ingest_runs_unpartitioned) s;
INSERT INTO ingest_runs OVERRIDING SYSTEM VALUE SELECT * FROM ingest_runs_unpartitioned;
SELECT setval(pg_get_serial_sequence('ingest_runs', 'run_id'),
              coalesce((SELECT max(run_id) FROM ingest_runs), 1),
              (SELECT count(*) > 0 FROM ingest_runs));
DROP TABLE ingest_runs_unpartitioned;

-- Every bounded partition of a time-partitioned table with its range (the
-- DEFAULT partition has none and is not listed) and the planner's row
-- estimate (a count would read a whole day of a 100,000-GPU fleet).
CREATE FUNCTION gl_time_partitions(parent regclass)
RETURNS TABLE (partition_name text, lo timestamptz, hi timestamptz, est_rows bigint)
LANGUAGE sql STABLE AS $$
    SELECT p.relname, p.lo, p.hi, p.est
      FROM (SELECT format('%I.%I', n.nspname, c.relname) AS relname,
                   (regexp_match(pg_get_expr(c.relpartbound, c.oid), 'FROM \(''([^'']+)''\)'))[1]::timestamptz AS lo,
                   (regexp_match(pg_get_expr(c.relpartbound, c.oid), 'TO \(''([^'']+)''\)'))[1]::timestamptz AS hi,
                   greatest(c.reltuples, 0)::bigint AS est
              FROM pg_inherits i
              JOIN pg_class c ON c.oid = i.inhrelid
              JOIN pg_namespace n ON n.oid = c.relnamespace
             WHERE i.inhparent = parent) p
     WHERE p.hi IS NOT NULL
     ORDER BY p.lo
$$;

-- Retention of ingest_runs: drops the monthly partitions that end on or
-- before `before`. Returns what went.
CREATE FUNCTION gl_ingest_runs_partitions_drop(before timestamptz)
RETURNS TABLE (partition_name text, lo timestamptz, hi timestamptz, est_rows bigint)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_catalog, pg_temp AS $$
DECLARE
    p record;
BEGIN
    FOR p IN SELECT * FROM gl_time_partitions('ingest_runs') t WHERE t.hi <= before LOOP
        EXECUTE format('DROP TABLE %s', p.partition_name);
        partition_name := p.partition_name; lo := p.lo; hi := p.hi; est_rows := p.est_rows;
        RETURN NEXT;
    END LOOP;
END $$;

-- Retention of the exporter rollups: drops the day partitions of gpu_usage
-- and gpu_usage_jobs that end on or before `before`, but only days that
-- usage_daily holds built: a day not rolled up yet keeps its detail until it
-- is (the rollup would otherwise build it from nothing). Same lock as the
-- builder (sql/012), so a build in flight finishes first.
CREATE FUNCTION gl_usage_partitions_drop(before timestamptz)
RETURNS TABLE (partition_name text, lo timestamptz, hi timestamptz, est_rows bigint, kept boolean)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_catalog, pg_temp AS $$
DECLARE
    p record;
BEGIN
    PERFORM pg_advisory_xact_lock(26476, 0);
    FOR p IN SELECT t.*, EXISTS (SELECT 1 FROM usage_daily_built b WHERE b.day = (t.lo AT TIME ZONE 'UTC')::date) AS built
               FROM (SELECT * FROM gl_time_partitions('gpu_usage')
                     UNION ALL SELECT * FROM gl_time_partitions('gpu_usage_jobs')) t
              WHERE t.hi <= before
              ORDER BY t.lo, t.partition_name LOOP
        partition_name := p.partition_name; lo := p.lo; hi := p.hi; est_rows := p.est_rows;
        kept := NOT p.built;
        IF p.built THEN
            EXECUTE format('DROP TABLE %s', p.partition_name);
        END IF;
        RETURN NEXT;
    END LOOP;
END $$;

REVOKE EXECUTE ON FUNCTION gl_ingest_runs_partitions_ensure(date, integer) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION gl_ingest_runs_partitions_drop(timestamptz) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION gl_usage_partitions_drop(timestamptz) FROM PUBLIC;
