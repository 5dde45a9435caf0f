-- The rate rule, written once: a GPU model is priced by the rates that name
-- it, and by the '*' rates only when no rate names it at any time (a model
-- priced for part of the history is unpriced outside that part, not priced
-- as '*'). p_model is a canonical model (gl_gpu_model, sql/024) or NULL
-- (unknown: the '*' rates). Every query that prices GPU time reads rates
-- through these, so a change of the rule is a change here.
--
-- Both are single-SELECT SQL functions that return sets: the planner
-- inlines them into the calling query (a scalar function with a sub-select
-- is not inlined and cost 18 us a call, against 2 us inlined, which the
-- queries that price every job of a month cannot pay).

-- The rates that price p_model, each with its validity.
CREATE FUNCTION gl_rates_of(p_model text)
RETURNS TABLE (valid_from timestamptz, valid_to timestamptz, micros_per_gpu_hour bigint)
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT r.valid_from, r.valid_to, r.micros_per_gpu_hour FROM rates r
    WHERE r.gpu_model = CASE WHEN EXISTS (SELECT 1 FROM rates x WHERE x.gpu_model = p_model) THEN p_model ELSE '*' END
$$;

-- The price of one GPU-hour of p_model (micro-units) in force at p_at: one
-- row, or none when no rate covers it.
CREATE FUNCTION gl_rate_at(p_model text, p_at timestamptz)
RETURNS TABLE (micros_per_gpu_hour bigint)
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT r.micros_per_gpu_hour FROM gl_rates_of(p_model) r WHERE r.valid_from <= p_at AND p_at < r.valid_to LIMIT 1
$$;
