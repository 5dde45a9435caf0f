-- Workload rules on a job's run kind (docs/config.md, workload_types,
-- match: run_kind): what made the job, as the run grouping sees it
-- (docs/runs.md). A pod: the JobSet its labels name, else the KubeRay
-- custom resource it came from (ray.io/originated-from-crd: RayJob,
-- RayService, RayCluster), else its controlling owner's kind
-- (ownerReferences: PyTorchJob, TFJob, MPIJob, StatefulSet, Job, ...; a
-- ReplicaSet whose pods carry the Deployment controller's pod-template-hash
-- is the Deployment's), else 'Pod'. A Slurm job: 'array' (an array task),
-- 'het' (a heterogeneous job's component), else 'job'. A property of the
-- job alone, so it can be resolved in the rollup like the other fields.
CREATE FUNCTION gl_job_run_kind(p_namespace text, p_tags jsonb, p_array_job_id bigint, p_het_job_id bigint)
RETURNS text
LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE
        WHEN p_namespace IS NULL THEN
            CASE WHEN p_array_job_id IS NOT NULL THEN 'array' WHEN p_het_job_id IS NOT NULL THEN 'het' ELSE 'job' END
        WHEN p_tags -> 'labels' ? 'jobset.sigs.k8s.io/jobset-name' THEN 'JobSet'
        WHEN nullif(p_tags -> 'labels' ->> 'ray.io/originated-from-crd', '') IS NOT NULL
            THEN p_tags -> 'labels' ->> 'ray.io/originated-from-crd'
        WHEN p_tags ->> 'owner_kind' = 'ReplicaSet' AND p_tags -> 'labels' ? 'pod-template-hash' THEN 'Deployment'
        ELSE coalesce(nullif(p_tags ->> 'owner_kind', ''), 'Pod')
    END
$$;

-- gl_rule_value (sql/088) as it was, and run_kind: the callers put the
-- job's gl_job_run_kind into the tags they pass as 'run_kind'.
CREATE OR REPLACE FUNCTION gl_rule_value(p_field text, p_account text, p_user text, p_partition text, p_qos text,
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
               WHEN 'run_kind' THEN p_tags ->> 'run_kind'
               ELSE CASE WHEN p_field LIKE 'label:%' THEN p_tags -> 'labels' ->> substr(p_field, 7) END
           END
$$;
