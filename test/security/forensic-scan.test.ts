import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/shared/clock.js';
import { STORE_KINDS } from '../../src/storage/store.js';
import { addKey, bearer, closeHarnesses, json, newAccount, openApiHarness, type ApiHarness } from '../support/api-harness.js';
import { bytesUnder, dumpPostgres, recoverSealed } from '../support/forensic-scan.js';
import { storeEnv, TEST_SEAL_KEY, TEST_STORES } from '../support/test-engine.js';

const WINDOW_S = 900;

/**
 * Issue 27, finding 1: after the reveal window, and after a webhook is deleted, no secret may be
 * recoverable from any byte Sluice keeps, even by someone who holds the seal key: not from
 * sluice.db, its WAL, seal.key or anything else under the data dir, nor from a dump of the
 * PostgreSQL database. A webhook still in use is the control: the scan must find its secret, or it
 * proves nothing.
 */
describe.each(TEST_STORES)('a forensic scan on %s', (kind) => {
  const drops: (() => Promise<void>)[] = [];
  afterEach(async () => {
    await closeHarnesses();
    for (const drop of drops.splice(0)) await drop();
  });

  async function setup(): Promise<{ h: ApiHarness; clock: FakeClock; erased: string[]; live: string; adminKey: string }> {
    const store = await storeEnv(kind);
    drops.push(store.drop);
    const clock = new FakeClock(Date.now());
    const h = await openApiHarness({ ...store.env, SLUICE_KEY_REVEAL_SECONDS: String(WINDOW_S), SLUICE_WEBHOOK_ALLOW_PRIVATE: 'true' }, clock);
    const a = await newAccount(h);
    const keys = [a.key];
    for (const role of ['admin', 'tech', 'readonly'] as const) keys.push((await addKey(h, a.id, role, `${role} key`)).key);
    const hooks: { id: string; secret: string }[] = [];
    for (let i = 0; i < 3; i++) {
      const created = await h.app.inject({ method: 'POST', url: '/api/webhooks', headers: bearer(a.key), payload: { url: `http://127.0.0.1:9/hook-${i}`, events: ['bulk.completed'] } });
      expect(created.statusCode, created.body).toBe(200);
      hooks.push({ id: json(created).result.id, secret: json(created).result.signing_secret });
    }
    for (const hook of hooks.slice(1)) {
      expect((await h.app.inject({ method: 'DELETE', url: `/api/webhooks/${hook.id}`, headers: bearer(a.key) })).statusCode).toBe(200);
    }
    // Inside the window the copy works: what is sealed is really there to find.
    const shown = await h.app.inject({ method: 'GET', url: `/api/account/keys/reveal?id=${a.keyId}`, headers: bearer(a.key) });
    expect(json(shown)).toEqual({ key: a.key });
    // Past the window and the slot its data key belongs to; listing keys sweeps.
    clock.advance(WINDOW_S * 1000 + 61_000);
    expect((await h.app.inject({ method: 'GET', url: '/api/account/keys', headers: bearer(a.key) })).statusCode).toBe(200);
    return { h, clock, erased: [...keys, ...hooks.slice(1).map((x) => x.secret)], live: hooks[0]!.secret, adminKey: a.key };
  }

  function sealKeyOf(h: ApiHarness): Buffer {
    return Buffer.from(kind === STORE_KINDS.sqlite ? fs.readFileSync(path.join(h.engine.dataDir, 'seal.key'), 'utf8') : TEST_SEAL_KEY, 'base64');
  }

  function expectNothingErased(bytes: string, sealKey: Buffer, erased: string[], live: string): void {
    const recovered = recoverSealed(bytes, sealKey);
    expect(recovered.has(live), 'the control: a live webhook secret is found').toBe(true);
    for (const secret of erased) {
      expect(recovered.has(secret), 'an erased secret was opened').toBe(false);
      expect(bytes.includes(secret), 'an erased secret lies in plain text').toBe(false);
    }
  }

  it('opens no erased API key or webhook secret from every byte under the data dir, while running and after', async () => {
    const { h, erased, live } = await setup();
    const sealKey = sealKeyOf(h);
    if (kind === STORE_KINDS.sqlite) expect(fs.existsSync(path.join(h.engine.dataDir, 'sluice.db-wal'))).toBe(true);
    // While the process runs: the WAL is there and holds every page written since its last reset.
    const running = bytesUnder(h.engine.dataDir);
    if (kind === STORE_KINDS.sqlite) expectNothingErased(running, sealKey, erased, live);
    else for (const secret of erased) expect(recoverSealed(running, sealKey).has(secret)).toBe(false);
    if (kind === STORE_KINDS.postgres) expectNothingErased(await dumpPostgres(h.engine.env.SLUICE_DATABASE_URL!), sealKey, erased, live);
    await closeHarnesses();
    if (kind === STORE_KINDS.sqlite) expectNothingErased(bytesUnder(h.engine.dataDir), sealKey, erased, live);
  });
});
