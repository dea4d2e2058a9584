/**
 * The single-machine scenarios on PostgreSQL: a first run and a repeat of the same file, in the same
 * way as on SQLite, against a PostgreSQL server the bench starts itself (the bundled binaries, on
 * loopback). Each run gets a database of its own; the repeat reuses the first run's.
 */
import type { EngineResult } from './engine-run.js';
import { createDatabase, startPostgres, type PostgresServer } from './postgres-server.js';
import { fmt, ratioVerdict } from './report.js';
import { phaseText, rate, rowsText, TARGETS, type BenchContext } from './scenario-context.js';
import type { EngineFloor } from './scenario-engine.js';

export interface PostgresResult {
  first: EngineResult;
  repeat: EngineResult;
}

export async function postgresScenario(ctx: BenchContext, ef: EngineFloor, floorMs: number | undefined, sqliteRepeat: EngineResult | undefined): Promise<PostgresResult | undefined> {
  const { bench, log, options } = ctx;
  const { rows } = options;
  const target = `engine/floor ≤ ${TARGETS.postgresFloor.toFixed(1)} (aim ${TARGETS.postgresFloorAim.toFixed(1)})`;
  let server: PostgresServer | undefined;
  try {
    log('postgres: starting a PostgreSQL server on loopback');
    server = await startPostgres();
    const url = await createDatabase(server.url, 'sluice_bench');
    const env = { SLUICE_DATABASE_URL: url };
    log(`postgres: first run (${rowsText(rows)} rows)`);
    const { dir, result: first } = await bench.freshRun(rows, 'postgres', [], env);
    log(`  postgres ${fmt.s(first.workerMs)}, ${fmt.int(rate(rows, first.workerMs))} rows/s, peak RSS ${fmt.mb(first.maxRssKiB * 1024)}`);
    log('postgres: second run, same account, same file');
    const staged = await bench.stage(dir, rows, 'mixed', env);
    const repeat = await bench.run(dir, staged.jobId, rows, [], env);
    log(`  postgres repeat ${fmt.s(repeat.workerMs)}`);
    bench.remove(dir);

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
      target: `repeat/floor ≤ ${TARGETS.postgresFloor.toFixed(1)} (aim ${TARGETS.postgresFloorAim.toFixed(1)})`,
      met: repeatRatio === undefined ? 'n/a' : ratioVerdict(repeatRatio, TARGETS.postgresFloor, TARGETS.postgresFloorAim),
      detail:
        `${fmt.int(rate(rows, repeat.workerMs))} rows/s (${fmt.s(repeat.workerMs)}), ${fmt.x(speedup)} the first run's; ${fmt.int(repeat.counters.creditsUsed)} credits charged on the repeat (first run: ${fmt.int(first.counters.creditsUsed)}); ${phaseText(repeat)}` +
        (sqliteRepeat ? `; SQLite's repeat in the same run: ${fmt.s(sqliteRepeat.workerMs)}` : ''),
    });
    return { first, repeat };
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
    'Every checkpoint is a round trip to the server per statement, where SQLite calls into the same process.'
  );
}
