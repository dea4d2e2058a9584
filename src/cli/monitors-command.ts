import type { Engine } from '../jobs/engine.js';
import { resultsCommand, runsCommand } from './monitor-results-command.js';
import { monitorServiceOf } from '../monitors/monitor-service.js';
import { invalidView, monitorView, RUN_BILLING, runView } from '../monitors/monitor-views.js';
import { AppError, ERROR_CODES } from '../shared/errors.js';
import { MONITOR_STATUSES, type MonitorStatus } from '../storage/monitor-records.js';
import { parseCommand, positiveInt, printJson, type CliIo } from './cli-io.js';

export const MONITORS_USAGE = [
  'sluice monitors create --account ID --name NAME --type email|phone|company --frequency weekly|biweekly|monthly|quarterly [--track FIELD,...] [--mode any_change|new_only] [--start ISO] [--list LIST_ID] [--target T]... [--default-country CC] [--json]',
  'sluice monitors list --account ID [--type T] [--status active|paused] [--limit N] [--offset N] [--json]',
  'sluice monitors show ID --account ID [--json]',
  'sluice monitors run ID --account ID [--json]',
  'sluice monitors runs ID --account ID [--limit N] [--offset N] [--json]',
  'sluice monitors results RUN_ID --account ID [--changes-only] [--limit N] [--offset N] [--csv FILE] [--json]',
  'sluice monitors pause ID --account ID [--json]',
  'sluice monitors resume ID --account ID [--json]',
  'sluice monitors delete ID --account ID [--json]',
];

type MonitorView = ReturnType<typeof monitorView>;

function describe(m: MonitorView): string {
  return (
    `${m.id}  ${m.name}\n` +
    `type       ${m.type}, ${m.frequency}, ${m.change_detection}\n` +
    `status     ${m.status}\n` +
    `targets    ${m.target_count} (${m.credits_per_run} credits a run)\n` +
    `tracks     ${m.tracked_fields.join(', ')}\n` +
    `next run   ${m.next_run_at ?? '-'}\n` +
    `last run   ${m.last_run_at ?? '-'}\n`
  );
}

function account(values: Record<string, unknown>): string {
  const id = values.account as string | undefined;
  if (!id) throw new AppError(ERROR_CODES.badArgument, '--account is required');
  return id;
}

