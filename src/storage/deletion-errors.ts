import { AppError, ERROR_CODES } from '../shared/errors.js';

/** Deleting a job that may still run would pull its input and chunks from under its workers. */
export function notFinished(jobId: string, status: string): AppError {
  return new AppError(ERROR_CODES.invalidState, `job ${jobId} is ${status}; cancel it first, then delete it`, { statusCode: 409 });
}

/** A worker whose lease has not run out may still write a part or a result after the purge. */
export function stillHeld(jobId: string): AppError {
  return new AppError(ERROR_CODES.invalidState, `job ${jobId} is still being wound down by a worker; delete it again in a minute`, { statusCode: 409 });
}
