-- Cost model loaded from YAML: where each rule came from, dedicated-hardware
-- idle owners, and owner resolution at a job's time.
ALTER TABLE rates ADD COLUMN source text NOT NULL DEFAULT 'config';
ALTER TABLE owners ADD COLUMN source text NOT NULL DEFAULT 'config';

CREATE TABLE idle_owners (
    idle_owner_id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    cluster       text NOT NULL,
    partition     text NOT NULL DEFAULT '',   -- '' = the whole cluster
    team          text NOT NULL,
    source        text NOT NULL DEFAULT 'config',
    UNIQUE (cluster, partition)
);

-- The owner of a job: the first rule (priority, then id) that matches at p_at.
-- label:<key> reads Kubernetes labels kept in tags->'labels'.
CREATE FUNCTION gl_owner(p_cluster text, p_account text, p_user text, p_partition text, p_qos text,
                         p_wckey text, p_namespace text, p_tags jsonb, p_at timestamptz)
RETURNS TABLE (team text, project text, cost_center text)
LANGUAGE sql STABLE AS $$
    SELECT o.team, nullif(o.project, ''), nullif(o.cost_center, '')
    FROM owners o
    WHERE (o.cluster IS NULL OR o.cluster = '' OR o.cluster = p_cluster)
      AND o.valid_from <= p_at AND p_at < o.valid_to
      AND (o.match_value = '*' OR o.match_value =
           CASE o.match_field
               WHEN 'account' THEN p_account
               WHEN 'user' THEN p_user
               WHEN 'partition' THEN p_partition
               WHEN 'qos' THEN p_qos
               WHEN 'wckey' THEN p_wckey
               WHEN 'namespace' THEN p_namespace
               ELSE CASE WHEN o.match_field LIKE 'label:%'
                         THEN p_tags -> 'labels' ->> substr(o.match_field, 7) END
           END)
    ORDER BY o.priority, o.rule_id
    LIMIT 1
$$;
