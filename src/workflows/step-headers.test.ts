import { describe, expect, it } from 'vitest';
import { AppError } from '../shared/errors.js';
import { checkStepHeaders, requireSecrets } from './step-headers.js';

const step = (headers: unknown) => ({ id: 'notify', type: 'webhook', config: { webhook_id: 'wh', headers } });

function refusal(headers: unknown): string {
  try {
    checkStepHeaders(step(headers));
  } catch (e) {
    if (e instanceof AppError) return `${e.code}: ${e.message}`;
    throw e;
  }
  return 'accepted';
}

describe('a webhook step\'s headers', () => {
  it('name the secrets they reference, however often and with spaces inside the braces', () => {
    expect(checkStepHeaders(step({ Authorization: 'Bearer {{secrets.API_TOKEN}}', 'X-Pair': '{{ secrets.A }}:{{secrets.B}}', 'X-Plain': 'acme' }))).toEqual(['API_TOKEN', 'A', 'B']);
    expect(checkStepHeaders(step(undefined))).toEqual([]);
  });

  it('refuse what could not be sent as written, with invalid_workflow', () => {
    expect(refusal(['x'])).toMatch(/^invalid_workflow: .*an object/);
    expect(refusal({ 'bad name': 'x' })).toMatch(/^invalid_workflow: .*not a header name/);
    expect(refusal({ 'X-Sluice-Signature': 'x' })).toMatch(/^invalid_workflow: .*set by Sluice/);
    expect(refusal({ 'webhook-id': 'x' })).toMatch(/set by Sluice/);
    expect(refusal({ 'X-A': 'one\r\nX-Injected: two' })).toMatch(/on one line/);
    expect(refusal({ 'X-A': 7 })).toMatch(/on one line/);
    expect(refusal({ 'X-A': 'Bearer {{secret.TOKEN}}' })).toMatch(/a reference is \{\{secrets.NAME\}\}/);
    expect(refusal(Object.fromEntries(Array.from({ length: 21 }, (_, i) => [`x-h${i}`, 'v'])))).toMatch(/at most 20/);
  });

  it('are refused at save when they name a secret the account lacks, and never ask the store when they name none', async () => {
    let asked = 0;
    const names = async () => (asked++, new Set(['API_TOKEN']));
    await expect(requireSecrets(names, [step({ Authorization: '{{secrets.API_TOKEN}}' })])).resolves.toBeUndefined();
    await expect(requireSecrets(names, [step({ Authorization: '{{secrets.OTHER}}' })])).rejects.toMatchObject({ code: 'unknown_workflow_secret', statusCode: 422, details: { step: 'notify', secret: 'OTHER' } });
    const before = asked;
    await requireSecrets(names, [step({ 'X-Plain': 'acme' })]);
    expect(asked).toBe(before);
  });
});
