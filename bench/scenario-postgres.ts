/**
 * The single-machine scenarios on PostgreSQL: a first run and a repeat of the same file, in the same
 * way as on SQLite, against a PostgreSQL server the bench starts itself (the bundled binaries, on
 * loopback). Each run gets a database of its own; the repeat reuses the first run's.
 */
import type { EngineResult } from './engine-run.js';
import pg from 'pg';
import { createDatabase, serverCpuMs, startPostgres, type PostgresServer } from './postgres-server.js';
import { fmt, ratioVerdict } from './report.js';
import { phaseText, rate, rowsText, TARGETS, type BenchContext } from './scenario-context.js';
import type { EngineFloor } from './scenario-engine.js';

export interface PostgresResult {
  first: EngineResult;
  repeat: EngineResult;
  /** CPU of the server's processes (ms) during each run. */
  firstServerMs: number;
  repeatServerMs: number;
  settings: string;
}

export async function postgresScenario(ctx: BenchContext, ef: EngineFloor, floorMs: number | undefined, sqliteRepeat: EngineResult | undefined): Promise<PostgresResult | undefined> {
  const { bench, log, options } = ctx;
  const { rows } = options;
  const target = `engine/floor ≤ ${TARGETS.postgresFloor.toFixed(1)} (aim ${TARGETS.postgresFloorAim.toFixed(1)})`;
  let server: PostgresServer | undefined;
  try {
    log('postgres: starting a PostgreSQL server on loopback');
    // As a deployment runs it: fsync and synchronous_commit on.
    server = await startPostgres({ durable: true });
    const pid = server.pid!;
    const url = await createDatabase(server.url, 'sluice_bench');
    const env = { SLUICE_DATABASE_URL: url };
    log(`postgres: first run (${rowsText(rows)} rows; ${server.settings})`);
    // The server's CPU over the run: staging is part of freshRun, so the count takes it in (small).
    let cpu0 = serverCpuMs(pid);
    const { dir, result: first } = await bench.freshRun(rows, 'postgres', [], env);
    const firstServerMs = serverCpuMs(pid) - cpu0;
    log(`  postgres ${fmt.s(first.workerMs)}, ${fmt.int(rate(rows, first.workerMs))} rows/s, peak RSS ${fmt.mb(first.maxRssKiB * 1024)}, server CPU ${fmt.s(firstServerMs)}`);
    await logTopStatements(url, log);
    log('postgres: second run, same account, same file');
    const staged = await bench.stage(dir, rows, 'mixed', env);
    cpu0 = serverCpuMs(pid);
    const repeat = await bench.run(dir, staged.jobId, rows, [], env);
    const repeatServerMs = serverCpuMs(pid) - cpu0;
    log(`  postgres repeat ${fmt.s(repeat.workerMs)}, server CPU ${fmt.s(repeatServerMs)}`);
    bench.remove(dir);
    const settings = server.settings;

    const sqliteFirst = ef.engineMid;
    const ratio = floorMs === undefined ? undefined : first.workerMs / floorMs;
    ctx.table.push({
      scenario: 'engine, PostgreSQL',
      figure: ratio === undefined ? `${fmt.int(rate(rows, first.workerMs))} rows/s` : `engine/floor ${fmt.x(ratio)}`,
      target,
      met: ratio === undefined ? 'n/a' : ratioVerdict(ratio, TARGETS.postgresFloor, TARGETS.postgresFloorAim),
      detail:
        `${rowsText(rows)} rows in ${fmt.s(first.workerMs)} (${fmt.int(rate(rows, first.workerMs))} rows/s), peak RSS ${fmt.mb(first.maxRssKiB * 1024)}; ${phaseText(first)}` +
        (sqliteFirst ? `; SQLite in the same run: ${fmt.s(sqliteFirst.workerMs)}, so PostgreSQL took ${fmt.x(first.workerMs / sqliteFirst.workerMs)} as long` : ''),
    });
    const speedup = first.workerMs / repeat.workerMs;
    const repeatRatio = floorMs === undefined ? undefined : repeat.workerMs / floorMs;
    ctx.table.push({
      scenario: 'repeat, PostgreSQL',
      figure: repeatRatio === undefined ? `${fmt.x(speedup)} the first run's rows/s` : `repeat/floor ${fmt.x(repeatRatio)}`,
      target: `repeat/floor ≤ ${TARGETS.postgresRepeatFloor.toFixed(1)} (aim ${TARGETS.postgresRepeatFloorAim.toFixed(1)})`,
      met: repeatRatio === undefined ? 'n/a' : ratioVerdict(repeatRatio, TARGETS.postgresRepeatFloor, TARGETS.postgresRepeatFloorAim),
      detail:
        `${fmt.int(rate(rows, repeat.workerMs))} rows/s (${fmt.s(repeat.workerMs)}), ${fmt.x(speedup)} the first run's; ${fmt.int(repeat.counters.creditsUsed)} credits charged on the repeat (first run: ${fmt.int(first.counters.creditsUsed)}); ${phaseText(repeat)}` +
        (sqliteRepeat ? `; SQLite's repeat in the same run: ${fmt.s(sqliteRepeat.workerMs)}` : ''),
    });
    const perMillion = (ms: number) => (ms * 1_000_000) / rows;
    ctx.table.push({
      scenario: 'PostgreSQL over SQLite',
      figure: sqliteFirst ? `${fmt.x(first.workerMs / sqliteFirst.workerMs)}` : 'n/a (no SQLite engine run)',
      target: '≤ 1.5 (aim 1.2)',
      met: sqliteFirst ? ratioVerdict(first.workerMs / sqliteFirst.workerMs, 1.5, 1.2) : 'n/a',
      detail: `the engine scenario's file on both stores in this run; PostgreSQL settings: ${settings}`,
    });
    ctx.table.push({
      scenario: 'PostgreSQL server CPU',
      figure: `${fmt.s(perMillion(firstServerMs))} per 1M rows`,
      target: '≤ 10 s per 1M rows (aim 5 s)',
      met: ratioVerdict(perMillion(firstServerMs) / 1000, 10, 5),
      detail: `user + system time of the postmaster and its processes (from /proc) over the first run: ${fmt.s(firstServerMs)} for ${rowsText(rows)} rows (${fmt.int((firstServerMs * 1000) / rows)} µs a row); the repeat ${fmt.s(repeatServerMs)}; settings: ${settings}`,
    });
    return { first, repeat, firstServerMs, repeatServerMs, settings };
  } catch (e: unknown) {
    ctx.failed('engine, PostgreSQL', target, e);
    return undefined;
  } finally {
    await server?.stop();
  }
}

