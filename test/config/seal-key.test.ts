import { afterEach, describe, expect, it } from 'vitest';
import { engineScope, TEST_STORES } from '../support/test-engine.js';

const key = (fill: string) => Buffer.alloc(32, fill).toString('base64');

/**
 * Machines that share a database must seal with one key: a webhook secret sealed on one machine is
 * unsealed by whichever machine delivers the event, and an API key revealed on any of them.
 */
describe.each(TEST_STORES)('SLUICE_SEAL_KEY on %s', (store) => {
  const engines = engineScope(store);
  afterEach(() => engines.closeAll());
  // Another machine on PostgreSQL: a data dir of its own. On SQLite the store is the data dir's file.
  const elsewhere = (dataDir: string) => (store === 'postgres' ? `${dataDir}-second` : dataDir);

  it('lets a second process with the same key share the store, and the secrets it sealed unseal there', async () => {
    const first = await engines.open({ SLUICE_SEAL_KEY: key('a') });
    const account = await first.deps.billing.createAccount({ credits: 0, now: Date.now() });
    const created = await first.auth.keys.create({ accountId: account.id, name: 'ci', role: 'admin', now: Date.now() });
    const second = await engines.open({ ...first.env, SLUICE_DATA_DIR: elsewhere(first.dataDir), SLUICE_SEAL_KEY: key('a') });
    expect(await second.auth.keys.reveal(created.key.id, Date.now())).toBe(created.secret);
  });

  it('refuses to start a process whose key differs from the one the store was first used with, saying which setting', async () => {
    const first = await engines.open({ SLUICE_SEAL_KEY: key('a') });
    const refused = engines.open({ ...first.env, SLUICE_DATA_DIR: elsewhere(first.dataDir), SLUICE_SEAL_KEY: key('b') });
    await expect(refused).rejects.toMatchObject({ code: 'bad_config', details: { variable: 'SLUICE_SEAL_KEY' } });
    await expect(refused).rejects.toThrow(/SLUICE_SEAL_KEY/);
  });

  it('never records the key itself in the store', async () => {
    const sealKey = key('c');
    const first = await engines.open({ SLUICE_SEAL_KEY: sealKey });
    const recorded = await first.deps.store.limits.readShared('seal-key-fingerprint');
    expect(recorded).toMatch(/^[A-Za-z0-9+/]{43}=$/);
    expect(recorded).not.toContain(sealKey.slice(0, 12));
  });
});
