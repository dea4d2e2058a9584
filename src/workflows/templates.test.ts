import { describe, expect, it } from 'vitest';
import { validateDefinition } from './definition.js';
import { templateBody, WORKFLOW_TEMPLATES } from './templates.js';

describe('workflow templates', () => {
  it('every template is a definition a save accepts, cloned as a draft with a manual trigger', () => {
    expect(new Set(WORKFLOW_TEMPLATES.map((t) => t.id)).size).toBe(WORKFLOW_TEMPLATES.length);
    for (const t of WORKFLOW_TEMPLATES) {
      const body = templateBody(t.id, {});
      expect(body).toMatchObject({ name: t.name, status: 'draft', trigger: { type: 'manual' } });
      expect(validateDefinition(body).steps.map((s) => s.id)).toEqual(t.steps.map((s) => s.id));
    }
    expect(templateBody('email_gender_segment', { name: 'mine', status: 'active' })).toMatchObject({ name: 'mine', status: 'active' });
  });

  it('a clone is a copy: changing it leaves the template as it was', () => {
    const body = templateBody('email_gender_segment', {});
    (body.steps as { id: string }[])[0]!.id = 'changed';
    expect(WORKFLOW_TEMPLATES[0]!.steps[0]!.id).toBe('lookup');
  });

  it('an unknown template is not_found (404)', () => {
    expect(() => templateBody('nope', {})).toThrow(expect.objectContaining({ code: 'not_found', statusCode: 404 }));
  });
});
