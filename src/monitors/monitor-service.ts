import { randomUUID } from 'node:crypto';
import type { Readable } from 'node:stream';
import type { JobLimits } from '../config/load-config.js';
import type { AccountQuotas } from '../jobs/account-quotas.js';
import type { Clock } from '../shared/clock.js';
import { AppError, ERROR_CODES } from '../shared/errors.js';
import {
  CHANGE_MODES,
  isChangeMode,
  isFrequency,
  FREQUENCIES,
  type ChangeMode,
  type Frequency,
  type MonitorChanges,
  type MonitorRecord,
  type MonitorRunRecord,
  type MonitorType,
  type TargetListRecord,
} from '../storage/monitor-records.js';
import type { ObjectStore } from '../storage/s3/object-store.js';
import type { MonitorsPort } from '../storage/store.js';
import { importListCsv, type ListCsvOptions } from './list-import.js';
import { monitorType, trackedFields } from './monitor-types.js';
import { readTargets, type InvalidTargets } from './target-input.js';

export interface MonitorServiceDeps {
  readonly monitors: MonitorsPort;
  readonly objects: ObjectStore;
  readonly clock: Clock;
  readonly limits: Pick<JobLimits, 'maxRows' | 'maxLineBytes' | 'maxCellsPerRow'>;
  /** The account's quotas, checked before each write; unset (the local CLI): none. */
  readonly quotas?: AccountQuotas | undefined;
}

/** A monitor to create, as the API and the CLI take it (already parsed from their own forms). */
export interface MonitorInput {
  name: string;
  type: string;
  frequency: string;
  trackedFields?: readonly string[] | undefined;
  changeDetection?: string | undefined;
  /** The first run and the schedule's anchor; default now. */
  startAt?: number | undefined;
  listId?: string | undefined;
  targets?: readonly string[] | undefined;
  /** Phone targets written without a country code are read in this country. */
  defaultCountry?: string | undefined;
}

/** What a write of targets did: each given target is added, already there, a duplicate, or invalid. */
export interface TargetsOutcome {
  added: number;
  present: number;
  duplicates: number;
  invalid: InvalidTargets;
}

/**
 * Lists, monitors and their targets for the API and the CLI: the checks of what a caller gave
 * (types, fields, targets), then one store operation each. Runs are recorded here (queued); the
 * engine job that carries a run is made elsewhere.
 */
export class MonitorService {
  constructor(private readonly deps: MonitorServiceDeps) {}

  async createList(accountId: string, input: { name: string; type: string; targets: readonly string[]; defaultCountry?: string | undefined }) {
    const type = monitorType(input.type);
    const read = readTargets(type, input.targets, { defaultCountry: input.defaultCountry });
    const { monitors, clock, quotas } = this.deps;
    await quotas?.require(accountId, 'lists');
    await quotas?.requireTargets(accountId, 0, read.targets.length);
    const list = await monitors.createList({ id: randomUUID(), accountId, name: input.name, type, sourceKey: null, now: clock.now() });
    try {
      if (read.targets.length > 0) await monitors.addListTargets(list.id, read.targets);
      const finished = await monitors.finishList(list.id, { invalidCount: read.invalid.count, duplicateCount: read.duplicates, invalidByCode: read.invalid.byCode });
      return { list: finished, invalid: read.invalid };
    } catch (e: unknown) {
      await monitors.removeList(accountId, list.id);
      throw e;
    }
  }

  /** Streams a list's CSV into the object store, under the list id it will have. */
  async stageListCsv(body: Readable): Promise<{ listId: string; sourceKey: string }> {
    const listId = randomUUID();
    const sourceKey = `lists/${listId}.csv`;
    await this.deps.objects.putStream(sourceKey, body, { contentType: 'text/csv' });
    return { listId, sourceKey };
  }

  /** A list from a staged CSV; a file its bulk job would refuse is refused with that job's code, and leaves nothing behind. */
  async importList(accountId: string, input: { listId: string; sourceKey: string; name: string; type: string; options: ListCsvOptions }) {
    const type = monitorType(input.type);
    const { monitors, objects, clock, limits, quotas } = this.deps;
    await quotas?.require(accountId, 'lists');
    const list = await monitors.createList({ id: input.listId, accountId, name: input.name, type, sourceKey: input.sourceKey, now: clock.now() });
    try {
      // Checked before each batch is written: a file past the quota stops there and the list goes.
      const guard = quotas ? (holding: number, adding: number) => quotas.requireTargets(accountId, holding, adding) : undefined;
      return await importListCsv({ monitors, objects, limits, guard }, list, input.options);
    } catch (e: unknown) {
      await monitors.removeList(accountId, list.id);
      await objects.delete(input.sourceKey).catch(() => undefined);
      throw e;
    }
  }

  async discardStaged(sourceKey: string): Promise<void> {
    await this.deps.objects.delete(sourceKey);
  }

  async list(accountId: string, id: string): Promise<TargetListRecord> {
    const list = await this.deps.monitors.getList(accountId, id);
    if (!list) throw new AppError(ERROR_CODES.listNotFound, 'List not found', { statusCode: 404 });
    return list;
  }

  async removeList(accountId: string, id: string): Promise<void> {
    const list = await this.list(accountId, id);
    await this.deps.monitors.removeList(accountId, id);
    if (list.sourceKey !== null) await this.deps.objects.delete(list.sourceKey);
  }

