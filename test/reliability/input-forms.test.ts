import { isAppError } from '../../src/shared/errors.js';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runJob } from '../../src/cli/run-command.js';
import { bearer, closeHarnesses, json, multipart, newAccount, openApiHarness, runUntilDone, type ApiHarness } from '../support/api-harness.js';
import { cliEnv, DbPeek, killChildren, parseJson, removeScratchDirs, runCli, scratchDir } from '../support/cli-process.js';
import { resultRecords } from '../support/csv-fixture.js';
import { readFormsTable, type FormRow } from '../support/forms-table.js';
import { openTestEngine, type TestEngine } from '../support/test-engine.js';

/**
 * Issue 19, "done when": every row of the "Accepted and refused files" table (docs/reference/file-formats.md) is run
 * through `runJob` (what `sluice run` calls) and through `POST /api/jobs/bulk`; both must give
 * byte-identical result files, the outcome the table states, and charge exactly the rows looked
 * up (nothing for a refused file). A spawned `sluice run` per row would cost ~1.2 s each, so only
 * the rows with options (where the CLI's flag parsing matters) and one plain and one refused row
 * also go through the built CLI as a child process, which must give the same bytes again.
 */

const ROWS = readFormsTable();
const CREDITS = 1_000;
const UTF8_BOM = Buffer.from([0xef, 0xbb, 0xbf]);

interface Outcome {
  status: string;
  reason: string | null;
  creditsUsed: number;
  /** Credits the account lost, read from the store after the job. */
  spent: number;
  all: Buffer | null;
}

let cli: TestEngine;
let api: ApiHarness;
let dir: string;
beforeAll(async () => {
  dir = scratchDir('sluice-forms-');
  cli = await openTestEngine({ SLUICE_DATA_DIR: path.join(dir, 'cli') });
  api = await openApiHarness({ SLUICE_DATA_DIR: path.join(dir, 'api') });
});
afterAll(async () => {
  await killChildren();
  await closeHarnesses();
  await cli.close();
  removeScratchDirs();
});

const fileName = (row: FormRow) => `${ROWS.indexOf(row)}.csv`;

async function throughRunJob(row: FormRow): Promise<Outcome> {
  const file = path.join(dir, fileName(row));
  fs.writeFileSync(file, row.input);
  const account = await cli.deps.billing.createAccount({ credits: CREDITS, now: Date.now() });
  const o = row.options;
  // `sluice run` checks a named column before it makes a job (issue 33): the table's refusal, with
  // the same code, no job and nothing charged.
  const refusal = (e: unknown): Outcome | Promise<Outcome> => {
    if (!isAppError(e) || e.details?.usage !== true) throw e;
    return cli.deps.billing.requireAccount(account.id).then((a) => ({ status: 'failed', reason: e.code, creditsUsed: 0, spent: CREDITS - a.credits, all: null }));
  };
  let run: Awaited<ReturnType<typeof runJob>>;
  try {
    run = await runJob(cli, {
    file,
    type: row.type,
    accountId: account.id,
    outDir: path.join(dir, `run-${ROWS.indexOf(row)}`),
    ...(o.delimiter === undefined ? {} : { delimiter: o.delimiter }),
    ...(o.encoding === undefined ? {} : { encoding: o.encoding }),
    ...(o.country_column === undefined ? {} : { countryColumn: o.country_column }),
    ...(o.default_country === undefined ? {} : { defaultCountry: o.default_country }),
    ...(o.column === undefined ? {} : { column: o.column }),
    ...(o.excel === 'true' ? { excel: true } : {}),
    });
  } catch (e: unknown) {
    return refusal(e);
  }
  return {
    status: run.summary.status,
    reason: run.summary.reason,
    creditsUsed: run.summary.credits_used,
    spent: CREDITS - (await cli.deps.billing.requireAccount(account.id)).credits,
    all: run.files.all ? fs.readFileSync(run.files.all) : null,
  };
}

async function throughApi(row: FormRow): Promise<Outcome> {
  const account = await newAccount(api, { credits: CREDITS });
  const body = multipart([
    { name: 'type', value: row.type },
    ...Object.entries(row.options).map(([name, value]) => ({ name, value })),
    { name: 'file', value: row.input, filename: fileName(row) },
  ]);
  const upload = await api.app.inject({ method: 'POST', url: '/api/jobs/bulk', headers: { ...bearer(account.key), ...body.headers }, payload: body.payload });
  expect(upload.statusCode, upload.body).toBe(202);
  const id = json(upload).id as string;
  await runUntilDone(api, [id]);
  const job = json(await api.app.inject({ method: 'GET', url: `/api/jobs/${id}`, headers: bearer(account.key) }));
  let all: Buffer | null = null;
  if (job.status === 'completed') {
    const download = await api.app.inject({ method: 'GET', url: `/api/jobs/${id}/download?filter=all`, headers: bearer(account.key) });
    expect(download.statusCode).toBe(302);
    all = Buffer.from(await (await fetch(download.headers.location as string)).arrayBuffer());
  }
  return {
    status: job.status,
    reason: job.reason,
    creditsUsed: job.credits_used,
    spent: CREDITS - (await api.engine.deps.billing.requireAccount(account.id)).credits,
    all,
  };
}

