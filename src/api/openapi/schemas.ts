/**
 * Schemas of the success bodies that the routes build by hand (views, envelopes), for the document
 * only: they are not given to Fastify as response schemas, whose serializer would drop every field
 * not listed. The API suites check every body they receive against them (test/support).
 */
const str = { type: 'string' } as const;
const int = { type: 'integer' } as const;
const nullable = (type: string) => ({ type: [type, 'null'] });
const object = (required: string[], properties: Record<string, unknown>, description?: string) => ({
  type: 'object',
  ...(description ? { description } : {}),
  required,
  properties,
});

export const SCHEMAS = {
  Job: object(
    ['id', 'type', 'status', 'rows', 'percent', 'credits_used', 'created_at', 'stalled', 'download_link', 'downloads'],
    {
      id: str,
      type: { type: 'string', description: 'The lookup, or several joined by commas' },
      status: { type: 'string', enum: ['queued', 'running', 'paused', 'completed', 'failed', 'cancelled'] },
      reason: { ...nullable('string'), description: 'Why it paused or failed, such as insufficient_credits or no_key_column' },
      error_message: nullable('string'),
      input_name: nullable('string'),
      rows: object(['total', 'processed', 'found', 'invalid', 'duplicate', 'error'], {
        total: nullable('integer'),
        processed: int,
        found: int,
        invalid: int,
        duplicate: int,
        error: int,
      }),
      percent: { type: 'number' },
      credits_used: int,
      max_error_rate: nullable('number'),
      countries: { type: 'object', additionalProperties: int, description: 'Phone jobs: numbers per country' },
      country_overrides: int,
      created_at: { type: 'string', format: 'date-time' },
      started_at: nullable('string'),
      finished_at: nullable('string'),
      stalled: { type: 'boolean', description: 'Running, but no live worker holds any of its work' },
      stalled_since: nullable('string'),
      last_progress_at: nullable('string'),
      rows_per_second: nullable('number'),
      eta_seconds: nullable('integer'),
      download_link: { type: 'boolean' },
      downloads: { type: ['object', 'null'], additionalProperties: str, description: 'Completed jobs: the download path per filter' },
      deleted_at: { ...nullable('string'), description: 'In lists: when the job was deleted (its files are gone, its reads answer 410); null otherwise' },
    },
    'A bulk job with its progress',
  ),
  Webhook: object(['id', 'url', 'events', 'is_active', 'kind', 'created_at', 'updated_at'], {
    id: str,
    url: nullable('string'),
    events: { type: 'array', items: str },
    description: nullable('string'),
    is_active: { type: 'boolean' },
    kind: str,
    telegram_chat_id: nullable('string'),
    signing_secret: { type: 'string', description: 'Only to an admin key' },
    previous_secret_valid_until: { type: 'string', description: 'Only to an admin key, during a rotation\'s overlap: until then deliveries are also signed with the previous secret' },
    created_at: str,
    updated_at: str,
  }),
  Delivery: object(['id', 'webhook_id', 'event_type', 'status', 'attempts', 'created_at'], {
    id: str,
    webhook_id: str,
    event_type: str,
    message_id: str,
    payload: {},
    status: str,
    attempts: int,
    response_status: nullable('integer'),
    response_body: nullable('string'),
    error_code: nullable('string'),
    last_attempt_at: nullable('string'),
    next_attempt_at: nullable('string'),
    created_at: str,
  }),
  ApiKey: object(['id', 'name', 'key_prefix', 'is_active', 'role'], {
    id: str,
    name: str,
    key_prefix: str,
    is_active: { type: 'boolean' },
    role: { type: 'string', enum: ['admin', 'tech', 'readonly'] },
    expires_at: { ...nullable('string'), description: 'When the key stops working: chosen at creation, or the end of a roll\'s grace period' },
    replaced_by: { ...nullable('string'), description: 'The key a roll made in this one\'s place' },
  }),
  Message: object(['message'], { message: str }),
  Status: object(['status'], { status: str }),
} as const;

export type SchemaName = keyof typeof SCHEMAS;
export const ref = (name: SchemaName | string) => ({ $ref: `#/components/schemas/${name}` });

/** The `{success: true, result, message}` envelope of the webhook routes (spec 7). */
export function webhookEnvelope(result: unknown) {
  return object(['success', 'result', 'message'], { success: { type: 'boolean', enum: [true] }, result, message: str });
}

export { object, nullable, str, int };
