import type { OutboxEvent } from '../storage/records.js';

/**
 * `api_key.created` (issue 27, item 8): sent when any key of the account is made, by the API or
 * `sluice keys create`, so that an account learns of a key a leaked key minted. Written in the
 * same transaction as the key, so it is never lost nor sent for a key that did not commit. The
 * payload never carries the secret, only what `GET /api/account/keys` shows.
 */
export const API_KEY_CREATED = 'api_key.created';

export function apiKeyCreatedEvent(key: { id: string; accountId: string; name: string; role: string; keyPrefix: string }, now: number): OutboxEvent {
  return {
    id: `evt_key_${key.id}`,
    event: API_KEY_CREATED,
    accountId: key.accountId,
    payload: {
      event: API_KEY_CREATED,
      data: { id: key.id, name: key.name, role: key.role, key_prefix: key.keyPrefix },
      created_at: new Date(now).toISOString(),
    },
  };
}
