import fs from 'node:fs';
import type { Engine } from '../jobs/engine.js';
import { monitorServiceOf } from '../monitors/monitor-service.js';
import { invalidView, listView } from '../monitors/monitor-views.js';
import { AppError, ERROR_CODES } from '../shared/errors.js';
import { parseCommand, printJson, type CliIo } from './cli-io.js';

export const LISTS_USAGE = [
  'sluice lists create FILE --account ID --name NAME --type email|phone|company [--column NAME] [--default-country CC] [--json]',
  'sluice lists list --account ID [--type T] [--json]',
  'sluice lists show ID --account ID [--json]',
  'sluice lists delete ID --account ID [--json]',
];

type ListView = ReturnType<typeof listView>;

function describe(l: ListView): string {
  const invalid = Object.entries(l.invalid_by_code).map(([code, n]) => `${n} ${code}`).join(', ');
  return `${l.id}  ${l.name}\ntype       ${l.type}\nstatus     ${l.status}\ntargets    ${l.target_count}\nduplicates ${l.duplicate_count}\ninvalid    ${l.invalid_count}${invalid ? ` (${invalid})` : ''}\n`;
}

function account(values: Record<string, unknown>): string {
  const id = values.account as string | undefined;
  if (!id) throw new AppError(ERROR_CODES.badArgument, '--account is required');
  return id;
}

/** Target lists of one account, as `/api/lists` keeps them; `create` reads a CSV as the upload does. */
export async function listsCommand(engine: Engine, args: string[], io: CliIo): Promise<number> {
  const [sub, ...rest] = args;
  const service = monitorServiceOf(engine.deps);
  switch (sub) {
    case 'create': {
      const { values, positionals } = parseCommand(
        rest,
        { account: { type: 'string' }, name: { type: 'string' }, type: { type: 'string' }, column: { type: 'string' }, 'default-country': { type: 'string' } },
        1,
      );
      const accountId = account(values);
      const name = (values.name as string | undefined)?.trim();
      const type = values.type as string | undefined;
      if (!name || !type) throw new AppError(ERROR_CODES.badArgument, '--name and --type are required');
      service.typeOf(type);
      const file = positionals[0]!;
      if (!fs.existsSync(file)) throw new AppError(ERROR_CODES.badArgument, `no file ${file}`);
      await engine.deps.billing.requireAccount(accountId);
      const column = values.column as string | undefined;
      const country = (values['default-country'] as string | undefined)?.toUpperCase();
      const staged = await service.stageListCsv(fs.createReadStream(file));
      const { list, invalid } = await service.importList(accountId, {
        ...staged,
        name,
        type,
        options: { ...(column ? { column } : {}), ...(country ? { defaultCountry: country } : {}) },
      });
      const view = listView(list);
      if (values.json) printJson(io, { ...view, invalid: invalidView(invalid) });
      else io.stdout.write(describe(view));
      return 0;
    }
    case 'list': {
      const { values } = parseCommand(rest, { account: { type: 'string' }, type: { type: 'string' } }, 0);
      const type = values.type === undefined ? undefined : service.typeOf(values.type as string);
      const lists = (await engine.deps.store.monitors.lists(account(values), type)).map(listView);
      if (values.json) printJson(io, { lists, total: lists.length });
      else {
        for (const l of lists) io.stdout.write(`${l.id}  ${l.type.padEnd(7)} ${l.status.padEnd(9)} ${String(l.target_count).padStart(7)} targets  ${l.name}\n`);
        io.stdout.write(`${lists.length} lists\n`);
      }
      return 0;
    }
    case 'show': {
      const { values, positionals } = parseCommand(rest, { account: { type: 'string' } }, 1);
      const view = listView(await service.list(account(values), positionals[0]!));
      if (values.json) printJson(io, view);
      else io.stdout.write(describe(view));
      return 0;
    }
    case 'delete': {
      const { values, positionals } = parseCommand(rest, { account: { type: 'string' } }, 1);
      const id = positionals[0]!;
      await service.removeList(account(values), id);
      if (values.json) printJson(io, { id, deleted: true });
      else io.stdout.write(`list ${id} deleted; monitors it seeded keep their targets\n`);
      return 0;
    }
    default:
      throw new AppError(ERROR_CODES.badArgument, `usage:\n  ${LISTS_USAGE.join('\n  ')}`);
  }
}
