import type { BillingHash } from '../billing-key.js';
import type { Db } from './open-database.js';

/**
 * Log rows merged into billing_cache at once. A merge writes each leaf page of billing_cache it
 * touches once, however many of its keys arrive; at 1,000,000 keys (about 9,000 leaf pages) a
 * merge of 65,536 touches most of them, against one page per key when keys went in a batch at a
 * time. Bigger merges write less in all but hold the checkpoint that runs them longer and keep a
 * bigger copy of the log in each process (about 100 bytes a row).
 */
export const BILLING_MERGE_ROWS = 65_536;

/**
 * The repeat-free billing cache as two tables: new charges appended to `billing_log` in the
 * checkpoint that makes them (a rowid append), and `billing_cache`, a B-tree keyed by
 * (account, kind, key hash) that the log is merged into, sorted, every BILLING_MERGE_ROWS charges
 * (migration 020). A key is billed if either table says so.
 *
 * Each process keeps a copy of the log in memory, read on from the last seq it has seen, so that
 * a check is one B-tree probe per key plus a Map lookup, with no index on the log to keep up. The
 * copy holds committed rows only: it is read at the start of a check and never written from the
 * caller's own appends, which the next check reads back once they have committed; a transaction
 * that rolls back leaves the copy as it was. Seqs are AUTOINCREMENT and commits are serialised, so
 * no row can commit below a seq already read. A merge (by any process) moves `merged_through`,
 * and a copy read under an older mark is read again from the log.
 *
 * A check inside a write transaction sees everything committed before it, which is what charge-once
 * rests on (the checkpoint checks, then appends, under SQLite's single writer). A check outside one
 * (a plan's read) may miss a merge that commits between its two reads; it then reports a key
 * unbilled that the checkpoint will find billed, and the batch is planned again.
 */
export class SqliteBillingIndex {
  private readonly stmts;
  /** The merge mark the copy was read under; -1 before the first read. */
  private mergedThrough = -1;
  /** Highest log seq in the copy. */
  private seen = 0;
  /**
   * Per (account, kind): hash (hex) → charged_at of the latest log row for it. Hex, the form the
   * statements take the hashes in, so that one string per key serves the SQL and the maps.
   */
  private readonly tail = new Map<string, Map<string, number>>();
  /**
   * Per (account, kind): hash (hex) → the `since` of a check, under the current merge mark, that
   * found it unpaid in billing_cache and the log. Emptied when the mark moves or it grows past
   * UNPAID_LIMIT keys.
   */
  private readonly unpaid = new Map<string, Map<string, number>>();
  private unpaidCount = 0;
  /**
   * This process's appends in the transaction now open, for `afterCommit` to put in the copy, so
   * that the next check need not read them back; any check drops what was not confirmed.
   */
  private appended: { last: number; lastHex: string; rows: { scope: string; hexes: string[]; chargedAt: number }[]; readBack: boolean } | undefined;

  constructor(
    private readonly db: Db,
    private readonly mergeRows = BILLING_MERGE_ROWS,
  ) {
    this.stmts = {
      // One primary-key probe per hash given, in their order: a CROSS JOIN keeps SQLite from first
      // sorting them into a temporary index, as `key_hash IN (SELECT ...)` makes it do. JSON carries
      // no blobs, so the hashes go as hex; the answer is their positions in the list.
      probe: db.prepare<[string, number, string, number], { i: number }>(
        'SELECT j.key AS i FROM json_each(?) j CROSS JOIN billing_cache b ON b.account_seq = ? AND b.kind = ? AND b.key_hash = unhex(j.value) WHERE b.charged_at > ?',
      ),
      mark: db.prepare<[], number>('SELECT merged_through AS m FROM billing_merges WHERE id = 1').pluck(),
      logAfter: db.prepare<[number], { seq: number; accountSeq: number; kind: string; hex: string; chargedAt: number }>(
        'SELECT seq, account_seq AS accountSeq, kind, lower(hex(key_hash)) AS hex, charged_at AS chargedAt FROM billing_log WHERE seq > ? ORDER BY seq',
      ),
      logHex: db.prepare<[number], string>('SELECT lower(hex(key_hash)) FROM billing_log WHERE seq = ?').pluck(),
      append: db.prepare(
        'INSERT INTO billing_log (account_seq, kind, key_hash, charged_at, ledger_seq) SELECT ?, ?, unhex(j.value), ?, ? FROM json_each(?) j ORDER BY j.key',
      ),
      // Sorted by key, so that billing_cache's pages are written in order, each once; a key logged
      // twice (charged again after its window) ends with its latest row.
      merge: db.prepare(
        `INSERT INTO billing_cache (account_seq, kind, key_hash, charged_at, ledger_seq)
           SELECT account_seq, kind, key_hash, charged_at, ledger_seq FROM billing_log WHERE seq <= ?
            ORDER BY account_seq, kind, key_hash, seq
         ON CONFLICT (account_seq, kind, key_hash) DO UPDATE SET charged_at = excluded.charged_at, ledger_seq = excluded.ledger_seq`,
      ),
      dropMerged: db.prepare('DELETE FROM billing_log WHERE seq <= ?'),
      setMark: db.prepare('UPDATE billing_merges SET merged_through = ? WHERE id = 1'),
      lastSeq: db.prepare<[], number | null>('SELECT max(seq) AS s FROM billing_log').pluck(),
    };
  }

