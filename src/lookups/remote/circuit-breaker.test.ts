import { describe, expect, it } from 'vitest';
import { FakeClock } from '../../shared/clock.js';
import { CircuitBreaker } from './circuit-breaker.js';

function breaker(failureThreshold = 3, openMs = 1_000) {
  const clock = new FakeClock();
  return { clock, breaker: new CircuitBreaker({ failureThreshold, openMs, clock }) };
}

function fail(b: CircuitBreaker, times: number) {
  for (let i = 0; i < times; i++) {
    expect(b.tryAcquire()).toBe(true);
    b.recordFailure();
  }
}

describe('CircuitBreaker', () => {
  it('stays closed below the threshold and opens on the threshold-th consecutive failure', () => {
    const { breaker: b } = breaker(3);
    fail(b, 2);
    expect(b.state()).toBe('closed');
    fail(b, 1);
    expect(b.state()).toBe('open');
    expect(b.tryAcquire()).toBe(false);
  });

  it('counts only consecutive failures: a success in between starts the count again', () => {
    const { breaker: b } = breaker(3);
    fail(b, 2);
    b.recordSuccess();
    fail(b, 2);
    expect(b.state()).toBe('closed');
  });

  it('turns half-open after openMs and lets exactly one trial call through', () => {
    const { clock, breaker: b } = breaker(1, 1_000);
    fail(b, 1);
    clock.advance(999);
    expect(b.state()).toBe('open');
    expect(b.tryAcquire()).toBe(false);
    clock.advance(1);
    expect(b.state()).toBe('half-open');
    expect(b.tryAcquire()).toBe(true);
    expect(b.tryAcquire()).toBe(false);
  });

  it('closes when the half-open trial succeeds', () => {
    const { clock, breaker: b } = breaker(1, 1_000);
    fail(b, 1);
    clock.advance(1_000);
    expect(b.tryAcquire()).toBe(true);
    b.recordSuccess();
    expect(b.state()).toBe('closed');
    expect(b.tryAcquire()).toBe(true);
    expect(b.tryAcquire()).toBe(true);
  });

  it('opens for another full period when the half-open trial fails', () => {
    const { clock, breaker: b } = breaker(2, 1_000);
    fail(b, 2);
    clock.advance(1_000);
    expect(b.tryAcquire()).toBe(true);
    b.recordFailure();
    expect(b.state()).toBe('open');
    clock.advance(999);
    expect(b.tryAcquire()).toBe(false);
    clock.advance(1);
    expect(b.tryAcquire()).toBe(true);
  });

  it('frees the trial slot when the trial call is released without a verdict', () => {
    const { clock, breaker: b } = breaker(1, 1_000);
    fail(b, 1);
    clock.advance(1_000);
    expect(b.tryAcquire()).toBe(true);
    b.release();
    expect(b.state()).toBe('half-open');
    expect(b.tryAcquire()).toBe(true);
  });

  it('lets a new trial through when the previous one never reported within openMs', () => {
    const { clock, breaker: b } = breaker(1, 1_000);
    fail(b, 1);
    clock.advance(1_000);
    expect(b.tryAcquire()).toBe(true);
    clock.advance(999);
    expect(b.tryAcquire()).toBe(false);
    clock.advance(1);
    expect(b.tryAcquire()).toBe(true);
  });

  it('refuses a threshold below one', () => {
    expect(() => new CircuitBreaker({ failureThreshold: 0 })).toThrow(RangeError);
  });
});
