import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';

/**
 * What Prism's validating proxy checks of a request, built on the same document: the operation
 * exists for the path and method, required parameters are there and their values fit their
 * schemas, and the body's media type is one the operation takes, with a JSON body (or a form's
 * fields) matching its schema. Each violation names the operation.
 */
export interface OutgoingRequest {
  method: string;
  /** The concrete path, without the query: `/api/jobs/4f6c...`. */
  path: string;
  query: Record<string, string>;
  headers: Record<string, string>;
  /** The media type sent, without parameters. */
  contentType?: string;
  json?: unknown;
  /** A multipart form's fields (repeated fields as arrays) and the names of its file parts. */
  form?: { fields: Record<string, string | string[]>; files: string[] };
}

/* eslint-disable @typescript-eslint/no-explicit-any -- the document is plain JSON */
export class OpenApiRequestCheck {
  private readonly ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: false, coerceTypes: false });
  private readonly compiled = new Map<string, ValidateFunction>();
  private readonly templates: { template: string; pattern: RegExp; names: string[] }[];

  constructor(private readonly doc: any) {
    // Literal paths before templated ones, as routers match (`/api/webhooks/deliveries` before `/api/webhooks/{id}`).
    this.templates = Object.keys(doc.paths)
      .sort((a, b) => (a.match(/\{/g)?.length ?? 0) - (b.match(/\{/g)?.length ?? 0))
      .map((template) => {
        const names = [...template.matchAll(/\{(\w+)\}/g)].map((m) => m[1]!);
        const pattern = new RegExp(`^${template.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\\?\{\w+\\?\}/g, '([^/]+)').replace(/\{\w+\}/g, '([^/]+)')}$`);
        return { template, pattern, names };
      });
  }

  /** The operation's `METHOD /template`, or undefined when the document has none for this request. */
  operationKey(method: string, path: string): { key: string; template: string; params: Record<string, string> } | undefined {
    for (const { template, pattern, names } of this.templates) {
      const match = pattern.exec(path);
      if (!match || !this.doc.paths[template][method.toLowerCase()]) continue;
      return { key: `${method.toUpperCase()} ${template}`, template, params: Object.fromEntries(names.map((n, i) => [n, decodeURIComponent(match[i + 1]!)])) };
    }
    return undefined;
  }

  check(request: OutgoingRequest): string[] {
    const found = this.operationKey(request.method, request.path);
    if (!found) return [`${request.method} ${request.path}: no operation in the document matches`];
    const op = this.doc.paths[found.template][request.method.toLowerCase()];
    const problems: string[] = [];
    const headers = Object.fromEntries(Object.entries(request.headers).map(([k, v]) => [k.toLowerCase(), v]));
    for (const p of op.parameters ?? []) {
      const value = p.in === 'path' ? found.params[p.name] : p.in === 'query' ? request.query[p.name] : p.in === 'header' ? headers[p.name.toLowerCase()] : undefined;
      if (value === undefined) {
        if (p.required) problems.push(`${found.key}: required ${p.in} parameter ${p.name} is missing`);
        continue;
      }
      const typed = coerce(value, p.schema);
      if (!this.validator(`${found.key} ${p.in} ${p.name}`, p.schema)(typed)) problems.push(`${found.key}: ${p.in} parameter ${p.name}=${value} does not fit ${JSON.stringify(p.schema)}`);
    }
    for (const name of Object.keys(request.query)) {
      if (!(op.parameters ?? []).some((p: any) => p.in === 'query' && p.name === name)) problems.push(`${found.key}: query parameter ${name} is not in the document`);
    }
    const body = op.requestBody;
    const sends = request.contentType !== undefined;
    if (!sends) {
      if (body?.required) problems.push(`${found.key}: the document requires a body`);
      return problems;
    }
    const media = body?.content?.[request.contentType!];
    if (!media) return [...problems, `${found.key}: a ${request.contentType} body, but the document takes ${Object.keys(body?.content ?? {}).join(', ') || 'no body'}`];
    if (request.contentType === 'application/json') {
      const validate = this.validator(`${found.key} body`, media.schema ?? {});
      if (!validate(request.json)) problems.push(`${found.key}: the JSON body does not fit the document: ${this.ajv.errorsText(validate.errors)}`);
    } else if (request.contentType === 'multipart/form-data' && request.form) {
      const form: Record<string, unknown> = { ...request.form.fields };
      for (const file of request.form.files) form[file] = 'file';
      const validate = this.validator(`${found.key} form`, media.schema ?? {});
      if (!validate(form)) problems.push(`${found.key}: the form does not fit the document: ${this.ajv.errorsText(validate.errors)}`);
      const known = Object.keys(media.schema?.properties ?? {});
      for (const name of Object.keys(form)) if (!known.includes(name)) problems.push(`${found.key}: form field ${name} is not in the document`);
    }
    return problems;
  }

  private validator(key: string, schema: unknown): ValidateFunction {
    let validate = this.compiled.get(key);
    if (!validate) {
      validate = this.ajv.compile({ allOf: [schema], components: this.doc.components });
      this.compiled.set(key, validate);
    }
    return validate;
  }
}

/** A parameter arrives as text; its schema's type says what the text stands for. */
function coerce(value: string, schema: any): unknown {
  const types: string[] = [schema?.type ?? []].flat();
  if ((types.includes('integer') || types.includes('number')) && value.trim() !== '' && !Number.isNaN(Number(value))) return Number(value);
  if (types.includes('boolean') && (value === 'true' || value === 'false')) return value === 'true';
  return value;
}
