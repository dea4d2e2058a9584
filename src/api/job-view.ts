import { EXPORT_FILTERS } from '../storage/job-states.js';
import type { JobRecord } from '../storage/job-records.js';
import { jobActivity, type ActivityClock } from '../jobs/job-activity.js';
import { jobSummary } from '../jobs/job-summary.js';

/**
 * A job as the API shows it: the summary, without storage keys, with its progress figures and its
 * download paths. `at` is the service's clock and lease time (`jobService.activityClock()`); without
 * it the stall check reads the job as of its last change, which is right for the answer to a change
 * (a create, cancel or retry), when no job can have stalled yet.
 */
export function jobView(job: JobRecord, at?: ActivityClock) {
  const { outputs: _outputs, account_id: _account, ...summary } = jobSummary(job);
  return {
    ...summary,
    ...jobActivity(job, at ?? { now: job.updatedAt, leaseMs: Number.MAX_SAFE_INTEGER }),
    download_link: job.options.downloadLink === true,
    downloads:
      job.status === 'completed'
        ? Object.fromEntries(EXPORT_FILTERS.map((filter) => [filter, `/api/jobs/${job.id}/download?filter=${filter}`]))
        : null,
  };
}
