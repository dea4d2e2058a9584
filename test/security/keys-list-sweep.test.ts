import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { keysCommand } from '../../src/cli/keys-command.js';
import { FakeClock } from '../../src/shared/clock.js';
import { captureIo } from '../support/capture-io.js';
import { engineScope, TEST_STORES } from '../support/test-engine.js';

/**
 * Issue 27, finding 6: `sluice keys list` left expired sealed copies in place (only `keys create`
 * swept), and an operator command is the only process some data dirs ever run.
 */
describe.each(TEST_STORES)('sluice keys list on %s', (kind) => {
  const engines = engineScope(kind);
  afterEach(() => engines.closeAll());

  it('erases sealed copies whose reveal window has ended', async () => {
    const clock = new FakeClock(Date.now());
    const engine = await engines.open({ SLUICE_KEY_REVEAL_SECONDS: '900' }, clock);
    const account = await engine.deps.billing.createAccount({ email: 'ops@example.com', passwordHash: null, credits: 0, now: clock.now() });
    const { key } = await engine.auth.keys.create({ accountId: account.id, name: 'old', role: 'admin', now: clock.now() });
    expect((await engine.deps.store.keys.byId(key.id))!.sealed).not.toBeNull();
    clock.advance(1_000_000);

    expect(await keysCommand(engine, ['list', '--account', account.id], captureIo().io)).toBe(0);
    expect((await engine.deps.store.keys.byId(key.id))!.sealed).toBeNull();
    if (kind === 'sqlite') expect(fs.readdirSync(path.join(engine.dataDir, 'data-keys')).filter((n) => n.startsWith('reveal@'))).toEqual([]);
  });
});
