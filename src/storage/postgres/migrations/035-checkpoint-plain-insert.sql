-- The one-call checkpoint of migration 020 with the billing rows written without ON CONFLICT
-- (issue 32). The probe under the account's row now also reports the keys paid for before the
-- repeat-free window (charged_at <= p_since): their rows are updated, and every other key is
-- inserted plainly. Nothing else changes: outcomes, locks and statements as migration 020 says.
CREATE OR REPLACE FUNCTION sluice_checkpoint(
  p_job_id TEXT, p_chunk_index INTEGER, p_epoch INTEGER, p_owner TEXT, p_cursor INTEGER, p_rows INTEGER,
  p_account_id TEXT, p_kinds TEXT[], p_key_kind INTEGER[], p_key_hash BYTEA[], p_since BIGINT, p_ledger_ids TEXT[],
  p_cache_kind TEXT[], p_cache_key TEXT[], p_cache_result TEXT[],
  p_all_text TEXT, p_row_flags BYTEA, p_row_ends BYTEA, p_counters BIGINT[],
  p_max_error_rate DOUBLE PRECISION, p_out_of_credits BOOLEAN, p_now BIGINT,
  OUT outcome TEXT, OUT billed_kind INTEGER[], OUT billed_hash BYTEA[], OUT balance BIGINT)
LANGUAGE plpgsql AS $$
DECLARE
  v_status TEXT;
  v_total_rows INTEGER;
  v_error_rows BIGINT;
  v_seq BIGINT;
  v_credits BIGINT;
  v_keys INTEGER := COALESCE(array_length(p_key_hash, 1), 0);
  v_k INTEGER;
  v_n INTEGER;
  v_ledger BIGINT;
  v_ledger_seqs BIGINT[] := '{}';
  v_found BYTEA[];
  v_stale BYTEA[];
  v_stale_kind INTEGER[] := '{}';
  v_stale_hash BYTEA[] := '{}';
