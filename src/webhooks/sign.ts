import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

const SECRET_PREFIX = 'whsec_';

/**
 * A signing secret in the Standard Webhooks form, `whsec_` + base64 of 24 random bytes, so that the
 * same string works with any Standard Webhooks library as it is.
 */
export function newSigningSecret(): string {
  return SECRET_PREFIX + randomBytes(24).toString('base64');
}

/**
 * `X-Sluice-Signature`: `sha256=` + lowercase hex HMAC-SHA256 of the raw body bytes, keyed with the
 * signing secret exactly as the API returned it (its UTF-8 bytes, prefix included).
 */
export function sluiceSignature(body: Buffer, secret: string): string {
  return `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
}

/**
 * Standard Webhooks `webhook-signature`: `v1,` + base64 HMAC-SHA256 of `id.timestamp.body`, keyed
 * with the base64-decoded part of the secret after `whsec_`. Signing the id and timestamp is what
 * lets a receiver reject a replayed or stale delivery.
 */
export function standardSignature(body: Buffer, secret: string, messageId: string, timestampSeconds: number): string {
  const key = Buffer.from(secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret, 'base64');
  const mac = createHmac('sha256', key).update(`${messageId}.${timestampSeconds}.`).update(body).digest('base64');
  return `v1,${mac}`;
}

/**
 * Every header of a generic delivery. The timestamp is taken per attempt; the id is the event's.
 * `secrets` is the current signing secret first, then, during a rotation's overlap, the previous
 * one: each signature header then carries one signature per secret, separated by a space (the
 * Standard Webhooks form for several `v1,` signatures), so a receiver configured with either
 * secret verifies the delivery.
 */
export function deliveryHeaders(body: Buffer, secrets: string | readonly string[], event: string, messageId: string, nowMs: number): Record<string, string> {
  const timestamp = Math.floor(nowMs / 1000);
  const all = typeof secrets === 'string' ? [secrets] : secrets;
  return {
    'content-type': 'application/json',
    'user-agent': 'Sluice-Webhooks/1',
    'x-sluice-event': event,
    'x-sluice-signature': all.map((secret) => sluiceSignature(body, secret)).join(' '),
    'webhook-id': messageId,
    // The same on every attempt: a receiver (or a service behind a workflow's webhook step) drops repeats by it.
    'idempotency-key': messageId,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': all.map((secret) => standardSignature(body, secret, messageId, timestamp)).join(' '),
  };
}

/**
 * What a receiver checks, for the demo and for anyone verifying by hand: both signatures over the
 * raw bytes (each header may carry several, space-separated: one of them must match), and a
 * `webhook-timestamp` within `toleranceSeconds` of now (a replay is older). Returns the problems
 * found; none means the delivery is genuine.
 */
export function verifySignatures(body: Buffer, headers: Record<string, string | undefined>, secret: string, nowMs: number, toleranceSeconds = 300): string[] {
  const problems: string[] = [];
  if (!anyMatches(headers['x-sluice-signature'], sluiceSignature(body, secret))) problems.push('X-Sluice-Signature does not match');
  const id = headers['webhook-id'];
  const timestamp = Number(headers['webhook-timestamp']);
  if (!id || !Number.isInteger(timestamp)) return [...problems, 'webhook-id or webhook-timestamp missing'];
  if (Math.abs(nowMs / 1000 - timestamp) > toleranceSeconds) problems.push('webhook-timestamp is too old or in the future');
  if (!anyMatches(headers['webhook-signature'], standardSignature(body, secret, id, timestamp))) problems.push('webhook-signature does not match');
  return problems;
}

function anyMatches(header: string | undefined, expected: string): boolean {
  return (header ?? '').split(' ').some((candidate) => sameText(candidate, expected));
}

function sameText(a: string | undefined, b: string): boolean {
  if (a === undefined) return false;
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}
