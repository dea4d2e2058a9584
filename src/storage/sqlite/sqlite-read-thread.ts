import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

/**
 * The thread's whole program, as a script (as the billing hasher's, so that it runs the same from
 * dist/ and under vitest): a read-only connection to the database file that runs the statements it
 * is sent and posts their rows back. Statements are prepared once each; one that would write is
 * refused (the connection is read-only as well).
 */
const READER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
const db = new Database(workerData.file, { readonly: true, fileMustExist: true, timeout: workerData.busyTimeoutMs });
db.pragma('busy_timeout = ' + workerData.busyTimeoutMs);
db.pragma('cache_size = -32768');
const statements = new Map();
parentPort.on('message', ({ id, sql, params, one }) => {
  try {
    let statement = statements.get(sql);
    if (!statement) {
      statement = db.prepare(sql);
      if (!statement.reader) throw new Error('the read thread runs reads only');
      statements.set(sql, statement);
    }
    parentPort.postMessage({ id, rows: one ? statement.get(...params) : statement.all(...params) });
  } catch (error) {
    parentPort.postMessage({ id, error: String(error && error.message || error) });
  }
});
`;

interface Pending {
  resolve: (rows: unknown) => void;
  reject: (error: Error) => void;
}

/**
 * Runs the store's heavy reads (a million watched targets grouped and counted, a deep page of
 * one monitor's targets) on a thread of its own, with a connection of its own (issue 27, finding 2).
 * better-sqlite3 is synchronous: on the main thread such a read held the event loop for seconds,
 * and every other account's request waited behind it. Here the main thread only waits for a
 * message. WAL lets this connection read while the main one writes.
 */
export class SqliteReadThread {
  private worker: Worker | undefined;
  private readonly pending = new Map<number, Pending>();
  private nextId = 0;

  constructor(
    private readonly file: string,
    private readonly busyTimeoutMs: number,
  ) {}

  all<T>(sql: string, params: readonly unknown[]): Promise<T[]> {
    return this.send(sql, params, false) as Promise<T[]>;
  }

  get<T>(sql: string, params: readonly unknown[]): Promise<T | undefined> {
    return this.send(sql, params, true) as Promise<T | undefined>;
  }

  async close(): Promise<void> {
    const worker = this.worker;
    this.worker = undefined;
    if (worker) await worker.terminate();
  }

  private send(sql: string, params: readonly unknown[], one: boolean): Promise<unknown> {
    const worker = this.start();
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      if (this.pending.size === 0) worker.ref();
      this.pending.set(id, { resolve, reject });
      worker.postMessage({ id, sql, params, one });
    });
  }

  private start(): Worker {
    if (this.worker) return this.worker;
    const worker = new Worker(READER_SOURCE, {
      eval: true,
      workerData: { file: this.file, busyTimeoutMs: this.busyTimeoutMs, driver: createRequire(import.meta.url).resolve('better-sqlite3') },
      // Rows of one page at a time: a small heap is plenty (SQLite's own cache is outside it).
      resourceLimits: { maxOldGenerationSizeMb: 64, maxYoungGenerationSizeMb: 4 },
    });
    worker.unref();
    worker.on('message', ({ id, rows, error }: { id: number; rows?: unknown; error?: string }) => {
      const waiting = this.pending.get(id);
      if (!waiting) return;
      this.pending.delete(id);
      if (this.pending.size === 0) worker.unref();
      if (error !== undefined) waiting.reject(new Error(error));
      else waiting.resolve(rows);
    });
    const fail = (error: Error): void => {
      if (this.worker === worker) this.worker = undefined;
      for (const [id, waiting] of [...this.pending]) {
        this.pending.delete(id);
        waiting.reject(error);
      }
    };
    worker.on('error', fail);
    worker.on('exit', (code) => fail(new Error(`sqlite read thread exited with code ${code}`)));
    this.worker = worker;
    return worker;
  }
}