export function postgresFinding(r: PostgresResult, sqlite: EngineResult | undefined): string {
  const charged = `${fmt.int(r.first.counters.creditsUsed)} credits on the first run`;
  if (!sqlite) return `On PostgreSQL the first run took ${fmt.s(r.first.workerMs)} (${charged}) and the repeat ${fmt.s(r.repeat.workerMs)}.`;
  const same = sqlite.counters.creditsUsed === r.first.counters.creditsUsed ? 'the same charges as SQLite' : `SQLite charged ${fmt.int(sqlite.counters.creditsUsed)}`;
  return (
    `On PostgreSQL the first run took ${fmt.s(r.first.workerMs)} against SQLite's ${fmt.s(sqlite.workerMs)} (${charged}, ${same}), and the repeat ${fmt.s(r.repeat.workerMs)}. ` +
    'A checkpoint is one round trip to the server (sluice_checkpoint), where SQLite calls into the same process; charging checkpoints and reservations of one account still queue on its row through each commit.'
  );
}

/** The statements the first run spent the server's time on, for the log (pg_stat_statements). */
async function logTopStatements(url: string, log: (line: string) => void): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  client.on('error', () => undefined);
  try {
    await client.connect();
    await client.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
    const { rows } = await client.query<{ calls: string; total: number; mean: number; query: string }>(
      `SELECT calls::text, total_exec_time AS total, mean_exec_time AS mean, regexp_replace(query, '\\s+', ' ', 'g') AS query
         FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
        ORDER BY total_exec_time DESC LIMIT 12`,
    );
    const sum = rows.reduce((n, r) => n + r.total, 0);
    log(`  pg_stat_statements, top 12 by time (${fmt.s(sum)} in all of them):`);
    for (const r of rows) log(`    ${fmt.s(r.total)} ${r.calls} calls, ${r.mean.toFixed(2)} ms each: ${r.query.slice(0, 160)}`);
  } catch (e) {
    log(`  pg_stat_statements unavailable: ${(e as Error).message}`);
  } finally {
    await client.end().catch(() => undefined);
  }
}
