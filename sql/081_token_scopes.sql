-- Token scopes by owner dimension (issue 26): scopes is now one list of
-- values per dimension, {"team": ["vision", "nlp"], "project": ["x"]}
-- (OR within a list, AND across lists). A token made before held
-- {"owners": [...]}, which /v1/jobs matched against the Slurm account or
-- namespace and every other route refused; an owner was meant as a team,
-- which is what such a token now is scoped to.
UPDATE api_tokens
   SET scopes = (scopes - 'owners') || jsonb_build_object('team', scopes -> 'owners')
 WHERE scopes ? 'owners';

-- The server refuses a token whose scope it cannot read; this keeps a
-- hand-made row from getting that far.
ALTER TABLE api_tokens ADD CONSTRAINT api_tokens_scope_dims CHECK (
    jsonb_typeof(scopes) = 'object'
    AND (scopes - ARRAY['team', 'project', 'cost_center', 'account', 'namespace', 'user']) = '{}'::jsonb
);
