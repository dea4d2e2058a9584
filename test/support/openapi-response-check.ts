import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';

/**
 * Checks one answer of the API against the OpenAPI document the app serves: the operation is in
 * the document, the status is listed for it, the media type is listed for that status, and a JSON
 * body matches the schema. Each violation names the route and what is missing, so that whoever
 * adds a route (or a status, or a field) learns where the document must say so.
 */
export interface Answer {
  method: string;
  /** The route's template as Fastify has it: `/api/jobs/:id`. */
  route: string;
  status: number;
  contentType: string | undefined;
  /** The body as sent; undefined for a stream or no body. */
  body: string | undefined;
}

/* eslint-disable @typescript-eslint/no-explicit-any -- the document is plain JSON */
export class OpenApiResponseCheck {
  private readonly ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: false });
  private readonly compiled = new Map<string, ValidateFunction>();

  constructor(private readonly doc: any) {}

  /** `/api/jobs/:id` as the document writes it: `/api/jobs/{id}`. */
  static templateOf(route: string): string {
    return route.replace(/:(\w+)/g, '{$1}');
  }

  operation(method: string, route: string): any {
    return this.doc.paths?.[OpenApiResponseCheck.templateOf(route)]?.[method.toLowerCase()];
  }

  check(answer: Answer): string[] {
    const where = `${answer.method} ${OpenApiResponseCheck.templateOf(answer.route)}`;
    const op = this.operation(answer.method, answer.route);
    if (!op) return [`${where}: the route answered ${answer.status} but the operation is not in the OpenAPI document (add it, or hide the route with schema.hide)`];
    const missing = ['operationId', 'summary', 'tags'].filter((field) => op[field] === undefined);
    const problems = missing.length > 0 ? [`${where}: the operation has no ${missing.join(', ')} (give them in the route's schema or in src/api/openapi/operation-catalog.ts)`] : [];
    const status = String(answer.status);
    const response = op.responses?.[status] ?? op.responses?.[`${status[0]}XX`] ?? op.responses?.default;
    if (!response) {
      return [...problems, `${where}: answered ${status}, which the document does not list (it lists ${Object.keys(op.responses ?? {}).join(', ')}); body: ${(answer.body ?? '').slice(0, 200)}`];
    }
    const mediaType = answer.contentType?.split(';')[0]?.trim().toLowerCase();
    const hasBody = answer.body === undefined ? mediaType !== undefined : answer.body.length > 0;
    if (!hasBody) return problems;
    const content = response.content ?? {};
    if (mediaType === undefined || content[mediaType] === undefined) {
      return [...problems, `${where} ${status}: answered with media type ${mediaType ?? '(none)'}, the document lists ${Object.keys(content).join(', ') || 'no body'}`];
    }
    const schema = content[mediaType].schema;
    if (schema === undefined) return [...problems, `${where} ${status} ${mediaType}: the document gives no schema for the body`];
    if (mediaType !== 'application/json' || answer.body === undefined) return problems;
    const validate = this.validator(`${where} ${status}`, schema);
    let body: unknown;
    try {
      body = JSON.parse(answer.body);
    } catch {
      return [...problems, `${where} ${status}: the body is not JSON although the media type is`];
    }
    if (!validate(body)) {
      const errors = (validate.errors ?? []).map((e) => `${e.instancePath || '/'} ${e.message}`).join('; ');
      problems.push(`${where} ${status}: the body does not match the document's schema: ${errors}; body: ${answer.body.slice(0, 300)}`);
    }
    return problems;
  }

  private validator(key: string, schema: unknown): ValidateFunction {
    let validate = this.compiled.get(key);
    if (!validate) {
      // Local `#/components/...` references resolve against this root, which carries the document's components.
      validate = this.ajv.compile({ allOf: [schema], components: this.doc.components });
      this.compiled.set(key, validate);
    }
    return validate;
  }
}
