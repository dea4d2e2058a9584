import { Readable } from 'node:stream';
import { csvLine, escapeFormula } from '../jobs/csv-writer.js';
import type { MonitorRecord, MonitorRunRecord } from '../storage/monitor-records.js';
import type { OutboxEvent } from '../storage/records.js';
import type { ObjectStore } from '../storage/s3/object-store.js';
import type { MonitorRunsPort } from '../storage/store.js';
import type { PayloadEnricher } from '../webhooks/webhook-client.js';
import { WEBHOOK_EVENTS } from '../webhooks/webhook-store.js';
import type { HighValueAlert } from './high-value.js';
import type { Changes, FieldValue } from './tracked-values.js';

/** Alerts one `monitor.alert.high_value` carries; `alert_count` says how many the run found in all. */
export const MAX_ALERTS_PER_EVENT = 100;
/** Changed snapshots read per store call while the changes file is written. */
const CHANGES_PAGE = 1_000;

/** Where a run's changes file lives: derived from the ids, so the sender finds it without a lookup. */
export function changesKey(monitorId: string, runId: string): string {
  return `monitors/${monitorId}/runs/${runId}/changes.csv`;
}

/** One run's stats as the events carry them (spec 2.8: total records, changes detected, credits used, duration). */
export interface RunStats {
  total_records: number;
  changes_detected: number;
  credits_used: number;
  duration_ms: number;
  alerts: number;
}

/**
 * The changed targets as a CSV, one line per target and changed field (`target,field,old,new`),
 * lists joined by `;`, streamed from the store a page at a time, cells escaped like every result
 * file's. Written before the run ends, under the same key every time, so a run ended after a crash
 * writes the same file again.
 */
export async function writeChangesFile(objects: ObjectStore, runs: MonitorRunsPort, monitorId: string, runId: string, signal?: AbortSignal): Promise<string> {
  const key = changesKey(monitorId, runId);
  async function* lines(): AsyncGenerator<string> {
    yield csvLine(['target', 'field', 'old', 'new']);
    let after = -1;
    for (;;) {
      const page = await runs.snapshotPage(runId, { afterSeq: after, limit: CHANGES_PAGE, changedOnly: true });
      if (page.length === 0) return;
      let text = '';
      for (const snapshot of page) {
        const changes = JSON.parse(snapshot.changes ?? '{}') as Changes;
        for (const [field, { old, new: next }] of Object.entries(changes)) {
          text += csvLine([snapshot.target, field, cell(old), cell(next)].map(escapeFormula));
        }
      }
      yield text;
      after = page[page.length - 1]!.seq;
    }
  }
  await objects.putStream(key, Readable.from(lines()), { contentType: 'text/csv; charset=utf-8', ...(signal ? { signal } : {}) });
  return key;
}

function cell(value: FieldValue): string {
  if (value === null) return '';
  return Array.isArray(value) ? value.join(';') : String(value);
}

function summary(monitor: MonitorRecord, run: MonitorRunRecord, stats: RunStats, startedAt: number, now: number) {
  return {
    run_id: run.id,
    monitor_id: monitor.id,
    monitor_name: monitor.name,
    type: monitor.type,
    triggered_by: run.trigger,
    status: 'completed',
    stats,
    started_at: new Date(startedAt).toISOString(),
    finished_at: new Date(now).toISOString(),
  };
}

/**
 * `monitor.run.completed`, for a run that found at least one change. Its id is the run's: the run
 * ends once (a fenced, conditional move), so the event is written once, and a receiver that sees
 * it twice (a redelivery) can tell by `webhook-id`. The sender adds `changes_url`.
 */
export function runCompletedEvent(monitor: MonitorRecord, run: MonitorRunRecord, stats: RunStats, startedAt: number, now: number): OutboxEvent {
  const event = WEBHOOK_EVENTS.monitorRunCompleted;
  return { id: `evt_monitor_run_${run.id}`, event, accountId: run.accountId, payload: { event, data: summary(monitor, run, stats, startedAt, now), created_at: new Date(now).toISOString() } };
}

/** `monitor.alert.high_value`, for a run with alerts: the first MAX_ALERTS_PER_EVENT under `alerts`. */
export function highValueEvent(monitor: MonitorRecord, run: MonitorRunRecord, alerts: readonly HighValueAlert[], alertCount: number, now: number): OutboxEvent {
  const event = WEBHOOK_EVENTS.monitorAlertHighValue;
  const data = { run_id: run.id, monitor_id: monitor.id, monitor_name: monitor.name, type: monitor.type, alerts, alert_count: alertCount, alerts_truncated: alertCount > alerts.length };
  return { id: `evt_monitor_alert_${run.id}`, event, accountId: run.accountId, payload: { event, data, created_at: new Date(now).toISOString() } };
}

/**
 * A fresh presigned link to the run's changes file on each `monitor.run.completed` sent, as
 * `bulk.completed` gets its download_url: a retry or a redelivery never carries an expired link.
 */
export function withChangesUrl(objects: ObjectStore, expiresInSeconds: number): PayloadEnricher {
  return async (event, payload) => {
    if (event !== WEBHOOK_EVENTS.monitorRunCompleted) return payload;
    const envelope = payload as { data: { run_id: string; monitor_id: string } & Record<string, unknown> };
    const { run_id: runId, monitor_id: monitorId } = envelope.data;
    const url = await objects.presignGet(changesKey(monitorId, runId), { expiresInSeconds, downloadName: `${runId}-changes.csv` });
    return { ...envelope, data: { ...envelope.data, changes_url: url.url, expires_at: url.expiresAt.toISOString() } };
  };
}

/** Each enricher in turn, for the events it knows. */
export function chainEnrichers(...enrichers: readonly PayloadEnricher[]): PayloadEnricher {
  return async (event, payload) => {
    let out = payload;
    for (const enrich of enrichers) out = await enrich(event, out);
    return out;
  };
}
