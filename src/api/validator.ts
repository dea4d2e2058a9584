import { Ajv, type Options } from 'ajv';
import type { FastifySchemaCompiler } from 'fastify';

const COMMON: Options = { allErrors: false, useDefaults: true, removeAdditional: false, strict: false };

/**
 * Query strings and path parameters arrive as text, so they are coerced (`limit=5` is a number);
 * JSON bodies are not: `{"name": 123}` is a wrong type and gets 422, not a key named "123".
 */
export function validatorCompiler(): FastifySchemaCompiler<unknown> {
  const strict = new Ajv({ ...COMMON, coerceTypes: false });
  const coercing = new Ajv({ ...COMMON, coerceTypes: 'array' });
  return ({ schema, httpPart }) => (httpPart === 'body' ? strict : coercing).compile(schema as object);
}
