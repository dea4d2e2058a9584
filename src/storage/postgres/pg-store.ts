import { BillingKeys } from '../billing-key.js';
import { PgComplianceChecks } from './pg-compliance-checks.js';
import { AppError, ERROR_CODES } from '../../shared/errors.js';
import { STORE_KINDS, type Store, type StoreHooks } from '../store.js';
import { PgAudit } from './pg-audit.js';
import { PgUsage } from './pg-usage.js';
import { PgRepoScans } from './pg-repo-scans.js';
import { PgBilling } from './pg-billing.js';
import { PgBreaches } from './pg-breaches.js';
import { PgCompanies } from './pg-companies.js';
import { PgEmailBreaches } from './pg-email-breaches.js';
import { migratePostgres, PgDatabase } from './pg-database.js';
import { PgDeliveries } from './pg-deliveries.js';
import { PgIdempotency } from './pg-idempotency.js';
import { PgJobs } from './pg-jobs.js';
import { PgKeys } from './pg-keys.js';
import { PgLimits } from './pg-limits.js';
import { PgQuotaUsage } from './pg-quota-usage.js';
import { PgCreditAlerts } from './pg-credit-alerts.js';
import { PgWorkflowSecrets } from './pg-workflow-secrets.js';
import { PgMonitors } from './pg-monitors.js';
import { PgMonitorRuns } from './pg-monitor-runs.js';
import { PgWorkflows } from './pg-workflows.js';
import { PgMonitorResults } from './pg-monitor-results.js';
import { PgResults } from './pg-results.js';
import { PgSessions } from './pg-sessions.js';
import { PgWebhooks } from './pg-webhooks.js';
import { PgRetention } from './pg-retention.js';
import { PgIpNetwork } from './pg-ip-network.js';

/**
 * The PostgreSQL store: one pool shared by every part, migrated before first use (processes that
 * start together migrate once, under the runner's advisory lock).
 */
export async function openPostgresStore(options: { url: string; poolSize: number; sealKey?: Buffer }, hooks: StoreHooks): Promise<Store> {
  // No fallback: machines share only the database, so no file of one of them can stand in for the
  // seal key, and a guessed one would hash paid keys into names nobody paid for (a second charge).
  if (!options.sealKey) throw new AppError(ERROR_CODES.badConfig, 'a PostgreSQL store needs the seal key (SLUICE_SEAL_KEY): the billing cache is keyed by it');
  const names = new BillingKeys(options.sealKey);
  const db = new PgDatabase({ url: options.url, poolSize: options.poolSize });
  try {
    await migratePostgres(db, names);
  } catch (error) {
    await db.close();
    throw error;
  }
  return {
    kind: STORE_KINDS.postgres,
    jobs: new PgJobs(db, hooks, names),
    billing: new PgBilling(db, names),
    results: new PgResults(db),
    keys: new PgKeys(db),
    sessions: new PgSessions(db),
    idempotency: new PgIdempotency(db),
    webhooks: new PgWebhooks(db),
    deliveries: new PgDeliveries(db),
    breaches: new PgBreaches(db),
    emailBreaches: new PgEmailBreaches(db),
    companies: new PgCompanies(db),
    limits: new PgLimits(db),
    quotaUsage: new PgQuotaUsage(db),
    creditAlerts: new PgCreditAlerts(db),
    workflowSecrets: new PgWorkflowSecrets(db),
    audit: new PgAudit(db),
    usage: new PgUsage(db),
    retention: new PgRetention(db),
    monitors: new PgMonitors(db),
    monitorRuns: new PgMonitorRuns(db),
    monitorResults: new PgMonitorResults(db),
    repoScans: new PgRepoScans(db),
    ipNetwork: new PgIpNetwork(db),
    complianceChecks: new PgComplianceChecks(db),
    workflows: new PgWorkflows(db, names),
    async ping() {
      await db.query('SELECT 1');
    },
    close: async () => {
      await db.close();
      await names.close();
    },
  };
}
