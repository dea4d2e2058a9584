import { AUDIT_ACTIONS, AuditLog } from '../auth/audit-log.js';
import { ROLES, type Role } from '../auth/key-store.js';
import type { Engine } from '../jobs/engine.js';
import { AppError, ERROR_CODES } from '../shared/errors.js';
import { parseCommand, printJson, type CliIo } from './cli-io.js';

export const KEYS_USAGE = [
  'sluice keys create --account ID --name NAME [--role admin|tech|readonly] [--json]',
  'sluice keys list --account ID [--json]',
  'sluice keys disable ID | enable ID | revoke ID [--json]',
];

/** Operators' key management; the secret is printed once, at creation. */
export async function keysCommand(engine: Engine, args: string[], io: CliIo): Promise<number> {
  const [sub, ...rest] = args;
  const { keys } = engine.auth;
  const now = engine.deps.clock.now();
  const audit = new AuditLog(engine.deps.store.audit, engine.deps.clock, engine.deps.log);
  switch (sub) {
    case 'create': {
      const { values } = parseCommand(rest, { account: { type: 'string' }, name: { type: 'string' }, role: { type: 'string', default: 'admin' } }, 0);
      const accountId = values.account as string | undefined;
      const name = (values.name as string | undefined)?.trim();
      const role = values.role as string;
      if (!accountId || !name) throw new AppError(ERROR_CODES.badArgument, '--account and --name are required');
      if (!Object.values(ROLES).includes(role as Role)) throw new AppError(ERROR_CODES.badArgument, `--role must be one of ${Object.values(ROLES).join(', ')}`);
      await engine.deps.billing.requireAccount(accountId);
      const { key, secret } = await keys.create({ accountId, name, role: role as Role, now });
      await audit.record(accountId, AUDIT_ACTIONS.keyCreated, { type: 'cli' }, key.id);
      if (values.json) printJson(io, { id: key.id, name: key.name, key: secret, key_prefix: key.keyPrefix, role: key.role, is_active: key.isActive });
      else io.stdout.write(`${secret}\n`);
      return 0;
    }
    case 'list': {
      const { values } = parseCommand(rest, { account: { type: 'string' } }, 0);
      const accountId = values.account as string | undefined;
      if (!accountId) throw new AppError(ERROR_CODES.badArgument, '--account is required');
      // Like `create`: an operator command is the only process some data dirs ever run (issue 27, finding 6).
      await keys.forgetExpiredSeals(now);
      const list = (await keys.list(accountId)).map((k) => ({ id: k.id, name: k.name, key_prefix: k.keyPrefix, role: k.role, is_active: k.isActive, revoked: k.revokedAt !== null }));
      if (values.json) printJson(io, { keys: list });
      else for (const k of list) io.stdout.write(`${k.id}  ${k.key_prefix}...  ${k.role.padEnd(8)} ${k.revoked ? 'revoked' : k.is_active ? 'active' : 'disabled'}  ${k.name}\n`);
      return 0;
    }
    case 'disable':
    case 'enable':
    case 'revoke': {
      const { values, positionals } = parseCommand(rest, {}, 1);
      const id = positionals[0]!;
      const key = await keys.get(id);
      if (!key) throw new AppError(ERROR_CODES.keyNotFound, `no API key ${id}`);
      const changed = sub === 'revoke' ? await keys.revoke(id, now) : await keys.setActive(id, sub === 'enable');
      if (!changed) throw new AppError(ERROR_CODES.invalidState, `API key ${id} is revoked`);
      const action = sub === 'revoke' ? AUDIT_ACTIONS.keyRevoked : sub === 'enable' ? AUDIT_ACTIONS.keyEnabled : AUDIT_ACTIONS.keyDisabled;
      await audit.record(key.accountId, action, { type: 'cli' }, id);
      if (values.json) printJson(io, { id, status: sub === 'revoke' ? 'revoked' : sub === 'enable' ? 'active' : 'disabled' });
      else io.stdout.write(`API key ${id} ${sub}d\n`);
      return 0;
    }
    default:
      throw new AppError(ERROR_CODES.badArgument, `usage:\n  ${KEYS_USAGE.join('\n  ')}`);
  }
}
