import { Agent } from 'undici';
import type { AddressPolicy } from './address-policy.js';
import { guardedConnector } from './guarded-connector.js';

/**
 * An undici Agent under the webhook address policy, for other outbound calls made on a caller's
 * behalf (credential validation), with HttpTransport's connection checks (guarded-connector.ts).
 */
export function guardedDispatcher(policy: AddressPolicy): Agent {
  return new Agent({ connect: guardedConnector(policy), keepAliveTimeout: 4_000, connections: 8 });
}
