/**
 * A corpus of real requests, one or more per operation of the API, in the order a client makes
 * them (later requests use ids that earlier answers gave: `{job}` is filled from a `capture`).
 * test/api/openapi-contract.test.ts replays it and checks every request and every answer against
 * the document, as Prism's validating proxy would; `status` is what each request is for.
 */
export type Caller = 'key' | 'session' | 'none';

export interface CorpusRequest {
  name: string;
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  path: string;
  query?: Record<string, string>;
  headers?: Record<string, string>;
  json?: unknown;
  form?: { fields: [string, string][]; file?: { name: string; content: string } };
  as?: Caller;
  status: number;
  /** Names for values of the answer's JSON, by dotted path (`result.id`, `0.id`). */
  capture?: Record<string, string>;
}

/** Steps that are not requests: run the worker over the jobs so far, or record a finished monitor run. */
export type CorpusStep = CorpusRequest | { action: 'work' } | { action: 'seed-run' };

const CSV = 'email,name\nanna.schmidt@example.com,Anna\njohn.smith@example.org,John\nnot-an-email,Nobody\n';

export const CORPUS: CorpusStep[] = [
  { name: 'liveness', method: 'GET', path: '/healthz', as: 'none', status: 200 },
  { name: 'readiness', method: 'GET', path: '/readyz', as: 'none', status: 200 },
  { name: 'log in', method: 'POST', path: '/api/auth/login', as: 'none', json: { email: '{email}', password: '{password}' }, status: 200, capture: { session: 'token' } },
  { name: 'a key from the session', method: 'POST', path: '/api/keys', as: 'session', json: { name: 'from a session' }, status: 200 },
  { name: 'the account', method: 'GET', path: '/api/account', status: 200 },
  { name: 'set a credit alert', method: 'PUT', path: '/api/account/credit-alert', json: { threshold: 500 }, status: 200 },
  { name: 'the credit alert', method: 'GET', path: '/api/account/credit-alert', status: 200 },
  { name: 'a tech key', method: 'POST', path: '/api/account/keys', json: { name: 'ci', role: 'tech' }, status: 200, capture: { techKey: 'id' } },
  { name: 'the keys', method: 'GET', path: '/api/account/keys', status: 200 },
  { name: 'reveal the new key', method: 'GET', path: '/api/account/keys/reveal', query: { id: '{techKey}' }, status: 200 },
  { name: 'disable it', method: 'PATCH', path: '/api/account/keys', query: { id: '{techKey}', action: 'disable' }, status: 200 },
  { name: 'enable it', method: 'PATCH', path: '/api/account/keys', query: { id: '{techKey}', action: 'enable' }, status: 200 },
  { name: 'roll it, the old key working for an hour', method: 'POST', path: '/api/account/keys/roll', json: { id: '{techKey}', grace_seconds: 3600 }, status: 200, capture: { rolledKey: 'id' } },
  { name: 'roll it again', method: 'POST', path: '/api/account/keys/roll', json: { id: '{techKey}' }, status: 409 },
  { name: 'a key that would end more than 5 years on', method: 'POST', path: '/api/account/keys', json: { name: 'temporary', role: 'readonly', expires_at: '2099-01-01T00:00:00Z' }, status: 422 },
  { name: 'the audit log', method: 'GET', path: '/api/account/audit', query: { limit: '10' }, status: 200 },

  { name: 'estimate a job', method: 'POST', path: '/api/jobs/bulk', query: { dry_run: 'true' }, form: { fields: [['type', 'gender']], file: { name: 'file', content: CSV } }, status: 200 },
  {
    name: 'start a gender job',
    method: 'POST',
    path: '/api/jobs/bulk',
    headers: { 'Idempotency-Key': 'corpus-1' },
    form: { fields: [['type', 'gender'], ['download_link', 'true'], ['column', 'email']], file: { name: 'file', content: CSV } },
    status: 202,
    capture: { job: 'id' },
  },
  { name: 'the same upload again', method: 'POST', path: '/api/jobs/bulk', headers: { 'Idempotency-Key': 'corpus-1' }, form: { fields: [['type', 'gender'], ['download_link', 'true'], ['column', 'email']], file: { name: 'file', content: CSV } }, status: 202 },
  { name: 'a multi-lookup job', method: 'POST', path: '/api/jobs/bulk', form: { fields: [['type', 'gender,email_breaches']], file: { name: 'file', content: CSV } }, status: 202, capture: { multi: 'id' } },
  { name: 'a job by lookup fields', method: 'POST', path: '/api/jobs/bulk', form: { fields: [['lookup', 'gender:email'], ['excel', 'true'], ['delimiter', 'comma']], file: { name: 'file', content: CSV } }, status: 202 },
  { name: 'a queued job, not downloadable yet', method: 'GET', path: '/api/jobs/{job}/download', status: 409 },
  { name: 'the jobs', method: 'GET', path: '/api/jobs', status: 200 },
  { name: 'queued jobs', method: 'GET', path: '/api/jobs', query: { status: 'queued', limit: '5', offset: '0' }, status: 200 },
  { name: 'a job', method: 'GET', path: '/api/jobs/{job}', status: 200 },
  { action: 'work' },
  { name: 'the result', method: 'GET', path: '/api/jobs/{job}/download', status: 302 },
  { name: 'the found rows as a URL', method: 'GET', path: '/api/jobs/{job}/download', query: { filter: 'found', format: 'json' }, status: 200 },
  { name: 'partial of a completed job', method: 'GET', path: '/api/jobs/{job}/download', query: { partial: 'true' }, status: 302 },
  { name: 'retry failed rows when there are none', method: 'POST', path: '/api/jobs/{job}/retry-failed', status: 409 },
  { name: 'resume a completed job', method: 'POST', path: '/api/jobs/{job}/resume', status: 409 },
  { name: 'a job to cancel', method: 'POST', path: '/api/jobs/bulk', form: { fields: [['type', 'gender']], file: { name: 'file', content: CSV } }, status: 202, capture: { doomed: 'id' } },
  { name: 'the partial rows of a queued job', method: 'GET', path: '/api/jobs/{doomed}/download', query: { partial: 'true' }, status: 409 },
  { name: 'cancel it', method: 'POST', path: '/api/jobs/{doomed}/cancel', status: 200 },
  { name: 'delete a job', method: 'DELETE', path: '/api/jobs/{job}', status: 200 },
  { name: 'a deleted job', method: 'GET', path: '/api/jobs/{job}', status: 410 },

  { name: 'gender (older path)', method: 'POST', path: '/api/email/gender', json: { email: 'anna.schmidt@example.com' }, status: 200 },
  { name: 'gender', method: 'POST', path: '/api/lookup/email/gender', json: { email: 'john.smith@example.org' }, status: 200 },
  { name: 'email breaches', method: 'POST', path: '/api/lookup/email/breaches', json: { email: 'john.smith@example.org' }, status: 200 },
  // The email routes ask the loopback DNS, SMTP, RDAP and HTTPS fakes of test/support/enrich-world.ts;
  // the password routes the loopback range service of test/support/range-provider-fake.ts.
  { name: 'email validity', method: 'POST', path: '/api/lookup/email/validity', json: { email: 'ann@trust.test' }, status: 200 },
  { name: 'email validity of a malformed address (an answer, free)', method: 'POST', path: '/api/lookup/email/validity', json: { email: 'not-an-address' }, status: 200 },
  { name: 'email enrich report', method: 'POST', path: '/api/email/validity/enrich', json: { email: 'ann@trust.test' }, status: 200 },
  { name: 'email enrich report with a session', method: 'POST', path: '/api/email/validity/enrich', as: 'session', json: { email: 'ann@trust.test' }, status: 200 },
  { name: 'email compliance', method: 'POST', path: '/api/lookup/email/compliance', json: { email: 'ann@trust.test' }, status: 200 },
  { name: 'password breaches by password', method: 'POST', path: '/api/lookup/email/password/breaches', json: { password: 'P@ssw0rd' }, status: 200 },
  { name: 'password breaches by SHA-1', method: 'POST', path: '/api/lookup/email/password/breaches', json: { sha1: '21bd12dc183f740ee76f27b78eb39c8ad972a757' }, status: 200 },
  { name: 'a password range', method: 'GET', path: '/api/range/21BD1', status: 200 },
  { name: 'a password range, unpadded', method: 'GET', path: '/api/range/21bd1', headers: { 'Add-Padding': 'false' }, status: 200 },
  { name: 'exposed keys in text', method: 'POST', path: '/api/lookup/breaches/exposed-keys', json: { content: 'const token = "ghp_' + 'wWPw5k4aXcaT4fNP0UcnZwJUVFk6LO0pINUx";\n', type: 2, source: 'corpus' }, status: 200 },
  { name: 'no exposed keys in text', method: 'POST', path: '/api/lookup/breaches/exposed-keys', json: { content: 'nothing to see here\n' }, status: 200 },
  // No worker drives repository scans in the harness: the scan stays processing and nothing is cloned.
  { name: 'a repository scan', method: 'POST', path: '/api/lookup/breaches/github', json: { url: 'http://127.0.0.1:9/corpus/app.git', type: 0 }, status: 202, capture: { scan: 'result.scan_id' } },
  { name: 'the repository scan', method: 'GET', path: '/api/lookup/breaches/github/{scan}', status: 200 },
  { name: 'ip network', method: 'POST', path: '/api/agent/ip-network', json: { ip: '192.0.2.1' }, status: 200 },
  { name: 'bulk ip search', method: 'POST', path: '/api/bulk-ip-search', json: { queries: ['192.0.2.1', '2001:db8::1', 'not-an-ip'] }, status: 200 },
  { name: 'phone breaches', method: 'POST', path: '/api/agent/phone-breaches', json: { query: '+49 30 1234567' }, status: 200 },
  { name: 'a phone job from numbers', method: 'POST', path: '/api/phone-jobs', json: { feature: 'breaches', numbers: ['+49 30 1234567', '+1 415 555 2671'], download_link: true }, status: 202, capture: { phoneJob: 'id' } },
  { name: 'a phone job from a file', method: 'POST', path: '/api/phone-jobs', form: { fields: [['feature', 'breaches'], ['default_country', 'DE']], file: { name: 'file', content: 'phone\n030 1234567\n' } }, status: 202 },
  { name: 'the phone job', method: 'GET', path: '/api/phone-jobs', query: { id: '{phoneJob}' }, status: 200 },
  { name: 'resume a queued phone job', method: 'POST', path: '/api/phone-jobs/resume', query: { id: '{phoneJob}' }, status: 409 },
  { name: 'company search', method: 'POST', path: '/api/agent/company', json: { query: 'Acme GmbH' }, status: 200 },
  { name: 'bulk company search', method: 'POST', path: '/api/bulk-company-search', json: { queries: ['Acme GmbH', 'example.com'] }, status: 200 },
  // Names that are not domains: answered without a lookup, so no DNS is asked (the corpus has no DNS fake).
  { name: 'domain report of a non-domain', method: 'POST', path: '/api/agent/domain', json: { domain: 'not a domain' }, status: 400 },
  { name: 'bulk domain search of non-domains', method: 'POST', path: '/api/bulk-domain-search', json: { queries: ['not a domain', '10.0.0.1'] }, status: 200 },

  { name: 'a webhook', method: 'POST', path: '/api/webhooks', json: { url: '{receiver}', events: ['bulk.completed'], description: 'corpus' }, status: 200, capture: { webhook: 'result.id' } },
  { name: 'the webhooks', method: 'GET', path: '/api/webhooks', status: 200 },
  { name: 'the webhook', method: 'GET', path: '/api/webhooks/{webhook}', status: 200 },
  { name: 'change it', method: 'PUT', path: '/api/webhooks', json: { id: '{webhook}', url: '{receiver}', description: 'changed', events: ['bulk.completed', 'bulk.paused'] }, status: 200 },
  { name: 'test it', method: 'POST', path: '/api/webhooks/test', json: { id: '{webhook}' }, status: 200 },
  { name: 'rotate its secret', method: 'POST', path: '/api/webhooks/{webhook}/rotate-secret', json: { overlap_seconds: 600 }, status: 200 },
  { name: 'rotate it again, at once', method: 'POST', path: '/api/webhooks/{webhook}/rotate-secret', json: { overlap_seconds: 0 }, status: 200 },
  { name: 'its deliveries', method: 'GET', path: '/api/webhooks/deliveries', query: { webhook_id: '{webhook}' }, status: 200, capture: { delivery: '0.id' } },
  { name: 'redeliver a test delivery', method: 'POST', path: '/api/webhooks/deliveries/{delivery}/redeliver', status: 409 },
  { name: 'delete it', method: 'DELETE', path: '/api/webhooks/{webhook}', status: 200 },
  { name: 'another webhook', method: 'POST', path: '/api/webhooks', json: { url: '{receiver}', events: ['bulk.completed'] }, status: 200, capture: { webhook2: 'result.id' } },
  { name: 'delete it by body', method: 'DELETE', path: '/api/webhooks', json: { id: '{webhook2}' }, status: 200 },

  { name: 'a list', method: 'POST', path: '/api/lists', json: { name: 'staff', type: 'email', targets: ['anna.schmidt@example.com', 'john.smith@example.org'] }, status: 201, capture: { list: 'id' } },
  { name: 'a list from a CSV', method: 'POST', path: '/api/lists', form: { fields: [['name', 'phones'], ['type', 'phone'], ['default_country', 'DE']], file: { name: 'file', content: 'phone\n030 1234567\n' } }, status: 201, capture: { list2: 'id' } },
  { name: 'the lists', method: 'GET', path: '/api/lists', status: 200 },
  { name: 'email lists', method: 'GET', path: '/api/lists', query: { type: 'email' }, status: 200 },
  { name: 'the list', method: 'GET', path: '/api/lists/{list}', status: 200 },
  { name: 'a page of the list\'s targets', method: 'GET', path: '/api/lists/{list}/targets', query: { limit: '1', offset: '1' }, status: 200 },
  { name: 'a monitor', method: 'POST', path: '/api/monitors', json: { name: 'staff', type: 'email', frequency: 'weekly', list_id: '{list}' }, status: 201, capture: { monitor: 'id' } },
  { name: 'the monitors', method: 'GET', path: '/api/monitors', query: { limit: '10' }, status: 200 },
  { name: 'the monitor', method: 'GET', path: '/api/monitors/{monitor}', status: 200 },
  { name: 'rename it', method: 'PATCH', path: '/api/monitors/{monitor}', json: { name: 'all staff' }, status: 200 },
  { name: 'pause it', method: 'POST', path: '/api/monitors/{monitor}/pause', status: 200 },
  { name: 'resume it', method: 'POST', path: '/api/monitors/{monitor}/resume', status: 200 },
  { name: 'its targets', method: 'GET', path: '/api/monitors/{monitor}/targets', status: 200 },
  { name: 'add a target', method: 'POST', path: '/api/monitors/{monitor}/targets', json: { targets: ['jane.doe@example.net'] }, status: 200 },
  { name: 'remove it', method: 'DELETE', path: '/api/monitors/{monitor}/targets', json: { targets: ['jane.doe@example.net'] }, status: 200 },
  { name: 'run it now', method: 'POST', path: '/api/agent/monitors/{monitor}/run', status: 202 },
  { name: 'every monitored target', method: 'GET', path: '/api/monitoring/targets', status: 200 },
  { action: 'seed-run' },
  { name: 'a run\'s results', method: 'GET', path: '/api/monitors/{monitor}/runs/{run}/results', status: 200 },
  { name: 'its changes only', method: 'GET', path: '/api/monitors/{monitor}/runs/{run}/results', query: { changes_only: 'true' }, status: 200 },
  { name: 'its results as CSV', method: 'GET', path: '/api/monitors/{monitor}/runs/{run}/results/download', status: 200 },
  { name: 'the monitor\'s runs', method: 'GET', path: '/api/agent/monitors/{monitor}/runs', status: 200 },
  { name: 'a run\'s results, paged', method: 'GET', path: '/api/agent/monitors/{monitor}/runs/{run}/results', query: { limit: '10', offset: '0' }, status: 200 },
  { name: 'every run', method: 'GET', path: '/api/agent/monitoring/runs', status: 200 },
  { name: 'every result', method: 'GET', path: '/api/agent/monitoring/results', query: { type: 'email', changes_only: 'false' }, status: 200 },
  { name: 'delete the monitor', method: 'DELETE', path: '/api/monitors/{monitor}', status: 200 },
  { name: 'delete the list', method: 'DELETE', path: '/api/lists/{list}', status: 200 },
  { name: 'a workflow', method: 'POST', path: '/api/workflows', json: { name: 'wait a day', description: 'one delay step', steps: [{ id: 'wait', type: 'delay', config: { seconds: 86400 } }] }, status: 201, capture: { workflow: 'id' } },
  { name: 'the workflows', method: 'GET', path: '/api/workflows', query: { page: '1', limit: '10', status: 'active' }, status: 200 },
  { name: 'the workflow', method: 'GET', path: '/api/workflows/{workflow}', status: 200 },
  { name: 'a new version', method: 'PUT', path: '/api/workflows/{workflow}', json: { name: 'wait an hour', steps: [{ id: 'wait', type: 'delay', config: { seconds: 3600 } }] }, status: 200 },
  { name: 'run it', method: 'POST', path: '/api/workflows/{workflow}/run', json: { input: { email: 'anna.schmidt@example.com' } }, status: 202, capture: { workflowRun: 'id' } },
  { name: 'the workflow runs', method: 'GET', path: '/api/workflows/runs', query: { workflow_id: '{workflow}' }, status: 200 },
  { name: 'the workflow run', method: 'GET', path: '/api/workflow-runs/{workflowRun}', status: 200 },
  { name: 'its log', method: 'GET', path: '/api/workflows/logs', query: { run_id: '{workflowRun}', limit: '10' }, status: 200 },
  { name: 'cancel the run', method: 'POST', path: '/api/workflow-runs/{workflowRun}/cancel', status: 200 },
  { name: 'redrive a run that did not fail', method: 'POST', path: '/api/workflow-runs/{workflowRun}/redrive', status: 409 },
  { name: 'what a rerun from its step would cost', method: 'POST', path: '/api/workflow-runs/{workflowRun}/rerun', json: { from_step: 'wait', dry_run: true }, status: 200 },
  { name: 'rerun it from its step', method: 'POST', path: '/api/workflow-runs/{workflowRun}/rerun', json: { from_step: 'wait' }, status: 202 },
  { name: 'an ingest URL', method: 'POST', path: '/api/workflows/{workflow}/ingest-token', status: 201, capture: { ingestToken: 'token' } },
  { name: 'a run through the ingest URL', method: 'POST', path: '/api/ingest/workflows/{ingestToken}', as: 'none', headers: { 'idempotency-key': 'corpus-1' }, json: { email: 'john.smith@example.org' }, status: 202 },
  { name: 'the same request again', method: 'POST', path: '/api/ingest/workflows/{ingestToken}', as: 'none', headers: { 'idempotency-key': 'corpus-1' }, json: { email: 'john.smith@example.org' }, status: 200 },
  { name: 'revoke the ingest URL', method: 'DELETE', path: '/api/workflows/{workflow}/ingest-token', status: 200 },
  { name: 'delete the workflow', method: 'DELETE', path: '/api/workflows/{workflow}', status: 200 },
  { name: 'the workflow templates', method: 'GET', path: '/api/workflow-templates', status: 200 },
  { name: 'a workflow secret', method: 'PUT', path: '/api/workflow-secrets/CORPUS_TOKEN', json: { value: 'corpus-secret-value' }, status: 201 },
  { name: 'the same secret replaced', method: 'PUT', path: '/api/workflow-secrets/CORPUS_TOKEN', json: { value: 'corpus-secret-value-2' }, status: 200 },
  { name: 'the workflow secrets', method: 'GET', path: '/api/workflow-secrets', status: 200 },
  { name: 'delete the workflow secret', method: 'DELETE', path: '/api/workflow-secrets/CORPUS_TOKEN', status: 200 },
  { name: 'a workflow from a template', method: 'POST', path: '/api/workflow-templates/email_gender_segment/clone', json: { name: 'sign-ups by gender' }, status: 201 },
  { name: 'the usage log', method: 'GET', path: '/api/account/usage', query: { limit: '20' }, status: 200 },
  { name: 'the usage log since a time', method: 'GET', path: '/api/account/usage', query: { since: '2020-01-01T00:00:00Z' }, status: 200 },
  { name: 'log out', method: 'POST', path: '/api/auth/logout', as: 'session', status: 200 },
];