/** Operators' monitors: what the API does under /api/monitors, for one account. */
export async function monitorsCommand(engine: Engine, args: string[], io: CliIo): Promise<number> {
  const [sub, ...rest] = args;
  const service = monitorServiceOf(engine.deps);
  switch (sub) {
    case 'create': {
      const { values } = parseCommand(
        rest,
        {
          account: { type: 'string' },
          name: { type: 'string' },
          type: { type: 'string' },
          frequency: { type: 'string' },
          track: { type: 'string' },
          mode: { type: 'string' },
          start: { type: 'string' },
          list: { type: 'string' },
          target: { type: 'string', multiple: true },
          'default-country': { type: 'string' },
        },
        0,
      );
      const accountId = account(values);
      const name = (values.name as string | undefined)?.trim();
      if (!name || !values.type || !values.frequency) throw new AppError(ERROR_CODES.badArgument, '--name, --type and --frequency are required');
      const start = values.start as string | undefined;
      const startAt = start === undefined ? undefined : Date.parse(start);
      if (startAt !== undefined && Number.isNaN(startAt)) throw new AppError(ERROR_CODES.badArgument, `--start must be an ISO 8601 time, got "${start}"`);
      await engine.deps.billing.requireAccount(accountId);
      const { monitor, targets } = await service.create(accountId, {
        name,
        type: values.type as string,
        frequency: values.frequency as string,
        trackedFields: (values.track as string | undefined)?.split(',').map((f) => f.trim()),
        changeDetection: values.mode as string | undefined,
        startAt,
        listId: values.list as string | undefined,
        targets: values.target as string[] | undefined,
        defaultCountry: (values['default-country'] as string | undefined)?.toUpperCase(),
      });
      const view = monitorView(monitor);
      if (values.json) printJson(io, { ...view, billing: RUN_BILLING, targets: { added: targets.added, duplicates: targets.duplicates, invalid: invalidView(targets.invalid) } });
      else io.stdout.write(`${describe(view)}invalid    ${targets.invalid.count} target(s) not added\n`);
      return 0;
    }
    case 'list': {
      const { values } = parseCommand(rest, { account: { type: 'string' }, type: { type: 'string' }, status: { type: 'string' }, limit: { type: 'string' }, offset: { type: 'string' } }, 0);
      const type = values.type === undefined ? undefined : service.typeOf(values.type as string);
      const status = values.status as string | undefined;
      if (status !== undefined && !Object.values(MONITOR_STATUSES).includes(status as MonitorStatus)) {
        throw new AppError(ERROR_CODES.badArgument, `--status must be one of ${Object.values(MONITOR_STATUSES).join(', ')}`);
      }
      const limit = Math.min(positiveInt(values.limit as string | undefined, '--limit', 20), 1000);
      const offset = positiveInt(values.offset as string | undefined, '--offset', 0);
      const { monitors, total } = await engine.deps.store.monitors.list(account(values), { limit, offset, type, status: status as MonitorStatus | undefined });
      const views = monitors.map(monitorView);
      if (values.json) printJson(io, { monitors: views, total, limit, offset });
      else {
        for (const m of views) io.stdout.write(`${m.id}  ${m.type.padEnd(7)} ${m.frequency.padEnd(9)} ${m.status.padEnd(6)} ${String(m.target_count).padStart(7)} targets  next ${m.next_run_at ?? '-'}  ${m.name}\n`);
        io.stdout.write(`${views.length} of ${total} monitors\n`);
      }
      return 0;
    }
    case 'show':
    case 'pause':
    case 'resume': {
      const { values, positionals } = parseCommand(rest, { account: { type: 'string' } }, 1);
      const accountId = account(values);
      const id = positionals[0]!;
      const monitor = sub === 'show' ? await service.get(accountId, id) : await service[sub](accountId, id);
      const view = monitorView(monitor);
      if (values.json) {
        const runs = sub === 'show' ? (await engine.deps.store.monitors.runs(accountId, id, { limit: 5, offset: 0 })).runs.map(runView) : undefined;
        printJson(io, runs ? { ...view, recent_runs: runs } : view);
      } else io.stdout.write(describe(view));
      return 0;
    }
    case 'run': {
      const { values, positionals } = parseCommand(rest, { account: { type: 'string' } }, 1);
      const run = runView(await service.run(account(values), positionals[0]!));
      if (values.json) printJson(io, run);
      // The CLI runs no worker: without one on this data the run would wait unseen, and `monitors show` list it as the last run.
      else {
        io.stdout.write(
          `run ${run.id} queued for monitor ${run.monitor_id}; the schedule is unchanged. It starts when a \`sluice worker\` or \`sluice serve\` runs on this data: start one if none does. Follow it with \`sluice monitors runs ${run.monitor_id} --account ${account(values)}\`\n`,
        );
      }
      return 0;
    }
    case 'runs':
      return runsCommand(engine, rest, io);
    case 'results':
      return resultsCommand(engine, rest, io);
    case 'delete': {
      const { values, positionals } = parseCommand(rest, { account: { type: 'string' } }, 1);
      const id = positionals[0]!;
      await service.remove(account(values), id);
      if (values.json) printJson(io, { id, deleted: true });
      else io.stdout.write(`monitor ${id} deleted with its targets and runs\n`);
      return 0;
    }
    default:
      throw new AppError(ERROR_CODES.badArgument, `usage:\n  ${MONITORS_USAGE.join('\n  ')}`);
  }
}
