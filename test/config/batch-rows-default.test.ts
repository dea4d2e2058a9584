import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load-config.js';

describe('SLUICE_CHUNK_ROWS below the default batch size', () => {
  it('starts with batches no larger than the chunk, instead of blaming SLUICE_BATCH_ROWS, which nobody set', () => {
    // 500 is inside SLUICE_CHUNK_ROWS's documented range (10 to 10,000,000); the default batch is 1,000.
    const config = loadConfig({ SLUICE_CHUNK_ROWS: '500' });
    expect(config.jobs.chunkRows).toBe(500);
    expect(config.jobs.batchRows).toBeLessThanOrEqual(500);
    expect(config.jobs.batchRows).toBeGreaterThan(0);
  });

  it('still refuses a batch size that was set above the chunk size', () => {
    expect(() => loadConfig({ SLUICE_CHUNK_ROWS: '500', SLUICE_BATCH_ROWS: '1000' })).toThrow(/SLUICE_BATCH_ROWS/);
  });
});