BEGIN
  PERFORM 1 FROM job_chunks
    WHERE job_id = p_job_id AND chunk_index = p_chunk_index AND lease_epoch = p_epoch AND lease_owner = p_owner AND cursor = p_cursor
    FOR NO KEY UPDATE;
  IF NOT FOUND THEN
    outcome := 'lease_lost';
    RETURN;
  END IF;
  SELECT status, total_rows, error_rows INTO v_status, v_total_rows, v_error_rows FROM jobs WHERE id = p_job_id FOR KEY SHARE;
  IF v_status = 'paused' OR v_status = 'cancelled' THEN
    outcome := 'stopped';
    RETURN;
  END IF;
  IF p_out_of_credits THEN
    outcome := 'slow';
    RETURN;
  END IF;
  -- Read again under the counters' UPDATE below: another chunk may add errors meanwhile.
  IF p_max_error_rate IS NOT NULL AND p_counters[5] > 0 AND p_rows > 0
     AND v_error_rows + p_counters[5] > floor(p_max_error_rate * COALESCE(v_total_rows, 0)) THEN
    outcome := 'slow';
    RETURN;
  END IF;

  IF v_keys > 0 THEN
    SELECT seq, credits INTO v_seq, v_credits FROM accounts WHERE id = p_account_id FOR UPDATE;
    IF NOT FOUND THEN
      RAISE EXCEPTION 'no account %', p_account_id USING ERRCODE = 'P0002';
    END IF;
    -- One probe of the primary key per hash, per kind (see BILLED_HASHES in pg-core-charges.ts). It
    -- also finds the keys paid for before p_since (stale): those rows are updated below, and every
    -- other key is new to the table and goes in by a plain INSERT.
    FOR v_k IN 1 .. COALESCE(array_length(p_kinds, 1), 0) LOOP
      SELECT array_agg(b.key_hash) FILTER (WHERE b.charged_at > p_since), array_agg(b.key_hash) FILTER (WHERE b.charged_at <= p_since)
        INTO v_found, v_stale
        FROM billing_cache b
       WHERE b.account_seq = v_seq AND b.kind = p_kinds[v_k]
         AND b.key_hash = ANY (ARRAY(SELECT t.h FROM unnest(p_key_kind, p_key_hash) AS t(k, h) WHERE t.k = v_k - 1));
      IF v_stale IS NOT NULL THEN
        v_stale_hash := v_stale_hash || v_stale;
        v_stale_kind := v_stale_kind || array_fill(v_k - 1, ARRAY[array_length(v_stale, 1)]);
      END IF;
      IF v_found IS NOT NULL THEN
        billed_hash := COALESCE(billed_hash, '{}') || v_found;
        billed_kind := COALESCE(billed_kind, '{}') || array_fill(v_k - 1, ARRAY[array_length(v_found, 1)]);
      END IF;
    END LOOP;
    balance := v_credits - COALESCE((SELECT SUM(amount) FROM credit_reservations
                 WHERE account_id = p_account_id AND NOT (job_id = p_job_id AND chunk_index = p_chunk_index)), 0);
    IF billed_hash IS NOT NULL OR balance < v_keys THEN
      outcome := 'refused';
      RETURN;
    END IF;
    billed_kind := NULL;
    balance := NULL;
    UPDATE accounts SET credits = credits - v_keys WHERE id = p_account_id;
    -- One ledger line per kind with keys; its id comes from the batch, so a replay collides on it.
    FOR v_k IN 1 .. COALESCE(array_length(p_kinds, 1), 0) LOOP
      SELECT count(*) INTO v_n FROM unnest(p_key_kind) AS t(k) WHERE t.k = v_k - 1;
      v_ledger := NULL;
      IF v_n > 0 THEN
        INSERT INTO ledger (id, account_id, delta, reason, kind, job_id, created_at)
          VALUES (p_ledger_ids[v_k], p_account_id, -v_n, 'charge', p_kinds[v_k], p_job_id, p_now)
          ON CONFLICT (id) DO NOTHING RETURNING seq INTO v_ledger;
        IF v_ledger IS NULL THEN
          RAISE EXCEPTION 'batch % of % was already charged for %', p_ledger_ids[v_k], p_job_id, p_kinds[v_k] USING ERRCODE = 'P0001';
        END IF;
      END IF;
      v_ledger_seqs := v_ledger_seqs || v_ledger;
    END LOOP;
    -- No ON CONFLICT: every write of an account's billing rows holds the account's row (taken above),
    -- so no key of this batch can have arrived since the probe. The speculative insertion of an
    -- upsert cost about 3 ms of server CPU per 870 keys (bench/OPTIMISATIONS.md, 28 Nov).
    IF array_length(v_stale_hash, 1) > 0 THEN
      UPDATE billing_cache b SET charged_at = p_now, ledger_seq = v_ledger_seqs[s.k + 1]
        FROM unnest(v_stale_kind, v_stale_hash) AS s(k, h)
       WHERE b.account_seq = v_seq AND b.kind = p_kinds[s.k + 1] AND b.key_hash = s.h;
      INSERT INTO billing_cache (account_seq, kind, key_hash, charged_at, ledger_seq)
        SELECT v_seq, p_kinds[t.k + 1], t.h, p_now, v_ledger_seqs[t.k + 1] FROM unnest(p_key_kind, p_key_hash) AS t(k, h)
         WHERE NOT EXISTS (SELECT 1 FROM unnest(v_stale_kind, v_stale_hash) AS s(k, h) WHERE s.k = t.k AND s.h = t.h);
    ELSE
      INSERT INTO billing_cache (account_seq, kind, key_hash, charged_at, ledger_seq)
        SELECT v_seq, p_kinds[t.k + 1], t.h, p_now, v_ledger_seqs[t.k + 1] FROM unnest(p_key_kind, p_key_hash) AS t(k, h);
    END IF;
  END IF;

  IF COALESCE(array_length(p_cache_kind, 1), 0) > 0 THEN
    INSERT INTO result_cache (kind, lookup_key, result, looked_up_at)
      SELECT t.kind, t.key, t.result, p_now FROM unnest(p_cache_kind, p_cache_key, p_cache_result) AS t(kind, key, result)
      ON CONFLICT (kind, lookup_key) DO UPDATE SET result = EXCLUDED.result, looked_up_at = EXCLUDED.looked_up_at;
  END IF;

  UPDATE job_chunks SET cursor = cursor + p_rows, failures = 0 WHERE job_id = p_job_id AND chunk_index = p_chunk_index;
  IF p_rows > 0 THEN
    INSERT INTO chunk_outputs (job_id, chunk_index, first_row, all_text, found_text, errors_text, row_flags, row_ends)
      VALUES (p_job_id, p_chunk_index, p_cursor, p_all_text, '', '', p_row_flags, p_row_ends);
    UPDATE jobs SET processed_rows = processed_rows + p_counters[1], found_rows = found_rows + p_counters[2],
        invalid_rows = invalid_rows + p_counters[3], duplicate_rows = duplicate_rows + p_counters[4],
        error_rows = error_rows + p_counters[5], credits_used = credits_used + p_counters[6], updated_at = p_now
      WHERE id = p_job_id
      RETURNING error_rows INTO v_error_rows;
    -- Past the budget with this batch (another chunk's errors counted meanwhile): undone whole, and
    -- done again as the transaction that fails the job.
    IF p_max_error_rate IS NOT NULL AND p_counters[5] > 0 AND v_error_rows > floor(p_max_error_rate * COALESCE(v_total_rows, 0)) THEN
      RAISE EXCEPTION 'checkpoint crosses the error budget' USING ERRCODE = 'SLW01';
    END IF;
  END IF;
  DELETE FROM credit_reservations WHERE job_id = p_job_id AND chunk_index = p_chunk_index;
  outcome := 'ok';
END
$$;
