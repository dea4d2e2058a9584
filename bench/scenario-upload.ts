/** The upload scenario: the file through POST /api/jobs/bulk to `sluice serve --no-worker`. */
import { fmt, verdict } from './report.js';
import { median, medianRun, rowsText, TARGETS, type BenchContext } from './scenario-context.js';
import { measureUpload, type UploadResult } from './upload.js';

export async function uploadScenario(ctx: BenchContext): Promise<UploadResult[]> {
  const { bench, options, log } = ctx;
  const { rows } = options;
  const target = `server RSS growth < ${fmt.mb(TARGETS.uploadGrowth)}`;
  const uploads: UploadResult[] = [];
  try {
    for (let i = 0; i < options.uploadRuns; i++) {
      log(`upload run ${i + 1}/${options.uploadRuns}`);
      const dir = bench.freshDir('upload');
      const u = await measureUpload(dir, await bench.input(rows), rows, options.env);
      bench.remove(dir);
      uploads.push(u);
      log(`  upload ${fmt.s(u.seconds * 1000)}, ${u.mbPerSecond.toFixed(1)} MB/s, RSS +${fmt.mb(u.rssGrowth)}`);
    }
    const mid = medianRun(uploads, (u) => u.seconds);
    const growth = Math.max(...uploads.map((u) => u.rssGrowth));
    ctx.table.push({
      scenario: 'upload',
      figure: `server RSS +${fmt.mb(growth)}; ${median(uploads.map((u) => u.mbPerSecond)).toFixed(1)} MB/s`,
      target,
      met: verdict(growth < TARGETS.uploadGrowth),
      detail:
        `${fmt.mb(mid.bytes)} (${rowsText(rows)} rows) streamed as multipart over loopback in ${fmt.s(mid.seconds * 1000)}` +
        `${uploads.length > 1 ? ` (median of ${uploads.length}; growth is the highest)` : ''}; ` +
        `VmRSS ${fmt.mb(mid.rssBefore)} before, ${fmt.mb(mid.rssPeak)} at peak (${mid.samples} samples every 100 ms, after one 64 KiB warm-up upload)`,
    });
    return uploads;
  } catch (e: unknown) {
    ctx.failed('upload', target, e);
    return [];
  }
}

export function uploadFinding(uploads: UploadResult[]): string {
  const u = medianRun(uploads, (x) => x.seconds);
  return (
    `The upload streamed ${fmt.mb(u.bytes)} at ${u.mbPerSecond.toFixed(1)} MB/s while the server grew by ${fmt.mb(u.rssGrowth)}` +
    (u.rssGrowth < TARGETS.uploadGrowth ? `, well under the file's size: the upload is streamed, not buffered.` : `: more than the ${fmt.mb(TARGETS.uploadGrowth)} target.`)
  );
}
