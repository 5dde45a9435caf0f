-- A pending Slurm job array is one sacct row, `7000_[1-100]`, that stands
-- for every task not yet started: pending demand counted it as one job and
-- one task's GPUs. array_tasks is the number of tasks in its range list
-- (NULL for every other row); array_tasks_partial says the list was cut
-- short by sacct ("...") and the count is a lower bound.
ALTER TABLE jobs ADD COLUMN array_tasks integer CHECK (array_tasks > 0);
ALTER TABLE jobs ADD COLUMN array_tasks_partial boolean NOT NULL DEFAULT false;
