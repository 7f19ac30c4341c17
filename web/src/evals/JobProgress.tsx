import type { Schemas } from "../api/client";

/** An evaluation job's progress: a bar, and the same in words. */
export function JobProgress({ job }: { job: Schemas["EvaluationJob"] }) {
  const words = job.total == null ? `${job.status}…` : `${job.status}: ${job.done} of ${job.total} episodes`;
  return (
    <span className="job-progress" data-job-status={job.status}>
      <progress value={job.done} max={job.total ?? undefined} aria-label={words} /> <span className="small">{words}</span>
    </span>
  );
}
