-- A checkpoint in one round trip (issue 32), and a reservation in one.
--
-- The checkpoint of pg-core-commit-batch.ts, as one statement (autocommit: it commits or rolls
-- back whole). Outcomes:
--   ok          everything written
--   lease_lost  the fence failed (epoch, owner or cursor): nothing written
--   stopped     the job is paused or cancelled: nothing written
--   refused     a key was billed meanwhile or the balance cannot cover the charges: nothing written;
--               billed_kind/billed_hash say which keys, balance what the account can spend
--   slow        the batch may fail or pause the job (error budget crossed, or cut short by credits):
--               nothing written; the caller runs the checkpoint as a transaction of statements,
--               which queues the job's events (built in TypeScript)
-- Locks: the chunk's row; the job's row FOR KEY SHARE, which a pause or a cancel (FOR UPDATE) waits
-- for, or it for them, and which other chunks' checkpoints and reservations share; the account's
-- row (every charge of the account is checked and written under it: charged once, and never past
-- the balance); last, the job's row for the counters' UPDATE, which waits only for another chunk's
-- same UPDATE, so the job's row is held exclusively from the last statements to the commit, where
-- the transaction of statements held it from its second statement on; then the reservation.
CREATE FUNCTION sluice_checkpoint(
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
    -- One probe of the primary key per hash, per kind (see BILLED_HASHES in pg-core-charges.ts).
    FOR v_k IN 1 .. COALESCE(array_length(p_kinds, 1), 0) LOOP
      SELECT array_agg(b.key_hash) INTO v_found
        FROM billing_cache b
       WHERE b.account_seq = v_seq AND b.kind = p_kinds[v_k] AND b.charged_at > p_since
         AND b.key_hash = ANY (ARRAY(SELECT t.h FROM unnest(p_key_kind, p_key_hash) AS t(k, h) WHERE t.k = v_k - 1));
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
    INSERT INTO billing_cache (account_seq, kind, key_hash, charged_at, ledger_seq)
      SELECT v_seq, p_kinds[t.k + 1], t.h, p_now, v_ledger_seqs[t.k + 1] FROM unnest(p_key_kind, p_key_hash) AS t(k, h)
      ON CONFLICT (account_seq, kind, key_hash) DO UPDATE SET charged_at = EXCLUDED.charged_at, ledger_seq = EXCLUDED.ledger_seq;
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

-- PgBilling.reserve as one statement: the job's row FOR KEY SHARE (a pause or cancel, which
-- releases the job's reservations, waits for it or it for them; a checkpoint's counters do not), then the account's row, under which
-- reservations change, so two chunks reserving together never count the same free credits.
CREATE FUNCTION sluice_reserve(p_account_id TEXT, p_job_id TEXT, p_chunk_index INTEGER, p_wanted BIGINT) RETURNS BIGINT
LANGUAGE plpgsql AS $$
DECLARE
  v_status TEXT;
  v_credits BIGINT;
  v_granted BIGINT;
BEGIN
  SELECT status INTO v_status FROM jobs WHERE id = p_job_id FOR KEY SHARE;
  IF v_status IS DISTINCT FROM 'running' THEN
    DELETE FROM credit_reservations WHERE job_id = p_job_id AND chunk_index = p_chunk_index;
    RETURN 0;
  END IF;
  SELECT credits INTO v_credits FROM accounts WHERE id = p_account_id FOR UPDATE;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'no account %', p_account_id USING ERRCODE = 'P0002';
  END IF;
  v_granted := GREATEST(0, LEAST(p_wanted, v_credits - COALESCE((SELECT SUM(amount) FROM credit_reservations
                 WHERE account_id = p_account_id AND NOT (job_id = p_job_id AND chunk_index = p_chunk_index)), 0)));
  INSERT INTO credit_reservations (job_id, chunk_index, account_id, amount) VALUES (p_job_id, p_chunk_index, p_account_id, v_granted)
    ON CONFLICT (job_id, chunk_index) DO UPDATE SET amount = EXCLUDED.amount;
  RETURN v_granted;
END
$$;
