import { inject } from 'vitest';
import type { Clock } from '../../src/shared/clock.js';
import { MemoryObjectStore } from '../../src/storage/s3/memory-object-store.js';
import type { ObjectStore } from '../../src/storage/s3/object-store.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /**
     * `memory` in the unit tier (vitest.config.ts): test engines keep their objects in a
     * MemoryObjectStore instead of starting the embedded S3 server. Unset elsewhere: the real
     * AWS SDK against the embedded server, as a user meets it.
     */
    objectStore: 'memory' | 'embedded-s3';
  }
}

/** The object store a test engine gets in this project: the in-memory twin, or undefined for the configured one. */
export function testObjectStore(clock?: Clock): ObjectStore | undefined {
  return inject('objectStore') === 'memory' ? new MemoryObjectStore(clock) : undefined;
}
