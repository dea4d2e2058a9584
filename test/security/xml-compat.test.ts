// s3rver 3.7.1 parses request XML with fast-xml-parser 3.x; 3.21.1 lets a tag named __proto__
// become a parsed object's prototype (GHSA-x3cc-x39p-42qx). vendor/fast-xml-parser-v3-compat
// answers the same calls on fast-xml-parser 5. These tests hold it to what 3.21.1 returned for
// every call shape s3rver makes (golden.json, recorded from the real 3.21.1), and to refusing
// the documents where 3.21.1's answer was the vulnerability.
import { createRequire } from 'node:module';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const require = createRequire(import.meta.url);
const s3rverDir = path.dirname(require.resolve('s3rver/package.json'));
// The copy s3rver itself resolves, so the override is what is under test.
const fromS3rver = (name: string) => require(require.resolve(name, { paths: [s3rverDir] }));
const xmlParser = fromS3rver('fast-xml-parser');
const xmlParserPackage = fromS3rver('fast-xml-parser/package.json') as { version: string };
const he = fromS3rver('he');
const corpus = require('../fixtures/fast-xml-parser-v3/corpus.cjs');
const golden = require('../fixtures/fast-xml-parser-v3/golden.json') as {
  recordedWith: string;
  cases: { shape: string; input: unknown; space?: number | null; result: { value?: unknown; throws?: string } }[];
};

describe('fast-xml-parser 3.x compatibility under s3rver', () => {
  it('is the local compat package, not fast-xml-parser 3.21.1', () => {
    expect(xmlParserPackage.version).toBe('3.21.1-sluice.1');
    expect(golden.recordedWith).toBe('fast-xml-parser@3.21.1');
  });

  // s3rver reads validate() only as `=== true` (then answers its own MalformedXML), so for validate
  // the verdict is compared; the error text of a malformed document is fast-xml-parser 5's.
  const comparable = (c: (typeof golden.cases)[number]) =>
    c.shape === 'validate' ? { ...c, result: { valid: c.result.value === true } } : c;

  it('gives what 3.21.1 gave for every recorded call', () => {
    const actual = corpus.runCorpus(xmlParser, he) as typeof golden.cases;
    expect(actual.length).toBe(golden.cases.length);
    const lax = new Set(corpus.laxIn3 as string[]);
    const mismatches = actual
      .map((got, i) => ({ got: comparable(got), want: comparable(golden.cases[i]!) }))
      .filter(({ got }) => !(got.shape === 'validate' && lax.has(got.input as string)))
      .filter(({ got, want }) => JSON.stringify(got) !== JSON.stringify(want));
    expect(mismatches).toEqual([]);
  });

  it('calls malformed what 3.21.1 let through: anything after the root element', () => {
    const byInput = new Map(golden.cases.filter((c) => c.shape === 'validate').map((c) => [c.input, c.result.value]));
    for (const xml of corpus.laxIn3 as string[]) {
      expect(byInput.get(xml)).toBe(true);
      expect(xmlParser.validate(xml)).not.toBe(true);
    }
  });

  it('refuses tag names that reach a prototype (__proto__, constructor, prototype) instead of parsing them', () => {
    const call = corpus.callShapes(xmlParser, he);
    const tagCases = (corpus.dangerous as string[]).filter((xml) => !xml.includes('__proto__="'));
    expect(tagCases).toHaveLength(4);
    for (const xml of tagCases) {
      expect(call.validate(xml)).not.toBe(true);
      expect(() => call.parseBody(xml)).toThrow(/__proto__|constructor|prototype/);
      expect(() => call.parseConfig(xml)).toThrow(/__proto__|constructor|prototype/);
      expect(() => call.rootTag(xml)).toThrow(/__proto__|constructor|prototype/);
    }
    // 3.21.1 made the <__proto__> element the prototype of the parsed <Delete>.
    const real = { Delete: Object.create({ Key: 'polluted' }) };
    expect(real.Delete.Key).toBe('polluted');
  });

  it('keeps an attribute named __proto__ as a prefixed own key, as 3.21.1 did', () => {
    const call = corpus.callShapes(xmlParser, he);
    const parsed = call.parseConfig((corpus.dangerous as string[]).find((xml) => xml.includes('__proto__="')));
    expect(Object.getPrototypeOf(parsed.Delete)).toBe(Object.prototype);
    expect(parsed.Delete['@___proto__']).toBe('x');
  });
});
