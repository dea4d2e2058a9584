import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import { AppError, ERROR_CODES } from '../../shared/errors.js';
import { SCAN_WORKER_SOURCE } from './scan-worker-source.js';
import type { RawFinding, RuleSet, SecretEngine } from './secret-types.js';

export interface ScanRequest {
  readonly content: string;
  /** The file the content came from (repository scans); null for pasted text. */
  readonly file: string | null;
  readonly engines: readonly SecretEngine[];
  /** Only these gitleaks rule ids; undefined for all. */
  readonly ruleIds?: readonly string[] | undefined;
}

export interface ScanRunnerOptions {
  /** Threads that scan at once; a scan waits for a free one. */
  readonly threads: number;
  /** Wall time one scan may take on its thread before the thread is ended and the scan refused. */
  readonly budgetMs: number;
}

interface Slot {
  worker: Worker;
  busy: boolean;
}

interface Waiting {
  request: ScanRequest;
  resolve: (found: RawFinding[]) => void;
  reject: (error: Error) => void;
}

const require = createRequire(import.meta.url);

/**
 * Runs scans on threads of their own, so that the event loop keeps answering while patterns run,
 * and gives each scan a time budget: a JavaScript regular expression cannot be interrupted, so a
 * scan over budget has its thread terminated (and a fresh one made for the next scan). A hostile
 * input built to make a pattern backtrack costs its own request a refusal and nobody else anything.
 */
export class ScanRunner {
  private readonly slots: Slot[] = [];
  private readonly queue: Waiting[] = [];
  private nextId = 0;
  private closed = false;

  constructor(
    private readonly rules: RuleSet,
    private readonly options: ScanRunnerOptions,
  ) {}

  scan(request: ScanRequest): Promise<RawFinding[]> {
    if (this.closed) return Promise.reject(new AppError(ERROR_CODES.internal, 'scanner is closed'));
    return new Promise((resolve, reject) => {
      this.queue.push({ request, resolve, reject });
      this.pump();
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    const slots = this.slots.splice(0);
    await Promise.all(slots.map((s) => s.worker.terminate()));
    for (const w of this.queue.splice(0)) w.reject(new AppError(ERROR_CODES.internal, 'scanner is closed'));
  }

  private pump(): void {
    while (this.queue.length > 0) {
      let slot = this.slots.find((s) => !s.busy);
      if (!slot && this.slots.length < this.options.threads) {
        const made: Slot = { worker: this.spawn(), busy: false };
        // A thread that dies between scans leaves the pool, so no scan is sent to it.
        made.worker.once('exit', () => {
          const at = this.slots.indexOf(made);
          if (at !== -1) this.slots.splice(at, 1);
        });
        this.slots.push(made);
        slot = made;
      }
      if (!slot) return;
      this.run(slot, this.queue.shift()!);
    }
  }

  private run(slot: Slot, waiting: Waiting): void {
    slot.busy = true;
    slot.worker.ref();
    const id = this.nextId++;
    const { worker } = slot;
    let done = false;
    const finish = (): void => {
      done = true;
      clearTimeout(timer);
      worker.off('message', onMessage);
      worker.off('error', onError);
      worker.off('exit', onExit);
    };
    const release = (): void => {
      slot.busy = false;
      worker.unref();
      this.pump();
    };
    const replace = (): void => {
      const at = this.slots.indexOf(slot);
      if (at !== -1) this.slots.splice(at, 1);
      void worker.terminate();
      this.pump();
    };
    const onMessage = (m: { id: number; ok: boolean; found?: RawFinding[]; code?: string; message?: string }): void => {
      if (m.id !== id || done) return;
      finish();
      release();
      if (m.ok) waiting.resolve(m.found!);
      else if (m.code === 'budget') waiting.reject(overBudget(this.options.budgetMs));
      else waiting.reject(new AppError(ERROR_CODES.internal, 'secret scan failed', { cause: new Error(m.message) }));
    };
    const onError = (error: Error): void => {
      if (done) return;
      finish();
      replace();
      waiting.reject(new AppError(ERROR_CODES.internal, 'secret scan thread failed', { cause: error }));
    };
    const onExit = (): void => onError(new Error('secret scan thread exited'));
    const timer = setTimeout(() => {
      if (done) return;
      finish();
      replace();
      waiting.reject(overBudget(this.options.budgetMs));
    }, this.options.budgetMs);
    worker.on('message', onMessage);
    worker.on('error', onError);
    worker.on('exit', onExit);
    const { request } = waiting;
    worker.postMessage({ id, content: request.content, file: request.file, ruleIds: request.ruleIds ?? null, engines: request.engines, budgetMs: this.options.budgetMs });
  }

  private spawn(): Worker {
    const worker = new Worker(SCAN_WORKER_SOURCE, {
      eval: true,
      workerData: {
        rules: this.rules.rules,
        allowlist: this.rules.allowlist,
        secretlint: { core: require.resolve('@secretlint/core'), preset: require.resolve('@secretlint/secretlint-rule-preset-recommend') },
      },
      // 256 KB of text and its matches need little; a runaway allocation ends this thread, not the service.
      resourceLimits: { maxOldGenerationSizeMb: 128, maxYoungGenerationSizeMb: 16 },
    });
    worker.unref();
    return worker;
  }
}

function overBudget(ms: number): AppError {
  return new AppError(ERROR_CODES.scanTimeout, `The scan took longer than its ${ms} ms budget and was stopped; nothing was charged`, { statusCode: 422 });
}
