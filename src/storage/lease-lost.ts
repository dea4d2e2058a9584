import { AppError, ERROR_CODES } from '../shared/errors.js';

/** A fenced write found its lease gone: nothing was written, and the work is someone else's now. */
export function leaseLost(what: string): AppError {
  return new AppError(ERROR_CODES.leaseLost, `lease lost on ${what}`, { retryable: false });
}
