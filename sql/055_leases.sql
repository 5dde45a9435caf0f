-- 055: several daemons on one database (docs/scale.md, "Several daemons").
--
-- Each periodic job (a source of a cluster, the rollup, reports, budget
-- alerts, the audit anchor) runs on the instance that holds its lease.
-- Time is the database's (now()): instances never compare their clocks.
-- token changes whenever the lease changes hands and comes from one
-- sequence, so it only grows (also across a failover: a sequence is logged
-- ahead of the values it hands out).
CREATE SEQUENCE lease_tokens;
CREATE TABLE leases (
    name        text PRIMARY KEY,           -- "sacct:testgpu", "rollup:all", "audit:anchor"
    holder      text NOT NULL,              -- one process: its instance name, pid, start and a random part
    instance    text NOT NULL,              -- what /metrics and ingest_runs call that process
    token       bigint NOT NULL,            -- the fencing token
    ttl_s       integer NOT NULL CHECK (ttl_s > 0),
    acquired_at timestamptz NOT NULL,
    renewed_at  timestamptz NOT NULL,
    expires_at  timestamptz NOT NULL
);

-- Which instance ran each run; a one-shot command leaves it NULL.
ALTER TABLE ingest_runs ADD COLUMN instance text
    DEFAULT nullif(current_setting('gpuledger.instance', true), '');

-- The fence: a session that runs a leased job sets gpuledger.fence to
-- "<token>:<lease name>". Any transaction of it that writes a run or a
-- watermark commits only while that token is still the lease's: a holder
-- that was paused past its lease (SIGSTOP, a VM freeze, a long GC of the
-- host) and comes back after another took over has its commit refused.
-- Deferred to COMMIT and under FOR SHARE, so the check and the commit are
-- one step against a takeover (which updates the row and waits for it).
CREATE FUNCTION gl_lease_fence_check() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    f text := current_setting('gpuledger.fence', true);
    want bigint;
    lname text;
    cur bigint;
    who text;
BEGIN
    IF f IS NULL OR f = '' THEN
        RETURN NULL;
    END IF;
    want := split_part(f, ':', 1)::bigint;
    lname := substr(f, length(split_part(f, ':', 1)) + 2);
    SELECT l.token, l.instance INTO cur, who FROM leases l WHERE l.name = lname FOR SHARE;
    IF cur IS DISTINCT FROM want THEN
        RAISE EXCEPTION 'lease % lost: instance % holds it now (token %, this session had %); commit refused',
            lname, coalesce(who, '(none)'), coalesce(cur::text, 'none'), want
            USING ERRCODE = 'GLF01';
    END IF;
    RETURN NULL;
END $$;

CREATE CONSTRAINT TRIGGER ingest_state_fence AFTER INSERT OR UPDATE ON ingest_state
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION gl_lease_fence_check();
CREATE CONSTRAINT TRIGGER ingest_runs_fence AFTER INSERT OR UPDATE ON ingest_runs
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION gl_lease_fence_check();
