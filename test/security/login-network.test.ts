import { describe, expect, it } from 'vitest';
import { LoginThrottle, NETWORK_POLICY, addressKey, networkKey } from '../../src/auth/login-throttle.js';
import { ProcessRecords } from '../../src/shared/shared-records.js';

/**
 * Issue 27, finding 6: the per-/64 login limit was beaten by rotating across the /64s of one /48,
 * a site's ordinary allocation. Each guess here comes from a fresh /64 and tries a fresh email.
 */
describe('failed logins from one IPv6 /48', () => {
  it('are refused once the /48 has failed NETWORK_POLICY.failures times, whatever /64 they come from', async () => {
    const throttle = new LoginThrottle(new ProcessRecords());
    const now = Date.UTC(2026, 10, 27);
    const verdicts = [];
    for (let i = 0; i < NETWORK_POLICY.failures + 5; i++) {
      verdicts.push((await throttle.begin(`victim${i}@example.com`, `2001:db8:7:${i.toString(16)}::1`, now)).allowed);
    }
    expect(verdicts.filter(Boolean)).toHaveLength(NETWORK_POLICY.failures);
    expect(verdicts.slice(NETWORK_POLICY.failures)).toEqual([false, false, false, false, false]);
    // Another /48 and IPv4 are counted apart.
    expect((await throttle.begin('someone@example.com', '2001:db8:8::1', now)).allowed).toBe(true);
    expect((await throttle.begin('someone-else@example.com', '192.0.2.1', now)).allowed).toBe(true);
  });

  it('names the /48 and the /64 of an address however it is written', () => {
    expect(networkKey('2001:0db8:0007:00ff::1')).toBe('2001:db8:7::/48');
    expect(addressKey('2001:0db8:0007:00ff::1')).toBe('2001:db8:7:ff::/64');
    expect(networkKey('::ffff:192.0.2.1')).toBeUndefined();
    expect(networkKey('192.0.2.1')).toBeUndefined();
  });
});
