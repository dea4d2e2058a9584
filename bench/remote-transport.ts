/**
 * The remote scenario's floor: what the HTTP client alone gets from the simulator on this machine,
 * with no engine around it (no chunks, batches, SQLite or object store).
 *
 *   node dist/bench/remote-transport.js --url URL --keys N [--in-flight 64]
 *
 * `in-flight` loops each send one key at a time through one RemoteLookupProvider (the engine's
 * client: undici Pool, breaker, time-out), so exactly that many requests are outstanding until the
 * keys run out. Prints one {"event":"result",...} line.
 */
import { parseArgs } from 'node:util';
import { RemoteLookupProvider } from '../src/lookups/remote/remote-provider.js';

export interface TransportResult {
  event: 'result';
  keys: number;
  inFlight: number;
  wallMs: number;
  failed: number;
  cpuUserMs: number;
  cpuSystemMs: number;
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { url: { type: 'string' }, keys: { type: 'string' }, 'in-flight': { type: 'string', default: '64' } } });
  if (!values.url || !values.keys) throw new Error('--url URL and --keys N are required');
  const keys = Number(values.keys);
  const inFlight = Number(values['in-flight']);
  const provider = new RemoteLookupProvider({ kind: 'gender', baseUrl: values.url, timeoutMs: 10_000, connections: inFlight, maxBatch: 1 });
  // One warm-up round opens the connections, so that the clock measures requests, not handshakes.
  await Promise.all(Array.from({ length: inFlight }, (_, i) => provider.lookup([`warm.${i}@example.com`])));

  let next = 0;
  let failed = 0;
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (next < keys) {
        const [outcome] = await provider.lookup([`transport.${next++}@example.com`]);
        if (!outcome?.ok) failed++;
      }
    }),
  );
  const wallMs = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  await provider.close();
  const result: TransportResult = {
    event: 'result',
    keys,
    inFlight,
    wallMs: Math.round(wallMs * 10) / 10,
    failed,
    cpuUserMs: Math.round(cpu.user / 1000),
    cpuSystemMs: Math.round(cpu.system / 1000),
  };
  process.stdout.write(`${JSON.stringify(result)}\n`);
}

main().catch((e: unknown) => {
  process.stderr.write(`remote-transport: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
  process.exit(1);
});
