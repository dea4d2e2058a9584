import fs from 'node:fs';
import os from 'node:os';
import { JOB_STATUSES } from '../storage/job-states.js';
import type { JobRecord, WorkLease } from '../storage/job-records.js';

/** What a job is doing now, beside its counts: who holds it, whether it has stalled, how fast it goes. */
export interface JobActivity {
  /**
   * A running job none of whose work a live worker holds: every lease on it and its pending chunks
   * ran out or belongs to a process of this machine that has died, and that has lasted a lease time
   * (at once when the holder is known dead). Nothing will move it until a worker starts or it is resumed.
   */
  stalled: boolean;
  /** When its last lease ran out, its holder was last heard of, or (no lease left) its last change. */
  stalled_since: string | null;
  /** The job record's last change: a checkpoint, a phase finished or a state change. */
  last_progress_at: string | null;
  /**
   * Processed rows divided by the time from the job's start (its first worker) to its last progress:
   * its average over its whole run, paused time included (pauses are not recorded). Null before a
   * row is processed.
   */
  rows_per_second: number | null;
  /** Rows left divided by `rows_per_second`, for a running job that is not stalled; else null. */
  eta_seconds: number | null;
}

/** A live holder of a job's work, for the message that refuses to resume it. */
export interface WorkHolder {
  owner: string;
  until: number;
}

export interface ActivityClock {
  now: number;
  /** The lease time: how long a lease with no heartbeat lasts, and the grace before a job with none is stalled. */
  leaseMs: number;
}

export function jobActivity(job: JobRecord, at: ActivityClock): JobActivity {
  const stall = stallOf(job, at);
  const rate = rowsPerSecond(job);
  const left = job.totalRows === null ? null : Math.max(0, job.totalRows - job.processedRows);
  const running = job.status === JOB_STATUSES.running && !stall.stalled;
  return {
    stalled: stall.stalled,
    stalled_since: stall.stalled && stall.since !== null ? iso(stall.since) : null,
    last_progress_at: job.startedAt === null ? null : iso(job.updatedAt),
    rows_per_second: rate === null ? null : Math.round(rate * 10) / 10,
    eta_seconds: running && rate !== null && left !== null ? Math.ceil(left / rate) : null,
  };
}

/** The leases of the job that a live worker holds: not run out, and not of a process known dead. */
export function liveHolders(job: JobRecord, now: number): WorkHolder[] {
  return (job.work ?? [])
    .filter((l): l is WorkLease & { owner: string } => l.owner !== null && l.expiresAt >= now && !ownerDead(l.owner))
    .map((l) => ({ owner: l.owner, until: l.expiresAt }));
}

/** Owners of the job's unexpired leases whose processes have died: freeing them hands the work on at once. */
export function deadHolders(job: JobRecord, now: number): string[] {
  return [...new Set((job.work ?? []).filter((l) => l.owner !== null && l.expiresAt >= now && ownerDead(l.owner)).map((l) => l.owner!))];
}

function stallOf(job: JobRecord, at: ActivityClock): { stalled: boolean; since: number | null } {
  // A queued job waits for a worker's first look; only a running one has work that someone dropped.
  if (job.status !== JOB_STATUSES.running || job.work === undefined) return { stalled: false, since: null };
  if (liveHolders(job, at.now).length > 0) return { stalled: false, since: null };
  const leases = job.work;
  // A dead holder renewed its lease at least once per lease time, so its last sign of life is about
  // a lease time before the expiry it wrote; a lease that ran out ended at its expiry.
  const dead = leases.filter((l) => l.owner !== null && l.expiresAt >= at.now && ownerDead(l.owner));
  const ends = leases.map((l) => (dead.includes(l) ? l.expiresAt - at.leaseMs : l.expiresAt));
  // No lease at all (released by a worker that stopped): the job's last change is when work stopped.
  const since = Math.max(job.updatedAt, ...ends);
  // Between one chunk's release and the next one's lease a job briefly has no holder; the grace keeps
  // that moment from reading as a stall. A holder known dead needs no grace.
  const stalled = dead.length > 0 || at.now - since >= at.leaseMs;
  return { stalled, since: Math.min(since, at.now) };
}

function rowsPerSecond(job: JobRecord): number | null {
  if (job.startedAt === null || job.processedRows === 0) return null;
  const seconds = (job.updatedAt - job.startedAt) / 1000;
  return seconds > 0 ? job.processedRows / seconds : null;
}

/**
 * Whether a lease owner (`host:pid:random`) is a process of this host that no longer runs. Owners of
 * other hosts are never known dead here: their leases are left to run out.
 */
export function ownerDead(owner: string): boolean {
  const parts = owner.split(':');
  if (parts.length < 3 || parts.slice(0, -2).join(':') !== os.hostname()) return false;
  const pid = Number(parts[parts.length - 2]);
  if (!Number.isSafeInteger(pid) || pid <= 0 || pid === process.pid) return false;
  try {
    process.kill(pid, 0);
  } catch (e: unknown) {
    // EPERM: it exists, as another user's process.
    return (e as NodeJS.ErrnoException).code !== 'EPERM';
  }
  // A process killed with -9 stays a zombie until its parent reaps it (a shell may take its time),
  // and a zombie answers kill(pid, 0): its leases read as a live worker's, so a resume was refused
  // as "running" and the job looked busy for up to a lease time (issue 33).
  return isZombie(pid);
}

/** Linux: the state field of /proc/PID/stat, after the parenthesised command name. Elsewhere: not known, false. */
function isZombie(pid: number): boolean {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
    return state === 'Z' || state === 'X';
  } catch {
    return false;
  }
}

function iso(ms: number): string {
  return new Date(ms).toISOString();
}
