import { Worker } from 'node:worker_threads';

/**
 * The worker's whole program, as a script: HMAC-SHA256(key, kind + '\0' + key) cut to `bytes`,
 * the formula of BillingKeys.hash. Source text rather than a module file, so
 * that it runs the same from dist/ and under vitest, which loads src/ as TypeScript that a worker
 * thread could not. Keys arrive as one string joined by '\n' with their UTF-16 lengths, never split
 * on the separator, since a key may hold any character.
 */
const HASHER_SOURCE = `
const { createHmac } = require('node:crypto');
const { parentPort, workerData } = require('node:worker_threads');
const key = Buffer.from(workerData.key);
const bytes = workerData.bytes;
parentPort.on('message', ({ id, kind, joined, lengths }) => {
  const out = Buffer.allocUnsafe(lengths.length * bytes);
  let at = 0;
  for (let i = 0; i < lengths.length; i++) {
    const message = kind + '\\0' + joined.slice(at, at + lengths[i]);
    at += lengths[i] + 1;
    createHmac('sha256', key).update(message).digest().copy(out, i * bytes, 0, bytes);
  }
  parentPort.postMessage({ id, out: out.buffer, offset: out.byteOffset, length: out.length }, [out.buffer]);
});
`;

interface Pending {
  resolve: (hashes: Buffer[]) => void;
  reject: (error: Error) => void;
}

/**
 * Hashes a batch's keys on a thread of its own. At about 3.6 µs a key, the HMACs of a million-row
 * job were 3 s of the main thread's time, which the engine keeps busy while the second core idles;
 * here they cost the main thread one message each way per batch. The thread holds the process open
 * only while a batch is being hashed. A thread that dies fails what it was hashing; the caller then
 * hashes on its own thread (BillingKeys.hashMany).
 */
export class BillingHasher {
  private worker: Worker | undefined;
  private readonly pending = new Map<number, Pending>();
  private nextId = 0;

  constructor(
    private readonly key: Buffer,
    /** Bytes kept of each HMAC. */
    private readonly bytes: number,
  ) {}

  hash(kind: string, keys: readonly string[]): Promise<Buffer[]> {
    const worker = this.start();
    const id = this.nextId++;
    const lengths = keys.map((k) => k.length);
    return new Promise<Buffer[]>((resolve, reject) => {
      if (this.pending.size === 0) worker.ref();
      this.pending.set(id, { resolve, reject });
      worker.postMessage({ id, kind, joined: keys.join('\n'), lengths });
    });
  }

  async close(): Promise<void> {
    const worker = this.worker;
    this.worker = undefined;
    if (worker) await worker.terminate();
  }

  private start(): Worker {
    if (this.worker) return this.worker;
    // A thread with V8's default heap sizes added about 75 MB of RSS; hashing a batch needs a few
    // hundred KB at a time, so it gets small ones (about 20 MB in all).
    const worker = new Worker(HASHER_SOURCE, {
      eval: true,
      workerData: { key: this.key, bytes: this.bytes },
      resourceLimits: { maxOldGenerationSizeMb: 32, maxYoungGenerationSizeMb: 2 },
    });
    worker.unref();
    worker.on('message', ({ id, out, offset, length }: { id: number; out: ArrayBuffer; offset: number; length: number }) => {
      const waiting = this.pending.get(id);
      if (!waiting) return;
      this.settled(id, worker);
      const all = Buffer.from(out, offset, length);
      const hashes: Buffer[] = [];
      for (let at = 0; at < length; at += this.bytes) hashes.push(all.subarray(at, at + this.bytes));
      waiting.resolve(hashes);
    });
    const fail = (error: Error): void => {
      if (this.worker === worker) this.worker = undefined;
      for (const [id, waiting] of [...this.pending]) {
        this.pending.delete(id);
        waiting.reject(error);
      }
    };
    worker.on('error', fail);
    worker.on('exit', (code) => fail(new Error(`billing hasher thread exited with code ${code}`)));
    this.worker = worker;
    return worker;
  }

  private settled(id: number, worker: Worker): void {
    this.pending.delete(id);
    if (this.pending.size === 0) worker.unref();
  }
}
