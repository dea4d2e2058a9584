import path from 'node:path';
import { ShreddingSealer, type DataKeyRing } from '../auth/data-keys.js';
import { FileDataKeys } from '../auth/file-data-keys.js';
import { SharedRecordDataKeys } from '../auth/shared-record-data-keys.js';
import type { Config } from '../config/load-config.js';
import type { Logger } from '../shared/logger.js';
import type { Store } from '../storage/store.js';

/** The folder of the data dir that holds the SQLite store's data keys. */
export const DATA_KEYS_DIR = 'data-keys';

/**
 * The sealer of erasable secrets, with the ring that suits the store: files beside the SQLite
 * database (one machine), shared records on PostgreSQL (machines that share only the database).
 */
export function openSealer(config: Config, store: Store, sealKey: Buffer): ShreddingSealer {
  const ring: DataKeyRing = config.database.url !== undefined
    ? new SharedRecordDataKeys(store.limits, sealKey)
    : new FileDataKeys(path.join(config.dataDir, DATA_KEYS_DIR), sealKey);
  return new ShreddingSealer(ring, sealKey);
}

/**
 * What the long-running processes (serve, worker) warn of at start when the seal key was made in
 * the data dir: a copy of the dir then opens every webhook secret still in use (erased ones stay
 * erased, their data keys are gone). Nothing when SLUICE_SEAL_KEY is set.
 */
export function sealKeyBesideData(config: Config, log: Logger): void {
  if (config.sealKey !== undefined) return;
  log.warn(
    { dataDir: config.dataDir },
    'the seal key is seal.key in the data dir, beside the secrets it seals: a copy of the dir opens every live webhook secret; set SLUICE_SEAL_KEY from a secret store',
  );
}
