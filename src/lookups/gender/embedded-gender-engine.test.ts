import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { EmbeddedGenderEngine, estimateGender, genderOfFirstName, type GenderResult, type ListVote } from './embedded-gender-engine.js';

const M = (country: string | null = null): ListVote => ({ gender: 'male', country });
const F = (country: string | null = null): ListVote => ({ gender: 'female', country });

describe('estimateGender', () => {
  const cases: [name: string, votes: ListVote[], result: GenderResult][] = [
    ['no list', [], { gender: 'unknown', country: null, probability: 0 }],
    ['one country list', [F('IT')], { gender: 'female', country: 'IT', probability: 67 }],
    ['only the English list, which names no country', [M(null)], { gender: 'male', country: null, probability: 67 }],
    ['two agreeing lists: no single country', [M(null), M('DE')], { gender: 'male', country: null, probability: 75 }],
    ['all six agree', [M(), M('IT'), M('ES'), M('FR'), M('DE'), M('TR')], { gender: 'male', country: null, probability: 88 }],
    ['three of five', [F(), M('IT'), F('ES'), M('FR'), F('DE')], { gender: 'female', country: null, probability: 57 }],
    ['four of five', [M(), M('IT'), M('ES'), F('FR'), M('DE')], { gender: 'male', country: null, probability: 71 }],
    ['a tie', [M(), F('FR')], { gender: 'unknown', country: null, probability: 0 }],
    ['a two-two tie', [M(), M('IT'), F('ES'), F('FR')], { gender: 'unknown', country: null, probability: 0 }],
  ];
  it.each(cases)('%s', (_name, votes, result) => {
    expect(estimateGender(votes)).toEqual(result);
  });
});

/** The package's raw lists, read independently of the engine, to check it against the data. */
function rawVotes(name: string): string[] {
  const require = createRequire(import.meta.url);
  return ['en', 'it', 'es', 'fr', 'de', 'tr'].flatMap((lang) => {
    const list = require(`gender-detection-from-name/names/${lang}.js`) as Map<string, string>;
    const gender = list.get(name);
    return gender === undefined ? [] : [`${lang}:${gender}`];
  });
}

describe('EmbeddedGenderEngine with the real data', () => {
  const engine = new EmbeddedGenderEngine();

  it('describes itself as the embedded gender provider', () => {
    expect(engine.kind).toBe('gender');
    expect(engine.name).toBe('embedded-gender');
    expect(engine.maxBatch).toBeGreaterThanOrEqual(10_000);
  });

  it('john is male by all five lists that have it', async () => {
    expect(rawVotes('john')).toEqual(['en:male', 'it:male', 'es:male', 'fr:male', 'de:male']);
    const [outcome] = await engine.lookup(['john.smith@example.com']);
    expect(outcome).toEqual({ ok: true, result: { gender: 'male', country: null, probability: 86 } });
  });

  it('maria is female', async () => {
    const [outcome] = await engine.lookup(['maria.rossi@example.it']);
    expect(outcome).toMatchObject({ ok: true, result: { gender: 'female' } });
    expect(outcome?.ok && outcome.result.probability).toBeGreaterThan(50);
  });

  it('andrea, male in Italy and female elsewhere, goes with the majority at a low probability', () => {
    expect(rawVotes('andrea')).toEqual(['en:female', 'it:male', 'es:female', 'fr:male', 'de:female']);
    expect(genderOfFirstName('andrea')).toEqual({ gender: 'female', country: null, probability: 57 });
  });

  it('a tie between lists is unknown', () => {
    expect(rawVotes('alex')).toEqual(['en:male', 'it:male', 'es:female', 'fr:female']);
    expect(genderOfFirstName('alex')).toEqual({ gender: 'unknown', country: null, probability: 0 });
  });

  it('a name only one country list has carries that country', () => {
    expect(rawVotes('borja')).toEqual(['es:male']);
    expect(genderOfFirstName('borja')).toEqual({ gender: 'male', country: 'ES', probability: 67 });
    expect(rawVotes('ayberk')).toEqual(['tr:male']);
    expect(genderOfFirstName('ayberk')).toEqual({ gender: 'male', country: 'TR', probability: 67 });
  });

  it('an accented spelling counts for the plain one', async () => {
    expect(rawVotes('llorenç')).toEqual(['es:male']);
    expect(rawVotes('llorenc')).toEqual([]);
    expect(genderOfFirstName('llorenc')).toEqual({ gender: 'male', country: 'ES', probability: 67 });
    const [outcome] = await engine.lookup(['llorenc.puig@example.es']);
    expect(outcome).toMatchObject({ ok: true, result: { gender: 'male', country: 'ES' } });
  });

  const unknowns: [key: string][] = [
    ['zzyzxq@example.com'],
    ['info@example.com'],
    ['j.smith@example.com'],
    ['12345@example.com'],
    ['de.silva@example.com'],
  ];
  it.each(unknowns)('%s is unknown with probability 0', async (key) => {
    const [outcome] = await engine.lookup([key]);
    expect(outcome).toEqual({ ok: true, result: { gender: 'unknown', country: null, probability: 0 } });
  });

  it('answers a batch in order, one outcome per key', async () => {
    const keys = ['anna@x.com', 'info@x.com', 'marco@x.com', 'anna@x.com'];
    const outcomes = await engine.lookup(keys);
    expect(outcomes.map((o) => (o.ok ? o.result.gender : o.code))).toEqual(['female', 'unknown', 'male', 'female']);
  });

  it('a full batch of 10,000 keys is cheap', async () => {
    const keys = Array.from({ length: 10_000 }, (_, i) => `name${i}.${i % 2 ? 'john' : 'maria'}@example.com`);
    await engine.lookup(keys);
    const started = performance.now();
    const outcomes = await engine.lookup(keys);
    expect(outcomes).toHaveLength(10_000);
    expect(performance.now() - started).toBeLessThan(200);
  });

  it('refuses to start when the signal has aborted', async () => {
    await expect(() => engine.lookup(['john@x.com'], AbortSignal.abort(new Error('stop')))).rejects.toThrow('stop');
  });
});