  /**
   * Positions in `hashes` of those the account paid for under `kind` after `since`. A key this
   * process found unpaid since the last merge needs no B-tree probe: billing_cache changes only by
   * merges, so the probe's answer stands, and every charge made since is in the copy of the log.
   * That spares a checkpoint the second probe of the keys its plan has just probed.
   */
  billedAmong(accountSeq: number, kind: string, hashes: readonly BillingHash[], since: number): Set<number> {
    if (hashes.length === 0) return new Set();
    this.sync();
    const scope = scopeOf(accountSeq, kind);
    const hexes = hashes.map((hash) => hash.toString('hex'));
    const unpaid = this.unpaid.get(scope);
    const toProbe: number[] = [];
    hexes.forEach((hex, i) => {
      const unpaidSince = unpaid?.get(hex);
      if (unpaidSince === undefined || since < unpaidSince) toProbe.push(i);
    });
    const billed = new Set<number>();
    if (toProbe.length > 0) {
      const list = JSON.stringify(toProbe.length === hexes.length ? hexes : toProbe.map((i) => hexes[i]));
      for (const { i } of this.stmts.probe.all(list, accountSeq, kind, since) as { i: number }[]) billed.add(toProbe[i]!);
    }
    const tail = this.tail.get(scope);
    const remember = this.unpaidIn(scope);
    hexes.forEach((hex, i) => {
      if (billed.has(i)) return;
      if ((tail?.get(hex) ?? -Infinity) > since) billed.add(i);
      else if (remember.get(hex) !== since) {
        remember.set(hex, since);
        this.unpaidCount++;
      }
    });
    return billed;
  }

  /**
   * Records charges inside the caller's write transaction, after `billedAmong` checked them in it,
   * and no check may follow in that transaction: it would read the uncommitted rows into the copy,
   * a rollback would take them back, and their seqs could go to another process's charges, which
   * the copy would then never read. Merges the log when it has grown to `mergeRows`.
   */
  record(accountSeq: number, kind: string, hashes: readonly BillingHash[], now: number, ledgerSeq: number): void {
    if (hashes.length === 0) return;
    const appended = (this.appended ??= { last: this.seen, lastHex: '', rows: [], readBack: false });
    const hexes = hashes.map((hash) => hash.toString('hex'));
    // One statement for the batch; its rows take consecutive seqs, in the list's order.
    const last = Number(this.stmts.append.run(accountSeq, kind, now, ledgerSeq, JSON.stringify(hexes)).lastInsertRowid);
    // Not the seqs that follow the copy's: some other way of counting than afterCommit relies on.
    if (last - hashes.length !== appended.last) appended.readBack = true;
    appended.last = last;
    appended.lastHex = hexes[hexes.length - 1]!;
    appended.rows.push({ scope: scopeOf(accountSeq, kind), hexes, chargedAt: now });
    if (last - this.mergedThrough >= this.mergeRows) {
      this.mergeThrough(last);
      appended.readBack = true;
    }
  }

  /**
   * Called once the transaction that recorded charges has committed, straight after it (nothing
   * may run between): its rows go into the copy, which then runs up to their last seq. Right, as
   * the copy was read up to the newest seq inside that transaction, under SQLite's one writer,
   * and the appends took the seqs that follow. Inside an outer transaction the commit is not
   * final, and after a merge the copy is read again anyway: then the rows are left to be read, as
   * they are when the last of them is not in the log (the transaction rolled back).
   */
  afterCommit(): void {
    const appended = this.appended;
    this.appended = undefined;
    if (!appended || appended.readBack || this.db.inTransaction) return;
    // Its last row, read back: a caller that took a rollback for a commit finds it missing.
    if (this.stmts.logHex.get(appended.last) !== appended.lastHex) return;
    for (const { scope, hexes, chargedAt } of appended.rows) {
      const tail = this.tailIn(scope);
      for (const hex of hexes) tail.set(hex, chargedAt);
    }
    this.seen = appended.last;
  }

  /** Moves the whole log into billing_cache, inside the caller's write transaction. */
  mergeAll(): void {
    const last = this.stmts.lastSeq.get() ?? null;
    if (last !== null) this.mergeThrough(last);
  }

  private mergeThrough(seq: number): void {
    this.stmts.merge.run(seq);
    this.stmts.dropMerged.run(seq);
    this.stmts.setMark.run(seq);
    // The copy is left as it is: the next read sees the new mark (if this transaction commits) and
    // reads the log again.
  }

  private tailIn(scope: string): Map<string, number> {
    let tail = this.tail.get(scope);
    if (tail === undefined) this.tail.set(scope, (tail = new Map()));
    return tail;
  }

  private unpaidIn(scope: string): Map<string, number> {
    if (this.unpaidCount >= UNPAID_LIMIT) {
      this.unpaid.clear();
      this.unpaidCount = 0;
    }
    let unpaid = this.unpaid.get(scope);
    if (unpaid === undefined) this.unpaid.set(scope, (unpaid = new Map()));
    return unpaid;
  }

  /** Reads on from the copy's last seq, or the whole log again after a merge. */
  private sync(): void {
    this.appended = undefined;
    const mark = this.stmts.mark.get()!;
    if (mark !== this.mergedThrough) {
      this.tail.clear();
      this.unpaid.clear();
      this.unpaidCount = 0;
      this.mergedThrough = mark;
      this.seen = mark;
    }
    for (const row of this.stmts.logAfter.iterate(this.seen)) {
      this.tailIn(scopeOf(row.accountSeq, row.kind)).set(row.hex, row.chargedAt);
      this.seen = row.seq;
    }
  }
}

/** Keys remembered unpaid, at about 100 bytes each; past it they are forgotten and probed again. */
const UNPAID_LIMIT = 65_536;

function scopeOf(accountSeq: number, kind: string): string {
  return `${accountSeq}\0${kind}`;
}
