import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load-config.js';
import { AppError } from '../../src/shared/errors.js';

describe('email verification settings', () => {
  it('reads SLUICE_DNS_SERVERS as IP:port pairs, port 53 when left out', () => {
    expect(loadConfig({ SLUICE_DNS_SERVERS: '127.0.0.1:5353, [::1]:53,10.0.0.2' }).validity.dnsServers).toEqual([
      { host: '127.0.0.1', port: 5353 },
      { host: '::1', port: 53 },
      { host: '10.0.0.2', port: 53 },
    ]);
  });

  it.each(['dns.example.com:53', '127.0.0.1:0', '127.0.0.1:99999', ',,'])('refuses SLUICE_DNS_SERVERS=%s with bad_config naming the variable', (value) => {
    try {
      loadConfig({ SLUICE_DNS_SERVERS: value });
      expect.unreachable();
    } catch (e: unknown) {
      expect(e).toBeInstanceOf(AppError);
      expect((e as AppError).code).toBe('bad_config');
      expect((e as AppError).message).toContain('SLUICE_DNS_SERVERS');
    }
  });

  it('turns SMTP probing off with SLUICE_SMTP_PROBE=off and refuses other words', () => {
    expect(loadConfig({ SLUICE_SMTP_PROBE: 'off' }).validity.probe).toBe(false);
    expect(loadConfig({}).validity.probe).toBe(true);
    expect(() => loadConfig({ SLUICE_SMTP_PROBE: 'maybe' })).toThrow(/SLUICE_SMTP_PROBE/);
  });
});
