import { isAppError } from '../../src/shared/errors.js';
import type { NewMonitor } from '../../src/storage/monitor-records.js';
import { NOW } from '../support/test-store.js';

/** A weekly email monitor of `accountId`, first due at NOW, unless `over` says otherwise. */
export function newMonitor(accountId: string, id: string, over: Partial<NewMonitor> = {}): NewMonitor {
  return {
    id,
    accountId,
    name: `monitor ${id}`,
    type: 'email',
    frequency: 'weekly',
    trackedFields: ['breached', 'count'],
    changeDetection: 'any_change',
    startAt: NOW,
    now: NOW,
    ...over,
  };
}

/** The code of the AppError `promise` rejects with, or undefined when it resolves. */
export async function errorCode(promise: Promise<unknown>): Promise<string | undefined> {
  try {
    await promise;
    return undefined;
  } catch (e: unknown) {
    return isAppError(e) ? e.code : String(e);
  }
}
