/**
 * A job type, declared: which column holds the lookup key, how a raw cell becomes a key (or a
 * row-level error), which lookup answers it, and how an answer becomes output cells. The engine
 * does everything else (parsing, dedupe, billing, checkpoints, output) the same for every type.
 */
export interface Pipeline<R = unknown> {
  /** Job type as the API and CLI name it, e.g. `gender`. */
  readonly type: string;
  /** Billing and result-cache kind; one charge per account, kind and key within the window. */
  readonly lookupKind: string;
  /** Header (compared without case) that holds the key when the caller names no column. */
  readonly keyHeader: string;
  /**
   * Other names of the key column, in ranked groups (src/jobs/key-columns.ts compares them without
   * case, accents, blanks, dashes, underscores and dots). `keyHeader` ranks first, then each group
   * in order; two header cells matching within the best group found make the header ambiguous.
   */
  readonly keyAliases: readonly (readonly string[])[];
  /**
   * Whether a file may come without a header row, its first column being the key. Only where a
   * header cell can never pass as a key: any text is a company name, so a header would be charged.
   */
  readonly headerless: boolean;
  /**
   * Trims and validates one raw cell. The key is what billing and dedupe compare. `options` comes
   * from the job, so that every row of one job is read by the same rule.
   */
  normalise(raw: string, options?: NormaliseOptions): NormaliseResult;
  /** Columns this pipeline adds, before the engine's own status, credits, cached, error. */
  readonly resultColumns: readonly string[];
  /** Cells for `resultColumns`, in order. */
  resultCells(result: R): string[];
  /** Whether the row belongs in the `found` export. */
  isFound(result: R): boolean;
  /**
   * The lookup's failures are for the moment (a greylisting mail server): its chunk's failed rows
   * get deferred passes (SLUICE_DEFER_RETRY_MS) instead of keeping a worker waiting, and the
   * failure budget is judged only after the last of them.
   */
  readonly deferFailures?: boolean;
}

/** Per-job settings that change how a cell reads; a pipeline ignores the ones it has no use for. */
export interface NormaliseOptions {
  /** ISO 3166-1 alpha-2 country for phone numbers written without a country code. */
  readonly defaultCountry?: string | undefined;
  /**
   * The row's own country cell (the job's country column), raw: it wins over `defaultCountry` for
   * this row's national-format numbers. Unset when the file has no country column.
   */
  readonly rowCountry?: string | undefined;
}

export type NormaliseResult = { ok: true; key: string; origin?: KeyOrigin } | { ok: false; code: string; message: string };

/** Where a key with a country (a phone number) belongs, for the job's per-country counts. */
export interface KeyOrigin {
  /** ISO alpha-2 country of the number, or `001` for numbers of no country (+800, +882, ...). */
  readonly country: string;
  /** The number's own `+CC` disagreed with its row's country cell and won. */
  readonly overrodeRow: boolean;
}
