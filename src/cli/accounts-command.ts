import { AUDIT_ACTIONS, AuditLog } from '../auth/audit-log.js';
import { hashPassword } from '../auth/passwords.js';
import type { Engine } from '../jobs/engine.js';
import { AppError, ERROR_CODES } from '../shared/errors.js';
import type { Account } from '../storage/records.js';
import { parseCommand, positiveInt, printJson, type CliIo } from './cli-io.js';

export const ACCOUNTS_USAGE = [
  'sluice accounts create [--id ID] [--email E --password P] [--credits N] [--json]',
  'sluice accounts topup ID N [--json]',
  'sluice accounts suspend ID | reinstate ID [--json]',
  'sluice accounts rate-limit ID N|default [--json]',
  'sluice accounts show ID [--json]',
  'sluice accounts list [--json]',
];

export async function accountsCommand(engine: Engine, args: string[], io: CliIo): Promise<number> {
  const [sub, ...rest] = args;
  const { billing, clock } = engine.deps;
  switch (sub) {
    case 'create': {
      const { values } = parseCommand(
        rest,
        { id: { type: 'string' }, email: { type: 'string' }, password: { type: 'string' }, credits: { type: 'string' } },
        0,
      );
      const password = values.password as string | undefined;
      if (password !== undefined && (values.email === undefined || password.length < 8)) {
        throw new AppError(ERROR_CODES.badArgument, '--password needs --email and at least 8 characters');
      }
      const account = await billing.createAccount({
        id: values.id as string | undefined,
        email: (values.email as string | undefined)?.trim().toLowerCase() ?? null,
        passwordHash: password === undefined ? null : await hashPassword(password),
        credits: positiveInt(values.credits as string | undefined, '--credits', 0),
        now: clock.now(),
      });
      await print(io, account, values.json === true, engine);
      return 0;
    }
    case 'topup': {
      const { values, positionals } = parseCommand(rest, {}, 2);
      const account = await billing.addCredits(positionals[0]!, positiveInt(positionals[1], 'credits'), 'topup', clock.now());
      await new AuditLog(engine.deps.store.audit, clock, engine.deps.log).record(account.id, AUDIT_ACTIONS.creditsToppedUp, { type: 'cli' }, account.id, { label: `${positionals[1]} credits` });
      await print(io, account, values.json === true, engine);
      return 0;
    }
    case 'suspend':
    case 'reinstate': {
      const { values, positionals } = parseCommand(rest, {}, 1);
      const suspend = sub === 'suspend';
      const account = await billing.setStatus(positionals[0]!, suspend ? 'suspended' : 'active');
      const audit = new AuditLog(engine.deps.store.audit, clock, engine.deps.log);
      await audit.record(account.id, suspend ? AUDIT_ACTIONS.accountSuspended : AUDIT_ACTIONS.accountReinstated, { type: 'cli' }, account.id);
      await print(io, account, values.json === true, engine);
      return 0;
    }
    case 'rate-limit': {
      const { values, positionals } = parseCommand(rest, {}, 2);
      const limit = positionals[1] === 'default' ? null : positiveInt(positionals[1], 'requests per minute');
      await print(io, await billing.setRateLimit(positionals[0]!, limit), values.json === true, engine);
      return 0;
    }
    case 'show': {
      const { values, positionals } = parseCommand(rest, {}, 1);
      await print(io, await billing.requireAccount(positionals[0]!), values.json === true, engine);
      return 0;
    }
    case 'list': {
      const { values } = parseCommand(rest, {}, 0);
      const accounts = [];
      for (const a of await billing.accounts()) accounts.push(await view(a, engine));
      if (values.json) printJson(io, { accounts });
      else for (const a of accounts) io.stdout.write(`${a.id}  ${a.credits} credits  ${a.email ?? ''}\n`);
      return 0;
    }
    default:
      throw new AppError(ERROR_CODES.badArgument, `usage:\n  ${ACCOUNTS_USAGE.join('\n  ')}`);
  }
}

async function view(account: Account, engine: Engine) {
  return {
    id: account.id,
    email: account.email,
    credits: account.credits,
    available: await engine.deps.billing.available(account.id),
    status: account.status,
    rate_limit: account.rateLimit,
    created_at: new Date(account.createdAt).toISOString(),
  };
}

async function print(io: CliIo, account: Account, json: boolean, engine: Engine): Promise<void> {
  const v = await view(account, engine);
  if (json) printJson(io, v);
  else io.stdout.write(`account    ${v.id}\ncredits    ${v.credits} (${v.available} not reserved)\n`);
}
