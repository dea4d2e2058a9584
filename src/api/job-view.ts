import { EXPORT_FILTERS } from '../storage/job-states.js';
import type { JobRecord } from '../storage/job-records.js';
import { jobSummary } from '../jobs/job-summary.js';

/** A job as the API shows it: the summary, without storage keys, with its download paths. */
export function jobView(job: JobRecord) {
  const { outputs: _outputs, account_id: _account, ...summary } = jobSummary(job);
  return {
    ...summary,
    download_link: job.options.downloadLink === true,
    downloads:
      job.status === 'completed'
        ? Object.fromEntries(EXPORT_FILTERS.map((filter) => [filter, `/api/jobs/${job.id}/download?filter=${filter}`]))
        : null,
  };
}
