import { describe, expect, it } from 'vitest';
import { checkExpression, DEFAULT_BUDGET, evaluate } from './expression.js';

describe('workflow expressions', () => {
  const data = { input: { n: 4, email: 'Ann@Example.com', tags: ['a', 'b'] }, steps: { s1: { output: { gender: 'female', score: 0.9 } } } };

  it('evaluates the json-logic subset against JSON data', () => {
    expect(evaluate({ '==': [{ var: 'steps.s1.output.gender' }, 'female'] }, data)).toBe(true);
    expect(evaluate({ and: [{ '>': [{ var: 'input.n' }, 3] }, { in: ['b', { var: 'input.tags' }] }] }, data)).toBe(true);
    expect(evaluate({ if: [{ '<': [{ var: 'input.n' }, 2] }, 'small', 'large'] }, data)).toBe('large');
    expect(evaluate({ object: { who: { lower: { var: 'input.email' } }, double: { '*': [{ var: 'input.n' }, 2] } } }, data)).toEqual({ who: 'ann@example.com', double: 8 });
    expect(evaluate({ map: [{ var: 'input.tags' }, { upper: { var: '' } }] }, data)).toEqual(['A', 'B']);
    expect(evaluate({ var: ['input.missing', 'fallback'] }, data)).toBe('fallback');
    expect(evaluate({ '/': [1, 0] }, data)).toBeNull();
  });

  it('reads own properties only: no path reaches a prototype', () => {
    expect(evaluate({ var: 'input.email.length' }, data)).toBeNull();
    expect(evaluate({ var: 'input.tags.toString' }, data)).toBeNull();
    expect(() => checkExpression({ var: 'input.__proto__' })).toThrow(expect.objectContaining({ code: 'invalid_reference' }));
    expect(() => checkExpression({ var: 'input.constructor.prototype' })).toThrow(expect.objectContaining({ code: 'invalid_reference' }));
    expect(() => checkExpression({ object: { __proto__x: 1, ['constructor']: 2 } })).toThrow(expect.objectContaining({ code: 'invalid_reference' }));
  });

  it('refuses unknown operators, wrong arities and too deep nesting at save', () => {
    expect(() => checkExpression({ eval: 'process.exit()' })).toThrow(expect.objectContaining({ code: 'invalid_expression' }));
    expect(() => checkExpression({ '==': [1] })).toThrow(expect.objectContaining({ code: 'invalid_expression' }));
    expect(() => checkExpression({ a: 1, b: 2 })).toThrow(expect.objectContaining({ code: 'invalid_expression' }));
    let deep: unknown = 1;
    for (let i = 0; i < DEFAULT_BUDGET.maxDepth + 2; i++) deep = { '!': deep };
    expect(() => checkExpression(deep)).toThrow(expect.objectContaining({ code: 'invalid_expression' }));
    expect(checkExpression({ map: [{ var: 'input.tags' }, { var: 'x' }] })).toEqual(['input.tags']);
  });

  it('cuts off an expression built to run forever, by operations and by time', () => {
    const forever = { map: [{ range: [0, 10_000] }, { map: [{ range: [0, 10_000] }, { '+': [1, 1] }] }] };
    const began = performance.now();
    expect(() => evaluate(forever, data)).toThrow(expect.objectContaining({ code: 'expression_budget_exceeded' }));
    expect(performance.now() - began).toBeLessThan(1_000);
    let t = 0;
    const slowClock = () => (t += 10);
    expect(() => evaluate(forever, data, { ...DEFAULT_BUDGET, maxOps: 1e12 }, slowClock)).toThrow(expect.objectContaining({ details: { budget: 'time' } }));
    expect(() => evaluate({ range: [0, 1e9] }, data)).toThrow(expect.objectContaining({ code: 'expression_budget_exceeded' }));
    const doubling = { cat: [{ cat: [{ map: [{ range: [0, 9000] }, 'xxxxxxxxxx'] }] }] };
    expect(() => evaluate(doubling, data)).toThrow(expect.objectContaining({ details: { budget: 'string length' } }));
  });
});
