import type { Store, StoreHooks } from '../store.js';
import { SqliteComplianceChecks } from './sqlite-compliance-checks.js';
import { billingKeysFor, openDatabase, type OpenDatabaseOptions } from './open-database.js';
import { SqliteAudit } from './sqlite-audit.js';
import { SqliteUsage } from './sqlite-usage.js';
import { SqliteRepoScans } from './sqlite-repo-scans.js';
import { SqliteBilling } from './sqlite-billing.js';
import { SqliteBreaches } from './sqlite-breaches.js';
import { SqliteCompanies } from './sqlite-companies.js';
import { SqliteEmailBreaches } from './sqlite-email-breaches.js';
import { SqliteDeliveries } from './sqlite-deliveries.js';
import { SqliteIdempotency } from './sqlite-idempotency.js';
import { SqliteJobs } from './sqlite-jobs.js';
import { SqliteKeys } from './sqlite-keys.js';
import { SqliteLimits } from './sqlite-limits.js';
import { SqliteQuotaUsage } from './sqlite-quota-usage.js';
import { SqliteCreditAlerts } from './sqlite-credit-alerts.js';
import { SqliteWorkflowSecrets } from './sqlite-workflow-secrets.js';
import { SqliteMonitors } from './sqlite-monitors.js';
import { SqliteMonitorRuns } from './sqlite-monitor-runs.js';
import { SqliteMonitorResults } from './sqlite-monitor-results.js';
import { SqliteOutbox } from './sqlite-outbox.js';
import { SqliteWorkflows } from './sqlite-workflows.js';
import { SqliteResults } from './sqlite-results.js';
import { SqliteSessions } from './sqlite-sessions.js';
import { SqliteWebhooks } from './sqlite-webhooks.js';
import { SqliteRetention } from './sqlite-retention.js';
import { SqliteIpNetwork } from './sqlite-ip-network.js';
import { SqliteReadThread } from './sqlite-read-thread.js';

/**
 * The embedded store: one SQLite file (WAL) that every process on a data dir shares. Its
 * operations are synchronous better-sqlite3 transactions behind the port's promises; SQLite's one
 * writer at a time (`BEGIN IMMEDIATE`, `busy_timeout`) is what serialises them across processes.
 */
export function openSqliteStore(file: string, options: OpenDatabaseOptions, hooks: StoreHooks): Store {
  const names = billingKeysFor(file, options);
  const db = openDatabase(file, options, names);
  const results = new SqliteResults(db);
  const outbox = new SqliteOutbox(db);
  const billing = new SqliteBilling(db, results, outbox, names);
  const ping = db.prepare('SELECT 1');
  const reads = new SqliteReadThread(file, options.busyTimeoutMs);
  return {
    kind: 'sqlite',
    jobs: new SqliteJobs(db, billing, results, outbox, hooks),
    billing,
    results,
    keys: new SqliteKeys(db),
    sessions: new SqliteSessions(db),
    idempotency: new SqliteIdempotency(db),
    webhooks: new SqliteWebhooks(db),
    deliveries: new SqliteDeliveries(db),
    breaches: new SqliteBreaches(db),
    emailBreaches: new SqliteEmailBreaches(db),
    companies: new SqliteCompanies(db),
    limits: new SqliteLimits(db),
    quotaUsage: new SqliteQuotaUsage(db),
    creditAlerts: new SqliteCreditAlerts(db),
    workflowSecrets: new SqliteWorkflowSecrets(db),
    audit: new SqliteAudit(db),
    usage: new SqliteUsage(db),
    retention: new SqliteRetention(db),
    monitors: new SqliteMonitors(db, reads),
    monitorRuns: new SqliteMonitorRuns(db, outbox),
    monitorResults: new SqliteMonitorResults(db),
    repoScans: new SqliteRepoScans(db),
    ipNetwork: new SqliteIpNetwork(db),
    complianceChecks: new SqliteComplianceChecks(db),
    workflows: new SqliteWorkflows(db, billing, results),
    async ping() {
      ping.get();
    },
    async close() {
      db.close();
      await names.close();
      await reads.close();
    },
  };
}
