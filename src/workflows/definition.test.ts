import { describe, expect, it } from 'vitest';
import { nextFire, validateDefinition } from './definition.js';

const lookup = (id: string, path: string) => ({ id, type: 'email_lookup', config: { input: { var: path } } });

describe('workflow definitions at save', () => {
  it('keeps a valid definition, with a manual trigger by default', () => {
    const def = validateDefinition({ name: ' Flow ', steps: [lookup('a', 'input.email'), { id: 'b', type: 'transform', config: { expression: { var: 'steps.a.output.gender' } } }] });
    expect(def).toMatchObject({ name: 'Flow', description: '', trigger: { type: 'manual' } });
    expect(def.steps.map((s) => s.id)).toEqual(['a', 'b']);
  });

  it('refuses a step type whose lookup Sluice does not have, and unknown types, with their codes', () => {
    expect(() => validateDefinition({ name: 'x', steps: [{ id: 'a', type: 'ip_lookup', config: {} }] })).toThrow(expect.objectContaining({ code: 'step_type_unsupported', statusCode: 422 }));
    expect(() => validateDefinition({ name: 'x', steps: [{ id: 'a', type: 'shell', config: {} }] })).toThrow(expect.objectContaining({ code: 'invalid_workflow' }));
    expect(() => validateDefinition({ name: 'x', trigger: { type: 'file_upload' }, steps: [lookup('a', 'input.e')] })).toThrow(expect.objectContaining({ code: 'trigger_unsupported' }));
    expect(() => validateDefinition({ name: 'x', trigger: { type: 'monitor_event' }, steps: [lookup('a', 'input.e')] })).toThrow(expect.objectContaining({ code: 'invalid_workflow' }));
    expect(validateDefinition({ name: 'x', trigger: { type: 'monitor_event', monitor_id: 'mon_1', extra: 1 }, steps: [lookup('a', 'input.e')] }).trigger).toEqual({ type: 'monitor_event', monitor_id: 'mon_1' });
    expect(validateDefinition({ name: 'x', trigger: { type: 'webhook', ignored: true }, steps: [lookup('a', 'input.e')] }).trigger).toEqual({ type: 'webhook' });
  });

  it('keeps a schedule as five cron fields in an IANA time zone, and finds its next fire time there', () => {
    const def = validateDefinition({ name: 'x', trigger: { type: 'schedule', cron: ' 0 9 * * * ', timezone: 'Europe/Berlin', extra: 1 }, steps: [lookup('a', 'input.e')] });
    expect(def.trigger).toEqual({ type: 'schedule', cron: '0 9 * * *', timezone: 'Europe/Berlin' });
    // 09:00 in Berlin is 08:00 UTC in winter, 07:00 UTC in summer.
    expect(new Date(nextFire(def.trigger, Date.UTC(2026, 0, 10, 12))!).toISOString()).toBe('2026-01-11T08:00:00.000Z');
    expect(new Date(nextFire(def.trigger, Date.UTC(2026, 6, 10, 12))!).toISOString()).toBe('2026-07-11T07:00:00.000Z');
    expect(validateDefinition({ name: 'x', trigger: { type: 'schedule', cron: '*/5 * * * *' }, steps: [lookup('a', 'input.e')] }).trigger).toMatchObject({ timezone: 'UTC' });
    const bad = (trigger: unknown) => () => validateDefinition({ name: 'x', trigger, steps: [lookup('a', 'input.e')] });
    expect(bad({ type: 'schedule', cron: '* * * * * *' })).toThrow(expect.objectContaining({ code: 'invalid_workflow' }));
    expect(bad({ type: 'schedule', cron: '61 * * * *' })).toThrow(expect.objectContaining({ code: 'invalid_workflow' }));
    expect(bad({ type: 'schedule', cron: '0 9 * * *', timezone: 'Mars/Olympus' })).toThrow(expect.objectContaining({ code: 'invalid_workflow' }));
    expect(bad({ type: 'schedule' })).toThrow(expect.objectContaining({ code: 'invalid_workflow' }));
  });

  it('refuses references to a later step, to the step itself, outside input/steps, or through forbidden names', () => {
    const later = [lookup('a', 'steps.b.output.gender'), lookup('b', 'input.email')];
    expect(() => validateDefinition({ name: 'x', steps: later })).toThrow(expect.objectContaining({ code: 'invalid_reference', details: expect.objectContaining({ step: 'a' }) }));
    expect(() => validateDefinition({ name: 'x', steps: [lookup('a', 'steps.a.output.x')] })).toThrow(expect.objectContaining({ code: 'invalid_reference' }));
    expect(() => validateDefinition({ name: 'x', steps: [lookup('a', 'process.env')] })).toThrow(expect.objectContaining({ code: 'invalid_reference' }));
    expect(() => validateDefinition({ name: 'x', steps: [lookup('a', 'input.__proto__.polluted')] })).toThrow(expect.objectContaining({ code: 'invalid_reference' }));
    expect(() => validateDefinition({ name: 'x', steps: [lookup('a', 'input.e'), lookup('b', 'steps.a.prototype')] })).toThrow(expect.objectContaining({ code: 'invalid_reference' }));
  });

  it('checks each type\'s config: delays capped, webhooks named, on_false forward only, ids unique', () => {
    const bad = (steps: unknown[]) => () => validateDefinition({ name: 'x', steps });
    expect(bad([{ id: 'd', type: 'delay', config: { seconds: 0 } }])).toThrow(expect.objectContaining({ code: 'invalid_workflow' }));
    expect(bad([{ id: 'd', type: 'delay', config: { seconds: 31 * 86_400 } }])).toThrow(expect.objectContaining({ code: 'invalid_workflow' }));
    expect(bad([{ id: 'w', type: 'webhook', config: {} }])).toThrow(expect.objectContaining({ code: 'invalid_workflow' }));
    expect(bad([{ id: 'c', type: 'condition', config: { expression: true, on_false: 'c' } }])).toThrow(expect.objectContaining({ code: 'invalid_workflow' }));
    expect(bad([lookup('a', 'input.e'), lookup('a', 'input.e')])).toThrow(expect.objectContaining({ code: 'invalid_workflow' }));
    expect(bad([{ id: 't', type: 'transform', config: {} }])).toThrow(expect.objectContaining({ code: 'invalid_workflow' }));
    expect(bad([])).toThrow(expect.objectContaining({ code: 'invalid_workflow' }));
  });
});
