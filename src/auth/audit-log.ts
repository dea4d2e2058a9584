import type { Clock } from '../shared/clock.js';
import type { Logger } from '../shared/logger.js';
import type { AuditPort, AuditRecord } from '../storage/store.js';

/** Stable names: clients filter on them, so a name is never reused for another meaning. */
export const AUDIT_ACTIONS = {
  keyCreated: 'key.created',
  keyRevealed: 'key.revealed',
  keyDisabled: 'key.disabled',
  keyEnabled: 'key.enabled',
  keyRevoked: 'key.revoked',
  /** A roll: the target is the old key, which ends after its grace; a `key.created` names the new one. */
  keyRolled: 'key.rolled',
  webhookCreated: 'webhook.created',
  webhookUpdated: 'webhook.updated',
  webhookDeleted: 'webhook.deleted',
  webhookSecretRotated: 'webhook.secret_rotated',
  loginSucceeded: 'login.succeeded',
  loginFailed: 'login.failed',
  sessionEnded: 'session.ended',
  accountSuspended: 'account.suspended',
  accountReinstated: 'account.reinstated',
  jobDeleted: 'job.deleted',
  /** Issue 27, item 9: every write an account makes, beside keys, webhooks and workflows. */
  jobCreated: 'job.created',
  jobCancelled: 'job.cancelled',
  jobRetried: 'job.retried',
  jobResumed: 'job.resumed',
  listCreated: 'list.created',
  listDeleted: 'list.deleted',
  monitorCreated: 'monitor.created',
  monitorUpdated: 'monitor.updated',
  monitorDeleted: 'monitor.deleted',
  monitorPaused: 'monitor.paused',
  monitorResumed: 'monitor.resumed',
  monitorTargetsAdded: 'monitor.targets_added',
  monitorTargetsRemoved: 'monitor.targets_removed',
  /** A run started by hand (scheduled runs are the monitor's own, not an action of a key). */
  monitorRunStarted: 'monitor.run_started',
  creditAlertSet: 'credit_alert.set',
  /** `sluice accounts topup`: the operator's, so its actor is the CLI. */
  creditsToppedUp: 'credits.topped_up',
  /** An exposed-credential scan (spec 4.6); the entry's label is the scan's `source`. */
  exposedKeysScanned: 'scan.exposed_keys',
  /** A code-host leak scan was started. */
  repositoryScanStarted: 'scan.repository',
  workflowCreated: 'workflow.created',
  /** Every update is a new version of the workflow: the entry marks when each began. */
  workflowUpdated: 'workflow.updated',
  workflowDeleted: 'workflow.deleted',
  /** A workflow secret created or replaced; the target is its name, never its value. */
  workflowSecretSet: 'workflow_secret.set',
  workflowSecretDeleted: 'workflow_secret.deleted',
} as const;
export type AuditAction = (typeof AUDIT_ACTIONS)[keyof typeof AUDIT_ACTIONS];

/**
 * Each account keeps 90 days of entries and at most its newest 10,000, cut when one is written: a
 * key that makes and disables keys as fast as the rate limit allows cannot grow the table without
 * bound, and nobody has to run a sweeper.
 */
export const AUDIT_RETENTION = { days: 90, entries: 10_000 } as const;
const DAY_MS = 86_400_000;
/** User agents are the client's to choose; a long one must not make an entry large. */
const USER_AGENT_MAX = 200;

export type AuditActor =
  | { type: 'key'; id: string; name: string }
  /** A login session's bearer token (POST /api/keys, logout). */
  | { type: 'session' }
  /** Email and password (login attempts). */
  | { type: 'login' }
  /** An operator's `sluice` command on the machine. */
  | { type: 'cli' };

export interface AuditSource {
  ip?: string | null;
  userAgent?: string | null;
  /** The caller's label for the entry (spec 4.6 `source`), cut to 200 characters. */
  label?: string | null;
}

/**
 * An account's audit log: who changed its keys and webhooks and who logged in. Entries hold ids,
 * names and the client's address, never a secret, a token or a password.
 */
export class AuditLog {
  constructor(
    private readonly port: AuditPort,
    private readonly clock: Clock,
    private readonly log: Logger,
  ) {}

  /**
   * Written after the action it records has happened, so a failure here is logged and swallowed:
   * answering 500 for a key that was in fact made would lose its one-time secret, and the caller
   * would make another.
   */
  async record(accountId: string, action: AuditAction, actor: AuditActor, targetId: string | null, source: AuditSource = {}): Promise<void> {
    const at = this.clock.now();
    try {
      await this.port.append(
        {
          accountId,
          at,
          action,
          actorType: actor.type,
          actorId: actor.type === 'key' ? actor.id : null,
          actorName: actor.type === 'key' ? actor.name : null,
          targetId,
          sourceIp: source.ip ?? null,
          userAgent: source.userAgent ? source.userAgent.slice(0, USER_AGENT_MAX) : null,
          label: source.label ? source.label.slice(0, USER_AGENT_MAX) : null,
        },
        { since: at - AUDIT_RETENTION.days * DAY_MS, max: AUDIT_RETENTION.entries },
      );
    } catch (error: unknown) {
      this.log.error({ err: error, accountId, action }, 'audit entry not written');
    }
  }

  list(accountId: string, page: { limit: number; before?: number }): Promise<AuditRecord[]> {
    return this.port.list(accountId, page);
  }
}
