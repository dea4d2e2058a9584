import { Readable } from 'node:stream';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { monitorType } from '../../monitors/monitor-types.js';
import { resultCsv } from '../../monitors/result-csv.js';
import { monitoringSnapshotView, snapshotJsonArray, snapshotView, typedRunView } from '../../monitors/result-views.js';
import { runNotFound, type TypedRunRecord } from '../../storage/monitor-result-records.js';
import type { MonitorRecord } from '../../storage/monitor-records.js';
import type { ApiDeps } from '../api-deps.js';
import { keyAuth } from '../authenticate.js';
import { idParams, PAGE_PROPERTIES } from './monitor-schemas.js';
import {
  changesOnly,
  monitoringSnapshotSchema,
  monitoringType,
  pagedResultsQuery,
  resultErrorResponses,
  resultsPageSchema,
  resultsQuery,
  runParams,
  runsPageSchema,
  snapshotSchema,
  typedRunSchema,
} from './monitor-result-schemas.js';

type Page = { limit: number; offset: number };
type RunParams = { Params: { id: string; runId: string } };

/**
 * Monitor runs and their results (spec 4.8): what run execution wrote, read back. Every route is
 * scoped to the key's account: another account's monitor or run is 404, as if it did not exist.
 * A run's whole results (the bare array, the CSV) are streamed a store page at a time, so a
 * million-target run costs the server one page of memory, whatever the client's speed.
 */
