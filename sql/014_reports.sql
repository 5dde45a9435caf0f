-- Monthly showback reports made by the daemon (and by `report showback
-- --record`), and budget alerts already sent. See docs/reports.md.

-- One row per file of a report set. A closed month is immutable: a later run
-- whose CSV is byte-identical records nothing; one whose CSV differs (late
-- data) is a new version, written beside the old files (which stay), with
-- `changed` naming the CSV tables that differ.
CREATE TABLE report_files (
    file_id      bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    month        date NOT NULL,             -- first day of the reported month
    aggregate    text NOT NULL,
    share_idle   text NOT NULL,
    version      integer NOT NULL,          -- 1, then 2, 3 ... when late data changed the CSV
    format       text NOT NULL,             -- csv | html | pdf
    name         text NOT NULL,             -- file name under reports.dir
    sha256       text NOT NULL,
    bytes        bigint NOT NULL,
    changed      text[] NOT NULL DEFAULT '{}', -- CSV tables that differ from the previous version
    trigger      text NOT NULL,             -- schedule | cli
    generated_at timestamptz NOT NULL,
    UNIQUE (month, aggregate, share_idle, version, name)
);
CREATE INDEX report_files_month_idx ON report_files (month DESC, aggregate, share_idle, version DESC);

-- One row per (owner, aggregate, month, threshold) alert: the row is inserted before
-- the command runs, in the same transaction as its audit row, so a restart
-- never sends an alert twice.
CREATE TABLE budget_alerts (
    owner          text NOT NULL,
    aggregate      text NOT NULL,             -- the dimension owner is a value of (team, project, ...)
    month          date NOT NULL,
    threshold_pct  integer NOT NULL,
    spend_micros   bigint NOT NULL,
    budget_micros  bigint NOT NULL,
    fired_at       timestamptz NOT NULL,
    command_status text,                    -- "exit 0", "exit 1", "not configured", ...
    PRIMARY KEY (owner, aggregate, month, threshold_pct)
);
