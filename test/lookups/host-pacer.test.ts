import { describe, expect, it } from 'vitest';
import { HostPacer } from '../../src/lookups/validity/host-pacer.js';
import { FakeClock } from '../../src/shared/clock.js';
import { ProcessRecords } from '../../src/shared/shared-records.js';

describe('HostPacer', () => {
  function pacer(interval: number, clock = new FakeClock(), records = new ProcessRecords()): { pacer: HostPacer; slept: number[]; clock: FakeClock } {
    const slept: number[] = [];
    return { pacer: new HostPacer(records, clock, interval, async (ms) => void slept.push(ms)), slept, clock };
  }

  it('books connections to one host an interval apart, in the order asked', async () => {
    const { pacer: p, slept } = pacer(100);
    await Promise.all([p.wait('mx.a.test'), p.wait('mx.a.test'), p.wait('MX.A.test')]);
    expect(slept).toEqual([100, 200]);
  });

  it('paces each host on its own, and not at all once the interval has passed', async () => {
    const { pacer: p, slept, clock } = pacer(100);
    await p.wait('mx.a.test');
    await p.wait('mx.b.test');
    expect(slept).toEqual([]);
    clock.advance(150);
    await p.wait('mx.a.test');
    expect(slept).toEqual([]);
    await p.wait('mx.a.test');
    expect(slept).toEqual([100]);
  });

  it('an interval of 0 does not pace, and a booking a clock left far ahead is not waited out', async () => {
    const off = pacer(0);
    await Promise.all([off.pacer.wait('mx.a.test'), off.pacer.wait('mx.a.test')]);
    expect(off.slept).toEqual([]);
    const records = new ProcessRecords();
    await records.updateShared('smtp-pace:mx.a.test', () => ({ value: String(Date.UTC(2030, 0, 1)), result: undefined }));
    const ahead = pacer(100, new FakeClock(), records);
    await ahead.pacer.wait('mx.a.test');
    expect(ahead.slept).toHaveLength(1);
    expect(ahead.slept[0]).toBeLessThanOrEqual(100 * 1_000);
  });
});