export async function monitorRunRoutes(app: FastifyInstance, deps: ApiDeps): Promise<void> {
  app.addHook('onRequest', keyAuth(deps));
  const store = deps.engine.store;

  /** The monitor, and its run named in the path: monitor_not_found, or run_not_found for a run of another monitor. */
  async function ownRun(accountId: string, monitorId: string, runId: string): Promise<{ monitor: MonitorRecord; run: TypedRunRecord }> {
    const monitor = await deps.monitors.get(accountId, monitorId);
    const run = await store.monitorResults.run(accountId, runId);
    if (!run || run.monitorId !== monitor.id) throw runNotFound();
    return { monitor, run };
  }

  function stream(reply: FastifyReply, contentType: string, body: AsyncIterable<string>): FastifyReply {
    return reply.header('Cache-Control', 'no-store').header('Content-Type', contentType).send(Readable.from(body));
  }

  app.get<RunParams & { Querystring: { changes_only: boolean } }>(
    '/api/monitors/:id/runs/:runId/results',
    {
      schema: {
        tags: ['monitors'],
        description: "Every snapshot of the run in the run's input order, as a bare array (spec 4.8); with changes_only, those with changes. Streamed; a run still going gives what it has committed.",
        params: runParams,
        querystring: resultsQuery,
        response: { 200: { description: "The run's snapshots", type: 'array', items: snapshotSchema }, ...resultErrorResponses },
      },
    },
    async (request, reply) => {
      const accountId = request.caller!.accountId;
      const { monitor, run } = await ownRun(accountId, request.params.id, request.params.runId);
      const pages = store.monitorResults.streamSnapshots(accountId, run.id, { changesOnly: request.query.changes_only });
      return stream(reply, 'application/json; charset=utf-8', snapshotJsonArray(monitor.type, pages));
    },
  );

  app.get<RunParams & { Querystring: { changes_only: boolean } }>(
    '/api/monitors/:id/runs/:runId/results/download',
    {
      schema: {
        tags: ['monitors'],
        description:
          "The run's snapshots as CSV, in the run's input order, streamed as `monitor-<id>-run-<runId>.csv`. Columns: `target`, `has_changes` (true or false), one per tracked field of the monitor holding its value in this run (text as it is, numbers and booleans as written, lists joined by `;` as in job result files, other objects as JSON, empty when absent), and `changes`, the JSON of `{field: {old, new}}` (empty when nothing changed). Cells a spreadsheet would run as a formula start with `'`.",
        params: runParams,
        querystring: { type: 'object', properties: { changes_only: changesOnly } },
        response: { 200: { description: 'The CSV (text/csv)', type: 'string' }, ...resultErrorResponses },
      },
    },
    async (request, reply) => {
      const accountId = request.caller!.accountId;
      const { monitor, run } = await ownRun(accountId, request.params.id, request.params.runId);
      const pages = store.monitorResults.streamSnapshots(accountId, run.id, { changesOnly: request.query.changes_only });
      const name = `monitor-${monitor.id}-run-${run.id}${request.query.changes_only ? '-changes' : ''}.csv`;
      reply.header('Content-Disposition', `attachment; filename="${name}"`);
      return stream(reply, 'text/csv; charset=utf-8', resultCsv(monitor.trackedFields, pages));
    },
  );

  app.get<{ Params: { id: string }; Querystring: Page }>(
    '/api/agent/monitors/:id/runs',
    {
      schema: {
        tags: ['monitors'],
        description: "The monitor's runs, newest first, each with its stats (spec 2.8: total records, changes detected, credits used, duration).",
        params: idParams,
        querystring: { type: 'object', properties: PAGE_PROPERTIES },
        response: { 200: { description: 'A page of runs and their total', ...runsPageSchema(typedRunSchema) }, ...resultErrorResponses },
      },
    },
    async (request) => {
      const accountId = request.caller!.accountId;
      const monitor = await deps.monitors.get(accountId, request.params.id);
      const { limit, offset } = request.query;
      const { runs, total } = await store.monitors.runs(accountId, monitor.id, { limit, offset });
      return { runs: runs.map((r) => typedRunView({ ...r, type: monitor.type })), total, limit, offset };
    },
  );

  app.get<RunParams & { Querystring: Page & { changes_only: boolean } }>(
    '/api/agent/monitors/:id/runs/:runId/results',
    {
      schema: {
        tags: ['monitors'],
        description: "A page of the run's snapshots in the run's input order, under `results`, with their total (of changes only, with changes_only).",
        params: runParams,
        querystring: pagedResultsQuery,
        response: { 200: { description: 'A page of snapshots and their total', ...resultsPageSchema(snapshotSchema) }, ...resultErrorResponses },
      },
    },
    async (request) => {
      const accountId = request.caller!.accountId;
      const { monitor, run } = await ownRun(accountId, request.params.id, request.params.runId);
      const { limit, offset, changes_only } = request.query;
      const { snapshots, total } = await store.monitorResults.snapshots(accountId, run.id, { limit, offset, changesOnly: changes_only });
      return { results: snapshots.map((s) => snapshotView(monitor.type, s)), total, limit, offset };
    },
  );

  app.get<{ Querystring: Page & { type?: string } }>(
    '/api/agent/monitoring/runs',
    {
      schema: {
        tags: ['monitors'],
        description: "Every run of the account's monitors (of one type with `type`), newest first, each with its monitor's type.",
        querystring: { type: 'object', properties: { ...PAGE_PROPERTIES, type: monitoringType } },
        response: { 200: { description: 'A page of runs and their total', ...runsPageSchema(typedRunSchema) }, ...resultErrorResponses },
      },
    },
    async (request) => {
      const { limit, offset } = request.query;
      const type = request.query.type === undefined ? undefined : monitorType(request.query.type);
      const { runs, total } = await store.monitorResults.runs(request.caller!.accountId, { limit, offset, type });
      return { runs: runs.map(typedRunView), total, limit, offset };
    },
  );

  app.get<{ Querystring: Page & { type?: string; changes_only: boolean } }>(
    '/api/agent/monitoring/results',
    {
      schema: {
        tags: ['monitors'],
        description:
          "Snapshots of the account's completed runs (of monitors of one type with `type`; with changes only, with changes_only), the newest run first and each run's in its input order, each with its run_id, monitor_id and type. Runs still going are left out until they complete, so pages do not shift while a run writes.",
        querystring: { type: 'object', properties: { ...pagedResultsQuery.properties, type: monitoringType } },
        response: { 200: { description: 'A page of snapshots and their total', ...resultsPageSchema(monitoringSnapshotSchema) }, ...resultErrorResponses },
      },
    },
    async (request) => {
      const { limit, offset, changes_only } = request.query;
      const type = request.query.type === undefined ? undefined : monitorType(request.query.type);
      const { results, total } = await store.monitorResults.results(request.caller!.accountId, { limit, offset, type, changesOnly: changes_only });
      return { results: results.map(monitoringSnapshotView), total, limit, offset };
    },
  );
}