  async create(accountId: string, input: MonitorInput): Promise<{ monitor: MonitorRecord; targets: TargetsOutcome }> {
    const type = monitorType(input.type);
    const fields = trackedFields(type, input.trackedFields);
    const read = readTargets(type, input.targets ?? [], { defaultCountry: input.defaultCountry });
    const quotas = this.deps.quotas;
    if (quotas) {
      await quotas.require(accountId, 'monitors');
      await quotas.requireTargets(accountId, 0, read.targets.length + (await this.listSize(accountId, input.listId)));
    }
    const now = this.deps.clock.now();
    const monitor = await this.deps.monitors.create(
      {
        id: randomUUID(),
        accountId,
        name: input.name,
        type,
        frequency: frequencyOf(input.frequency),
        trackedFields: fields,
        changeDetection: input.changeDetection === undefined ? CHANGE_MODES.anyChange : changeModeOf(input.changeDetection),
        startAt: input.startAt ?? now,
        now,
      },
      { listId: input.listId, targets: read.targets },
    );
    return { monitor, targets: { added: monitor.targetCount, present: 0, duplicates: read.duplicates, invalid: read.invalid } };
  }

  async get(accountId: string, id: string): Promise<MonitorRecord> {
    return found(await this.deps.monitors.get(accountId, id));
  }

  async update(accountId: string, id: string, input: { name?: string | undefined; frequency?: string | undefined; trackedFields?: readonly string[] | undefined; changeDetection?: string | undefined }) {
    const current = await this.get(accountId, id);
    const changes: MonitorChanges = {
      ...(input.name === undefined ? {} : { name: input.name }),
      ...(input.frequency === undefined ? {} : { frequency: frequencyOf(input.frequency) }),
      ...(input.trackedFields === undefined ? {} : { trackedFields: trackedFields(current.type, input.trackedFields) }),
      ...(input.changeDetection === undefined ? {} : { changeDetection: changeModeOf(input.changeDetection) }),
    };
    return found(await this.deps.monitors.update(accountId, id, changes, this.deps.clock.now()));
  }

  async pause(accountId: string, id: string): Promise<MonitorRecord> {
    return found(await this.deps.monitors.pause(accountId, id, this.deps.clock.now()));
  }

  async resume(accountId: string, id: string): Promise<MonitorRecord> {
    return found(await this.deps.monitors.resume(accountId, id, this.deps.clock.now()));
  }

  async remove(accountId: string, id: string): Promise<void> {
    if (!(await this.deps.monitors.remove(accountId, id))) throw notFound();
  }

  /** Targets given one by one, or a list's: invalid ones are counted and shown, never added. */
  async addTargets(accountId: string, id: string, input: { targets?: readonly string[] | undefined; listId?: string | undefined; defaultCountry?: string | undefined }): Promise<TargetsOutcome> {
    const monitor = await this.get(accountId, id);
    const read = readTargets(monitor.type, input.targets ?? [], { defaultCountry: input.defaultCountry });
    // Counted as if every target were new: one already there is refused at the limit too.
    await this.deps.quotas?.requireTargets(accountId, monitor.targetCount, read.targets.length + (await this.listSize(accountId, input.listId)));
    const now = this.deps.clock.now();
    const given = read.targets.length > 0 ? await this.deps.monitors.addTargets(accountId, id, read.targets, now) : { added: 0, present: 0 };
    const listed = input.listId === undefined ? { added: 0, present: 0 } : await this.deps.monitors.addListTargetsToMonitor(accountId, id, input.listId, now);
    return { added: given.added + listed.added, present: given.present + listed.present, duplicates: read.duplicates, invalid: read.invalid };
  }

  /** Targets are read as when added, so `Jane@X.com` removes `jane@x.com`; returns how many the monitor held. */
  async removeTargets(accountId: string, id: string, input: { targets: readonly string[]; defaultCountry?: string | undefined }) {
    const monitor = await this.get(accountId, id);
    const read = readTargets(monitor.type, input.targets, { defaultCountry: input.defaultCountry });
    const removed = read.targets.length > 0 ? await this.deps.monitors.removeTargets(accountId, id, read.targets) : 0;
    return { removed, absent: read.targets.length - removed, invalid: read.invalid };
  }

  /** A run by hand: queued, the schedule untouched. */
  async run(accountId: string, id: string): Promise<MonitorRunRecord> {
    return this.deps.monitors.queueManualRun(accountId, id, randomUUID(), this.deps.clock.now());
  }

  /** A list's targets, for the quota; 0 for none or a list not found (the store answers that one). */
  private async listSize(accountId: string, listId: string | undefined): Promise<number> {
    if (listId === undefined) return 0;
    return (await this.deps.monitors.getList(accountId, listId))?.targetCount ?? 0;
  }

  typeOf(raw: string): MonitorType {
    return monitorType(raw);
  }
}

function frequencyOf(raw: string): Frequency {
  if (isFrequency(raw)) return raw;
  throw new AppError(ERROR_CODES.invalidRequest, `frequency must be one of ${Object.values(FREQUENCIES).join(', ')}, got "${raw.slice(0, 40)}"`, { statusCode: 422 });
}

function changeModeOf(raw: string): ChangeMode {
  if (isChangeMode(raw)) return raw;
  throw new AppError(ERROR_CODES.invalidRequest, `change_detection must be one of ${Object.values(CHANGE_MODES).join(', ')}, got "${raw.slice(0, 40)}"`, { statusCode: 422 });
}

function notFound(): AppError {
  return new AppError(ERROR_CODES.monitorNotFound, 'Monitor not found', { statusCode: 404 });
}

function found(monitor: MonitorRecord | undefined): MonitorRecord {
  if (!monitor) throw notFound();
  return monitor;
}

/** The service over an engine's store, object store, clock and limits. */
export function monitorServiceOf(deps: { store: { monitors: MonitorsPort }; objects: ObjectStore; clock: Clock; limits: MonitorServiceDeps['limits'] }, quotas?: AccountQuotas): MonitorService {
  return new MonitorService({ monitors: deps.store.monitors, objects: deps.objects, clock: deps.clock, limits: deps.limits, quotas });
}
