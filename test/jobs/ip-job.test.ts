import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { importCommand } from '../../src/cli/import-command.js';
import { runJob } from '../../src/cli/run-command.js';
import { isAppError } from '../../src/shared/errors.js';
import { captureIo } from '../support/capture-io.js';
import { resultRecords } from '../support/csv-fixture.js';
import { engineScope, TEST_STORES, writeFile, type TestEngine } from '../support/test-engine.js';
import { AS2ORG_FILE, ASREL_FILE, PFX2AS_NOV, PFX2AS_OCT, RIR_FILE } from '../lookups/ip-network-fixtures.js';

/** Hijacked, moved, IPv6 with a second origin, unrouted and unregistered, invalid, the first again in another form, blank. */
const INPUT = ['id,IP Address', '1,192.0.2.77', '2,198.51.100.1', '3,2001:DB8:100::1', '4,172.16.0.1', '5,300.1.1.1', '6,::ffff:192.0.2.77', '7,'].join('\n');

describe.each(TEST_STORES)('the ip job type on %s', (store) => {
  const engines = engineScope(store);
  afterEach(() => engines.closeAll());

  async function loaded(): Promise<TestEngine> {
    const e = await engines.open();
    const run = async (args: string[]) => {
      const io = captureIo();
      expect(await importCommand(e, [...args, '--json'], io.io)).toBe(0);
      return JSON.parse(io.stdout()) as Record<string, unknown>;
    };
    expect(await run(['rir', writeFile(e.dataDir, 'delegated-nro-extended-latest', RIR_FILE)])).toMatchObject({ source: 'rir', data_as_of: '2026-11-01', imported: 308, invalid: 2 });
    expect(await run(['pfx2as', writeFile(e.dataDir, 'oct.pfx2as', PFX2AS_OCT), '--date', '2026-10-01'])).toMatchObject({ source: 'pfx2as:2026-10-01', imported: 305 });
    expect(await run(['pfx2as', writeFile(e.dataDir, 'nov.pfx2as', PFX2AS_NOV), '--date', '2026-11-01'])).toMatchObject({ source: 'pfx2as:2026-11-01', imported: 305 });
    expect(await run(['asnames', writeFile(e.dataDir, 'as-org2info.txt', AS2ORG_FILE), '--date', '2026-11-05'])).toMatchObject({ imported: 9 });
    expect(await run(['asrel', writeFile(e.dataDir, 'as-rel.txt', ASREL_FILE), '--date', '2026-11-03'])).toMatchObject({ imported: 6 });
    return e;
  }

  it('`sluice import` prints a text summary, and refuses a pfx2as file without --date and a missing file', async () => {
    const e = await engines.open();
    const io = captureIo();
    expect(await importCommand(e, ['asrel', writeFile(e.dataDir, 'as-rel.txt', ASREL_FILE), '--date', '2026-11-03'], io.io)).toBe(0);
    expect(io.stdout()).toContain('source     asrel (data as of 2026-11-03)');
    expect(io.stdout()).toContain('imported   6');
    expect(io.stdout()).toContain('invalid    2 (invalid_asn 1, malformed_line 1)');
    await expect(importCommand(e, ['pfx2as', writeFile(e.dataDir, 'nov.pfx2as', PFX2AS_NOV)], captureIo().io)).rejects.toSatisfy((err) => isAppError(err, 'bad_argument'));
    await expect(importCommand(e, ['rir', path.join(e.dataDir, 'missing')], captureIo().io)).rejects.toSatisfy((err) => isAppError(err, 'bad_argument'));
  });

  it('answers each address of a CSV with the network columns, marks bad and repeated rows, and charges each address once', async () => {
    const e = await loaded();
    const input = writeFile(e.dataDir, 'in.csv', INPUT);
    const account = await e.deps.billing.createAccount({ credits: 100, now: Date.now() });
    const run = await runJob(e, { file: input, type: 'ip', accountId: account.id, outDir: path.join(e.dataDir, 'out') });
    expect(run.summary).toMatchObject({ status: 'completed', type: 'ip', credits_used: 4 });
    expect(run.summary.rows).toMatchObject({ total: 7, processed: 7, found: 4, invalid: 2, duplicate: 1, error: 0 });
    const text = fs.readFileSync(run.files.all!, 'utf8');
    expect(text.split('\n')[0]).toBe(
      'id,IP Address,network_cidr,rir,registrant_org,allocated_at,country,origin_asn,as_name,company,bgp_prefix,announced,upstreams,origin_changes,possible_hijack,hijack_origins,routing_as_of,status,credits,cached,error',
    );
    const rows = (await resultRecords(text)).map((r) => Object.values(r).slice(2));
    const hijacked = ['192.0.2.0/23', 'ripencc', 'Beta Hosting GmbH', '2012-01-02', 'DE', '64666', 'MALLORY', 'Mallory Transit', '192.0.2.0/24', 'true', '', '1', 'true', '64666', '2026-11-01'];
    expect(rows[0]).toEqual([...hijacked, 'ok', '1', 'false', '']);
    expect(rows[1]).toEqual(['198.51.100.0/23', 'lacnic', '', '2009-09-09', 'BR', '64502', '', '', '198.51.100.0/24', 'true', '', '1', 'false', '', '2026-11-01', 'ok', '1', 'false', '']);
    expect(rows[2]).toEqual(['2001:db8::/32', 'apnic', 'Gamma KK', '2015-06-02', 'JP', '64520;64667', 'GAMMA-AS', 'Gamma KK', '2001:db8:100::/48', 'true', '', '1', 'true', '64667', '2026-11-01', 'ok', '1', 'false', '']);
    expect(rows[3]).toEqual(['', '', '', '', '', '', '', '', '', 'false', '', '0', 'false', '', '2026-11-01', 'ok', '1', 'false', '']);
    expect(rows[4]?.slice(-4)).toEqual(['invalid', '0', 'false', 'invalid_ip']);
    // The IPv4-mapped form is the same address: a duplicate, answered, not charged again.
    expect(rows[5]?.slice(0, 15)).toEqual(hijacked);
    expect(rows[5]?.slice(-4, -1)).toEqual(['duplicate', '0', 'false']);
    expect(rows[6]?.slice(-4)).toEqual(['invalid', '0', 'false', 'empty_value']);
    expect(await e.deps.billing.available(account.id)).toBe(96);
  });
}, 60_000);
