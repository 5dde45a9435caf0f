-- Effective-dated ownership rules and prices. Small reference tables.
CREATE TABLE owners (
    rule_id      bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    priority     integer NOT NULL DEFAULT 100,       -- lower first; first match wins
    cluster      text,                               -- NULL: any cluster
    match_field  text NOT NULL,                      -- account | user | partition | qos | wckey | namespace | label:<key>
    match_value  text NOT NULL,                      -- exact value, or '*' for any
    team         text NOT NULL,
    project      text,
    cost_center  text,
    valid_from   timestamptz NOT NULL DEFAULT '-infinity',
    valid_to     timestamptz NOT NULL DEFAULT 'infinity',
    created_at   timestamptz NOT NULL DEFAULT now(),
    CHECK (valid_from < valid_to)
);
CREATE INDEX owners_lookup_idx ON owners (match_field, match_value, valid_from);

CREATE TABLE rates (
    rate_id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    gpu_model             text NOT NULL,             -- as the inventory / scheduler names it
    mig_profile           text NOT NULL DEFAULT '',  -- '' = whole GPU
    currency              text NOT NULL DEFAULT 'USD',
    micros_per_gpu_hour   bigint NOT NULL CHECK (micros_per_gpu_hour >= 0),
    valid_from            timestamptz NOT NULL DEFAULT '-infinity',
    valid_to              timestamptz NOT NULL DEFAULT 'infinity',
    created_by            text,
    created_at            timestamptz NOT NULL DEFAULT now(),
    CHECK (valid_from < valid_to)
);
-- rate(model, profile, time) lookups.
CREATE INDEX rates_lookup_idx ON rates (gpu_model, mig_profile, valid_from);
