import { describe, expect, it } from 'vitest';
import { FakeClock } from '../../shared/clock.js';
import { ProcessRecords } from '../../shared/shared-records.js';
import { CircuitBreaker } from './circuit-breaker.js';

function breaker(failureThreshold = 3, openMs = 1_000) {
  const clock = new FakeClock();
  return { clock, breaker: new CircuitBreaker({ failureThreshold, openMs, clock }) };
}

async function fail(b: CircuitBreaker, times: number) {
  for (let i = 0; i < times; i++) {
    expect(await b.tryAcquire()).toBe(true);
    await b.recordFailure();
  }
}

describe('CircuitBreaker', () => {
  it('stays closed below the threshold and opens on the threshold-th consecutive failure', async () => {
    const { breaker: b } = breaker(3);
    await fail(b, 2);
    expect(await b.state()).toBe('closed');
    await fail(b, 1);
    expect(await b.state()).toBe('open');
    expect(await b.tryAcquire()).toBe(false);
  });

  it('counts only consecutive failures: a success in between starts the count again', async () => {
    const { breaker: b } = breaker(3);
    await fail(b, 2);
    await b.recordSuccess();
    await fail(b, 2);
    expect(await b.state()).toBe('closed');
  });

  it('turns half-open after openMs and lets exactly one trial call through', async () => {
    const { clock, breaker: b } = breaker(1, 1_000);
    await fail(b, 1);
    clock.advance(999);
    expect(await b.state()).toBe('open');
    expect(await b.tryAcquire()).toBe(false);
    clock.advance(1);
    expect(await b.state()).toBe('half-open');
    expect(await b.tryAcquire()).toBe(true);
    expect(await b.tryAcquire()).toBe(false);
  });

  it('closes when the half-open trial succeeds', async () => {
    const { clock, breaker: b } = breaker(1, 1_000);
    await fail(b, 1);
    clock.advance(1_000);
    expect(await b.tryAcquire()).toBe(true);
    await b.recordSuccess();
    expect(await b.state()).toBe('closed');
    expect(await b.tryAcquire()).toBe(true);
    expect(await b.tryAcquire()).toBe(true);
  });

  it('opens for another full period when the half-open trial fails', async () => {
    const { clock, breaker: b } = breaker(2, 1_000);
    await fail(b, 2);
    clock.advance(1_000);
    expect(await b.tryAcquire()).toBe(true);
    await b.recordFailure();
    expect(await b.state()).toBe('open');
    clock.advance(999);
    expect(await b.tryAcquire()).toBe(false);
    clock.advance(1);
    expect(await b.tryAcquire()).toBe(true);
  });

  it('frees the trial slot when the trial call is released without a verdict', async () => {
    const { clock, breaker: b } = breaker(1, 1_000);
    await fail(b, 1);
    clock.advance(1_000);
    expect(await b.tryAcquire()).toBe(true);
    await b.release();
    expect(await b.state()).toBe('half-open');
    expect(await b.tryAcquire()).toBe(true);
  });

  it('lets a new trial through when the previous one never reported within openMs', async () => {
    const { clock, breaker: b } = breaker(1, 1_000);
    await fail(b, 1);
    clock.advance(1_000);
    expect(await b.tryAcquire()).toBe(true);
    clock.advance(999);
    expect(await b.tryAcquire()).toBe(false);
    clock.advance(1);
    expect(await b.tryAcquire()).toBe(true);
  });

  it('refuses a threshold below one', async () => {
    expect(() => new CircuitBreaker({ failureThreshold: 0 })).toThrow(RangeError);
  });
});

describe('CircuitBreaker instances on one set of shared records (as processes on one store)', () => {
  function pair(failureThreshold = 3, openMs = 1_000) {
    const clock = new FakeClock();
    const records = new ProcessRecords();
    const make = () => new CircuitBreaker({ failureThreshold, openMs, clock, records, name: 'remote-gender', viewMs: 100 });
    return { clock, a: make(), b: make(), other: new CircuitBreaker({ failureThreshold, openMs, clock, records, name: 'remote-company' }) };
  }

  it('count their failures together and open for both', async () => {
    const { a, b, other } = pair(3);
    await fail(a, 2);
    await fail(b, 1);
    expect(await a.state()).toBe('open');
    expect(await b.state()).toBe('open');
    expect(await b.tryAcquire()).toBe(false);
    expect(await other.state()).toBe('closed');
  });

  it('stop calling within viewMs of a breaker opened by the other', async () => {
    const { clock, a, b } = pair(1);
    expect(await b.tryAcquire()).toBe(true); // b has now seen it closed
    await a.recordFailure();
    clock.advance(99);
    expect(await b.tryAcquire()).toBe(true); // still trusting what it read 99 ms ago
    clock.advance(1);
    expect(await b.tryAcquire()).toBe(false);
  });

  it('let exactly one trial through between them when half-open, and both see it close', async () => {
    const { clock, a, b } = pair(1, 1_000);
    await fail(a, 1);
    clock.advance(1_000);
    expect(await b.tryAcquire()).toBe(true);
    expect(await a.tryAcquire()).toBe(false);
    await b.recordSuccess();
    expect(await a.state()).toBe('closed');
    expect(await a.tryAcquire()).toBe(true);
  });
});
