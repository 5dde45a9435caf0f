-- 146: the fence of sql/055 on ingest_runs again.
--
-- sql/058 made ingest_runs a partitioned table by renaming the old one and
-- dropping it once its rows were copied: its fence trigger went with it,
-- so only a watermark (ingest_state) was fenced. A source that moves no
-- watermark (slurm_nodes, kube_nodes: a snapshot and its run row in one
-- transaction) then committed a paused old holder's stale snapshot after
-- the new holder's. On the partitioned table the trigger is cloned onto
-- every partition, those made ahead later (gl_ingest_runs_partitions_ensure)
-- and the DEFAULT one included.
CREATE CONSTRAINT TRIGGER ingest_runs_fence AFTER INSERT OR UPDATE ON ingest_runs
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION gl_lease_fence_check();
