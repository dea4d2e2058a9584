/**
 * The provider simulator in a process of its own, for the remote scenario: a real remote service
 * does not share the engine's event loop or CPU, so neither does this one.
 *
 *   node dist/bench/remote-simulator.js [--latency-ms 20] [--full 64]
 *
 * Prints {"event":"listening","url":...} once it accepts requests. On SIGTERM it prints one
 * {"event":"stats",...} line (the simulator's counters, its CPU time, and the requests it had in
 * flight over time) and exits.
 */
import { parseArgs } from 'node:util';
import { startProviderSimulator, type SimulatorStats } from '../src/lookups/remote/provider-simulator.js';
import { InFlightRecorder, type InFlightTimeline } from './remote-timeline.js';

export interface SimulatorListening {
  event: 'listening';
  url: string;
  latencyMs: number;
}

export interface SimulatorReport {
  event: 'stats';
  stats: Omit<SimulatorStats, 'inFlight'>;
  cpuUserMs: number;
  cpuSystemMs: number;
  /** From the simulator's start: a request is in flight from its arrival until its answer is sent. */
  timeline: InFlightTimeline;
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { 'latency-ms': { type: 'string', default: '20' }, full: { type: 'string', default: '64' } } });
  const latencyMs = Number(values['latency-ms']);
  const simulator = await startProviderSimulator({ latencyMs });
  const recorder = new InFlightRecorder(Number(values.full));
  // The simulator counts `++stats.inFlight` and `stats.inFlight--` on this object: an accessor sees
  // every change without a change to the simulator itself.
  Object.defineProperty(simulator.stats, 'inFlight', {
    enumerable: true,
    get: () => recorder.inFlight,
    set: (level: number) => {
      recorder.inFlight = level;
    },
  });
  const cpu0 = process.cpuUsage();
  process.stdout.write(`${JSON.stringify({ event: 'listening', url: simulator.url, latencyMs } satisfies SimulatorListening)}\n`);

  const finish = (): void => {
    recorder.advance();
    const cpu = process.cpuUsage(cpu0);
    const { requests, connections, keys, maxInFlight, byStatus } = simulator.stats;
    const report: SimulatorReport = {
      event: 'stats',
      stats: { requests, connections, keys, maxInFlight, byStatus: { ...byStatus } },
      cpuUserMs: Math.round(cpu.user / 1000),
      cpuSystemMs: Math.round(cpu.system / 1000),
      timeline: recorder.timeline,
    };
    // Exit only once the line is out: stdout is a pipe, and process.exit would cut it short.
    process.stdout.write(`${JSON.stringify(report)}\n`, () => {
      void simulator.close().finally(() => process.exit(0));
    });
  };
  process.once('SIGTERM', finish);
  process.once('SIGINT', finish);
}

main().catch((e: unknown) => {
  process.stderr.write(`remote-simulator: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
  process.exit(1);
});
