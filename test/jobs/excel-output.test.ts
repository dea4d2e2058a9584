import fs from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { jobsCommand } from '../../src/cli/jobs-command.js';
import { EXPORT_FILTERS, type ExportFilter } from '../../src/storage/job-states.js';
import type { JobOptions } from '../../src/storage/job-records.js';
import { captureIo } from '../support/capture-io.js';
import { engineScope, runUntilSettled, TEST_STORES, type TestEngine } from '../support/test-engine.js';

const BOM = Buffer.from([0xef, 0xbb, 0xbf]);

/** 1,200 rows (three chunks of SMALL_JOBS' 500), accented names, some invalid addresses for the errors file. */
function input(): string {
  const lines = ['name,email'];
  for (let i = 0; i < 1200; i++) lines.push(i % 7 === 0 ? `Zoë Müller ${i},not-an-address-${i}` : `Zoë Müller ${i},zoe${i}@example.com`);
  return lines.join('\n') + '\n';
}

async function bytesOf(stream: AsyncIterable<unknown>): Promise<Buffer> {
  const pieces: Buffer[] = [];
  for await (const piece of stream) pieces.push(Buffer.from(piece as Uint8Array));
  return Buffer.concat(pieces);
}

function boms(bytes: Buffer): number {
  let n = 0;
  for (let at = bytes.indexOf(BOM); at >= 0; at = bytes.indexOf(BOM, at + 1)) n++;
  return n;
}

describe.each(TEST_STORES)('result files of an excel job on %s', (store) => {
  const engines = engineScope(store);
  afterEach(() => engines.closeAll());

  async function completedJob(e: TestEngine, options: JobOptions): Promise<string> {
    const account = await e.deps.billing.createAccount({ credits: 10_000, now: Date.now() });
    const job = await e.jobService.submit({ accountId: account.id, type: 'gender', body: Readable.from([Buffer.from(input())]), inputName: 'in.csv', options });
    await runUntilSettled(e, job.id);
    expect((await e.deps.jobs.require(job.id)).status).toBe('completed');
    return job.id;
  }

  it('start with exactly one UTF-8 BOM in every file, kept by the presigned download and sluice jobs download', async () => {
    const e = await engines.open();
    const id = await completedJob(e, { excel: true });
    for (const filter of EXPORT_FILTERS) {
      const stored = await bytesOf(await e.jobService.openResult(id, filter));
      expect(stored.subarray(0, 3), filter).toEqual(BOM);
      expect(boms(stored), filter).toBe(1);
      expect(stored.subarray(3).toString('utf8').startsWith('name,email,gender'), filter).toBe(true);

      const url = await e.jobService.downloadUrl(id, filter as ExportFilter, 60);
      const response = await fetch(url.url);
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toBe('text/csv; charset=utf-8');
      expect(Buffer.from(await response.arrayBuffer())).toEqual(stored);

      const out = path.join(e.dataDir, `${filter}.csv`);
      expect(await jobsCommand(e, ['download', id, '--filter', filter, '--out', out], captureIo().io)).toBe(0);
      expect(fs.readFileSync(out)).toEqual(stored);
    }
    const all = (await bytesOf(await e.jobService.openResult(id, 'all'))).toString('utf8');
    expect(all).toContain('Zoë Müller 1199,zoe1199@example.com');
  });

  it('has no BOM without the option', async () => {
    const e = await engines.open();
    const id = await completedJob(e, {});
    for (const filter of EXPORT_FILTERS) {
      const stored = await bytesOf(await e.jobService.openResult(id, filter));
      expect(boms(stored), filter).toBe(0);
      expect(stored.toString('utf8').startsWith('name,email,gender'), filter).toBe(true);
    }
  });
});
