-- 122: a session routed to the shards opens its connections to them before
-- it serves a request (docs/scale.md, "Routing and pushdown").
--
-- postgres_fdw connects to a shard when a statement of the session first
-- scans one of its foreign tables, and the clusters-without-capacity check
-- and gl_fleet_rows make a dblink connection per shard on their first
-- call: each a new backend on the shard (a fork, scram authentication,
-- postgres_fdw's five settings), one shard after the other. A worker
-- session's first request paid them all: the first request's statements
-- spent 93-145 ms binding the built days (the three postgres_fdw
-- connections, made at executor start) and 65-173 ms in the check (the
-- three dblink connections), at 300,000 jobs and load average 8. The
-- daemon calls this when it opens a worker's session (gl_shard_warm), so
-- both kinds of connection exist before any request, and the shards have
-- already planned and run the check's function once.

-- On a session routed by gl_fleet_use: every shard of its set scanned once
-- (one postgres_fdw connection per foreign server, kept for the session),
-- and the check asked of every shard over the session's dblink
-- connections, for an empty window. Returns the last day every shard holds
-- built (epoch seconds; NULL when none, or when not routed to the fleet):
-- the daemon then plans a built day's statements on the session too.
CREATE FUNCTION gl_fleet_warm() RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    d date;
BEGIN
    IF substring(current_setting('search_path') FROM '^"?gl_fleet_([0-9]+)') IS NULL THEN
        RETURN NULL; -- not routed to the fleet: nothing to open
    END IF;
    PERFORM count(*) FROM clusters;
    PERFORM * FROM gl_capacity_missing(0, 0, NULL);
    SELECT max(day) INTO d FROM usage_daily_built;
    RETURN extract(epoch FROM d::timestamp)::bigint;
END $$;
