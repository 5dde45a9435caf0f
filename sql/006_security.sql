-- Append-only, hash-chained audit log, partitioned by month so retention
-- drops whole partitions (itself audited).
CREATE TABLE audit_log (
    audit_id     bigint GENERATED ALWAYS AS IDENTITY,
    at           timestamptz NOT NULL,
    actor        text NOT NULL,              -- 'token:<id>' | 'system' | 'cli:<user>'
    source_addr  text,
    action       text NOT NULL,              -- http.request | ingest.run | rates.change | token.create | hook.act ...
    object       text,
    outcome      text NOT NULL,              -- ok | denied | error
    detail       jsonb NOT NULL DEFAULT '{}',
    prev_hash    bytea NOT NULL,
    hash         bytea NOT NULL,
    PRIMARY KEY (audit_id, at)
) PARTITION BY RANGE (at);
CREATE TABLE audit_log_default PARTITION OF audit_log DEFAULT;
-- Verification walks the chain in id order; the head is the max id.
CREATE INDEX audit_log_at_idx ON audit_log (at);

CREATE FUNCTION gl_audit_reject() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'audit_log is append-only (% rejected)', TG_OP;
END $$;
CREATE TRIGGER audit_log_no_update BEFORE UPDATE OR DELETE ON audit_log
    FOR EACH ROW EXECUTE FUNCTION gl_audit_reject();
CREATE TRIGGER audit_log_no_truncate BEFORE TRUNCATE ON audit_log
    FOR EACH STATEMENT EXECUTE FUNCTION gl_audit_reject();

CREATE TABLE api_tokens (
    token_id     bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name         text NOT NULL,
    token_sha256 bytea NOT NULL UNIQUE,      -- never the token itself; lookups by hash
    role         text NOT NULL CHECK (role IN ('viewer', 'finance', 'admin', 'hook')),
    scopes       jsonb NOT NULL DEFAULT '{}',
    created_at   timestamptz NOT NULL DEFAULT now(),
    expires_at   timestamptz,
    revoked_at   timestamptz,
    last_used_at timestamptz
);
