/**
 * Bad and edge inputs derived from an OpenAPI document (issue 27, item 10): for each operation, a
 * body built from its schema and that body broken one way at a time (a wrong type, a huge value, a
 * NUL, unicode, a field missing, a field added, not an object at all), and the same for its query
 * parameters. Deterministic: a failure names the exact request, and a rerun sends the same ones.
 */
/* eslint-disable @typescript-eslint/no-explicit-any -- the document is plain JSON */

export interface FuzzCase {
  /** What was done to the input, for the failure message. */
  name: string;
  query?: Record<string, string>;
  /** Sent as JSON when set (undefined: no body). */
  body?: unknown;
  /** Headers sent besides (or instead of) the caller's key. */
  headers?: Record<string, string>;
  /** A body sent as it is, with its content type. */
  raw?: { payload: string; contentType: string };
}

const HUGE_STRING = 'x'.repeat(20_000);
const UNICODE = 'é漢🙂\u202e\u200b';
/** Values of every other JSON type than the one a schema asks for, and the edges of each. */
const WRONG_VALUES: Array<[string, unknown]> = [
  ['null', null],
  ['a number', 123],
  ['a huge number', 1e308],
  ['2^64', 2 ** 64],
  ['a negative number', -1],
  ['a fraction', 0.5],
  ['a string', 'x'],
  ['an empty string', ''],
  ['a huge string', HUGE_STRING],
  ['a NUL', 'a\u0000b'],
  ['unicode', UNICODE],
  ['true', true],
  ['an object', { a: 1 }],
  ['an array', ['x', 1]],
];

export class SchemaSampler {
  constructor(private readonly doc: any) {}

  /** Follows `$ref`, merges `allOf`, takes the first of `oneOf` / `anyOf`. */
  resolve(schema: any, depth = 0): any {
    if (!schema || typeof schema !== 'object' || depth > 10) return schema ?? {};
    if (schema.$ref) return this.resolve(schema.$ref.split('/').slice(1).reduce((v: any, k: string) => v?.[k], this.doc), depth + 1);
    if (Array.isArray(schema.allOf)) {
      const parts = schema.allOf.map((s: any) => this.resolve(s, depth + 1));
      return {
        type: 'object',
        required: parts.flatMap((p: any) => p.required ?? []),
        properties: Object.assign({}, ...parts.map((p: any) => p.properties ?? {})),
      };
    }
    const first = schema.oneOf?.[0] ?? schema.anyOf?.[0];
    return first ? this.resolve(first, depth + 1) : schema;
  }

  /** A value the schema accepts, as small as it allows: what the broken inputs start from. */
  sample(schema: any, depth = 0): unknown {
    const s = this.resolve(schema);
    if (s.default !== undefined) return s.default;
    if (Array.isArray(s.enum)) return s.enum[0];
    if (s.const !== undefined) return s.const;
    const type = Array.isArray(s.type) ? s.type.find((t: string) => t !== 'null') : s.type;
    switch (type) {
      case 'string':
        if (s.format === 'date-time') return new Date(Date.now() + 86_400_000).toISOString();
        if (s.format === 'uuid') return '00000000-0000-4000-8000-000000000000';
        return 'x'.repeat(Math.max(1, s.minLength ?? 1));
      case 'integer':
        return s.minimum ?? 1;
      case 'number':
        return s.minimum ?? 0.5;
      case 'boolean':
        return true;
      case 'array':
        return depth > 4 ? [] : Array.from({ length: Math.max(1, s.minItems ?? 1) }, () => this.sample(s.items ?? { type: 'string' }, depth + 1));
      case 'object':
      case undefined: {
        if (depth > 4 || !s.properties) return {};
        return Object.fromEntries(Object.entries<any>(s.properties).map(([k, v]) => [k, this.sample(v, depth + 1)]));
      }
      default:
        return null;
    }
  }

  /** The JSON body of `op` broken one way at a time, after the sample itself. */
  bodyCases(op: any): FuzzCase[] {
    const schema = op.requestBody?.content?.['application/json']?.schema;
    if (!schema) return [{ name: 'an unexpected JSON body', body: { unexpected: UNICODE } }, { name: 'a body that is not JSON', raw: { payload: '{"a":', contentType: 'application/json' } }];
    const s = this.resolve(schema);
    const base = this.sample(s);
    const cases: FuzzCase[] = [{ name: 'the sample body', body: base }];
    if (base && typeof base === 'object' && !Array.isArray(base)) {
      for (const prop of Object.keys(s.properties ?? {})) {
        for (const [what, value] of WRONG_VALUES) cases.push({ name: `${prop}: ${what}`, body: { ...(base as object), [prop]: value } });
        cases.push({ name: `${prop} missing`, body: Object.fromEntries(Object.entries(base as object).filter(([k]) => k !== prop)) });
      }
      cases.push({ name: 'an extra field', body: { ...(base as object), extra_field: UNICODE } });
      cases.push({ name: 'a __proto__ field', raw: { payload: `{"__proto__":{"role":"admin"},${JSON.stringify(base).slice(1)}`, contentType: 'application/json' } });
      cases.push({ name: 'an empty object', body: {} });
    }
    cases.push({ name: 'a nested body 500 deep', raw: { payload: '{"a":'.repeat(500) + '1' + '}'.repeat(500), contentType: 'application/json' } });
    for (const [what, value] of [['an array', [base]], ['a string', 'x'], ['a number', 7], ['null', null]] as const) {
      cases.push({ name: `the body is ${what}`, raw: { payload: JSON.stringify(value), contentType: 'application/json' } });
    }
    cases.push({ name: 'malformed JSON', raw: { payload: '{"a":', contentType: 'application/json' } });
    cases.push({ name: 'a text/plain body', raw: { payload: UNICODE, contentType: 'text/plain' } });
    cases.push({ name: 'a form-encoded body', raw: { payload: 'a=1', contentType: 'application/x-www-form-urlencoded' } });
    return cases;
  }

  /** Each query parameter of `op` given a bad or edge value, one at a time, and an unknown one. */
  queryCases(op: any): FuzzCase[] {
    const params = (op.parameters ?? []).filter((p: any) => p.in === 'query');
    const cases: FuzzCase[] = [{ name: 'an unknown query parameter', query: { zz_unknown: UNICODE } }];
    for (const p of params) {
      for (const value of ['abc', '9'.repeat(30), '-1', '', '0', '1.5', UNICODE, 'a\u0000b', 'x'.repeat(5_000), 'true']) {
        cases.push({ name: `query ${p.name}=${JSON.stringify(value.slice(0, 20))}`, query: { [p.name]: value } });
      }
    }
    return cases;
  }
}

/** Each header parameter of `op` given an edge value, and an Authorization that is not a Bearer key. */
export function headerCases(op: any): FuzzCase[] {
  const params = (op.parameters ?? []).filter((p: any) => p.in === 'header');
  const cases: FuzzCase[] = [
    { name: 'Basic authorization', headers: { authorization: 'Basic YTpi' } },
    { name: 'a Bearer with two tokens', headers: { authorization: 'Bearer a b' } },
  ];
  for (const p of params) {
    for (const value of ['', ' ', 'x'.repeat(300), 'ü\u00ff', '"quoted"']) cases.push({ name: `header ${p.name}=${JSON.stringify(value.slice(0, 20))}`, headers: { [p.name]: value } });
  }
  return cases;
}

/** Values a path parameter is given besides real ids: none of them names anything. */
export const PATH_VALUES = ['x', '0', '-1', '9'.repeat(40), encodeURIComponent(UNICODE), '..%2F..%2Fetc', 'null', '%20'];
