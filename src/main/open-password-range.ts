import type { Config } from '../config/load-config.js';
import { LocalPasswordRange } from '../lookups/password/local-password-range.js';
import { PasswordBreachProvider } from '../lookups/password/password-breach-provider.js';
import { CircuitBreaker } from '../lookups/remote/circuit-breaker.js';
import { RemotePasswordRange } from '../lookups/remote/remote-password-range.js';
import type { Clock } from '../shared/clock.js';
import type { Store } from '../storage/store.js';

/**
 * The password breach check: a remote range service when SLUICE_PASSWORD_RANGE_URL is set, else
 * the index in this data dir that the store points to (none imported: the check answers 503).
 */
export function openPasswordBreaches(config: Config, store: Store, clock: Clock): PasswordBreachProvider {
  const { url, auth } = config.passwordRange;
  if (url === undefined) return new PasswordBreachProvider(new LocalPasswordRange({ dataDir: config.dataDir, records: store.limits, now: () => clock.now() }));
  const parsed = new URL(url);
  return new PasswordBreachProvider(
    new RemotePasswordRange({
      baseUrl: url,
      ...(auth ? { authHeader: auth } : {}),
      timeoutMs: config.providers.timeoutMs,
      connections: config.providers.connections,
      // One breaker for every process on the store, as for the other remote services.
      breaker: new CircuitBreaker({ records: store.limits, name: `password_breaches ${parsed.origin}${parsed.pathname}` }),
    }),
  );
}