/** The built CLI, as a user runs it: flags spelt as the table's options, one account per row. */
async function throughSpawnedCli(row: FormRow, env: NodeJS.ProcessEnv, dataDir: string, accountId: string): Promise<Outcome> {
  const file = path.join(dir, fileName(row));
  fs.writeFileSync(file, row.input);
  const out = path.join(dir, `spawned-${ROWS.indexOf(row)}`);
  const flags = Object.entries(row.options).flatMap(([name, value]) => (name === 'excel' ? (value === 'true' ? ['--excel'] : []) : [`--${name.replaceAll('_', '-')}`, value]));
  const result = await runCli(['run', file, '--type', row.type, '--account', accountId, '--json', '--out', out, ...flags], env);
  // A named column missing from the header is refused before any job (exit 2, the code on stderr).
  const upFront = result.code === 2 ? /\(nothing was submitted\) \(([a-z_]+)\)\n?$/.exec(result.stderr) : null;
  if (upFront) {
    const peek = new DbPeek(dataDir);
    try {
      return { status: 'failed', reason: upFront[1]!, creditsUsed: 0, spent: CREDITS - peek.credits(accountId), all: null };
    } finally {
      peek.close();
    }
  }
  const summary = parseJson(result);
  expect(result.code, result.stderr).toBe(summary.status === 'completed' ? 0 : 1);
  const peek = new DbPeek(dataDir);
  try {
    return {
      status: summary.status,
      reason: summary.reason,
      creditsUsed: summary.credits_used,
      spent: CREDITS - peek.credits(accountId),
      all: summary.files?.all ? fs.readFileSync(summary.files.all) : null,
    };
  } finally {
    peek.close();
  }
}

async function expectTableOutcome(row: FormRow, got: Outcome): Promise<void> {
  if ('refused' in row.expected) {
    expect({ status: got.status, reason: got.reason, creditsUsed: got.creditsUsed, spent: got.spent }).toEqual({
      status: 'failed',
      reason: row.expected.refused,
      creditsUsed: 0,
      spent: 0,
    });
    return;
  }
  expect({ status: got.status, reason: got.reason }).toEqual({ status: 'completed', reason: null });
  const all = got.all!;
  expect(all.subarray(0, 3).equals(UTF8_BOM), 'a UTF-8 BOM at the start of all.csv').toBe(row.bom);
  // The output is UTF-8 whatever came in.
  expect(() => new TextDecoder('utf-8', { fatal: true }).decode(all)).not.toThrow();
  const records = await resultRecords(row.bom ? all.subarray(3) : all);
  const phone = row.type === 'phone_breaches';
  expect(
    records.map((r) => ({
      status: r.status,
      error: r.error,
      ...(phone ? { e164: r.phone_e164 } : {}),
    })),
  ).toEqual(row.expected.rows.map((e) => ({ status: e.status, error: e.error, ...(phone ? { e164: e.e164 ?? '' } : {}) })));
  row.expected.rows.forEach((e, i) => {
    if (e.gender !== undefined) expect(records[i]!.gender, `gender of row ${i + 1}`).toBe(e.gender);
  });
  for (const cell of row.cells) {
    expect(records[cell.row - 1], `output row ${cell.row}`).toBeDefined();
    expect(Object.keys(records[cell.row - 1]!), 'output columns').toContain(cell.column);
    expect(records[cell.row - 1]![cell.column], `output cell ${cell.row}:${cell.column}`).toBe(cell.value);
  }
  // A fresh account: each row looked up is charged once, nothing else is, and the balance agrees.
  const charged = records.map((r) => Number(r.credits));
  records.forEach((r, i) => expect(charged[i], `credits of row ${i + 1} (${r.status})`).toBe(r.status === 'ok' ? 1 : 0));
  const total = charged.reduce((a, b) => a + b, 0);
  expect({ creditsUsed: got.creditsUsed, spent: got.spent }).toEqual({ creditsUsed: total, spent: total });
}

describe('the table of accepted and refused files (docs/reference/file-formats.md)', () => {
  it('has rows of every kind', () => {
    expect(ROWS.length).toBeGreaterThan(40);
    expect(ROWS.filter((r) => 'refused' in r.expected).length).toBeGreaterThan(10);
    expect(new Set(ROWS.map((r) => r.name)).size, 'row names are unique').toBe(ROWS.length);
  });

  it.each(ROWS.map((row) => [row.name, row] as const))('%s: the same outcome through sluice run and POST /api/jobs/bulk, as the table says', async (_name, row) => {
    const run = await throughRunJob(row);
    const bulk = await throughApi(row);
    await expectTableOutcome(row, run);
    await expectTableOutcome(row, bulk);
    expect(bulk.all?.toString('latin1') ?? null, 'all.csv of the API job is the bytes of sluice run').toBe(run.all?.toString('latin1') ?? null);
  });
});

describe('the built CLI, spawned', () => {
  const plain = ROWS.find((r) => Object.keys(r.options).length === 0 && 'rows' in r.expected);
  const refused = ROWS.find((r) => Object.keys(r.options).length === 0 && 'refused' in r.expected);
  const spawned = ROWS.filter((r) => Object.keys(r.options).length > 0 || r === plain || r === refused);

  it('runs the rows with options, one plain and one refused row, and gives the bytes runJob gives', async () => {
    const dataDir = path.join(dir, 'spawned');
    // Accounts made in-process and closed before any child opens the data dir.
    const engine = await openTestEngine({ SLUICE_DATA_DIR: dataDir });
    const accounts: string[] = [];
    try {
      for (const _ of spawned) accounts.push((await engine.deps.billing.createAccount({ credits: CREDITS, now: Date.now() })).id);
    } finally {
      await engine.close();
    }
    const env = cliEnv(dataDir, { SLUICE_POLL_MS: '20' });
    for (const [i, row] of spawned.entries()) {
      const child = await throughSpawnedCli(row, env, dataDir, accounts[i]!);
      await expectTableOutcome(row, child);
      const inProcess = await throughRunJob(row);
      const seen = (o: Outcome) => ({ status: o.status, reason: o.reason, all: o.all?.toString('latin1') ?? null });
      expect(seen(child), `${row.name}: the spawned CLI against runJob`).toEqual(seen(inProcess));
    }
  }, 180_000);
});
