import { FAMILY_BITS, bigIntToKey, prefixBounds, type IpFamily } from '../../shared/ip-keys.js';
import type { IpNetworkPort, IpPrefixRow, IpRowPage, IpRowsByTable, IpSourceRecord, IpTable } from '../ip-network-records.js';
import type { Db } from './open-database.js';

type RowStatement = { run(...params: unknown[]): unknown; all(...params: unknown[]): unknown[] };

const TABLES: Readonly<Record<IpTable, { name: string; columns: string[]; upsert?: string }>> = {
  ranges: { name: 'ip_ranges', columns: ['family', 'start_key', 'end_key', 'registry', 'cc', 'allocated_at', 'status', 'opaque_id'] },
  rirAsns: { name: 'ip_rir_asns', columns: ['first_asn', 'count', 'registry', 'opaque_id'] },
  prefixes: { name: 'ip_prefixes', columns: ['family', 'start_key', 'length', 'origins'] },
  // A file that names one AS twice: the later line wins, as a re-read file would have it.
  asNames: { name: 'ip_as_names', columns: ['asn', 'name', 'org_id', 'country'], upsert: 'OR REPLACE' },
  asOrgs: { name: 'ip_as_orgs', columns: ['org_id', 'name', 'country'], upsert: 'OR REPLACE' },
  asRelationships: { name: 'ip_as_relationships', columns: ['a', 'b', 'rel'], upsert: 'OR REPLACE' },
};

type Values = (string | number | Buffer | null)[];

const TO_VALUES: { [T in IpTable]: (r: IpRowsByTable[T]) => Values } = {
  ranges: (r) => [r.family, r.startKey, r.endKey, r.registry, r.cc, r.allocatedAt, r.status, r.opaqueId],
  rirAsns: (r) => [r.firstAsn, r.count, r.registry, r.opaqueId],
  prefixes: (r) => [r.family, r.startKey, r.length, r.origins],
  asNames: (r) => [r.asn, r.name, r.orgId, r.country],
  asOrgs: (r) => [r.orgId, r.name, r.country],
  asRelationships: (r) => [r.a, r.b, r.rel],
};

type Row = Record<string, unknown>;
const FROM_ROW: { [T in IpTable]: (r: Row) => IpRowsByTable[T] } = {
  ranges: (r) => ({
    family: r.family as IpFamily,
    startKey: r.start_key as Buffer,
    endKey: r.end_key as Buffer,
    registry: r.registry as string,
    cc: r.cc as string | null,
    allocatedAt: r.allocated_at as string | null,
    status: r.status as string,
    opaqueId: r.opaque_id as string | null,
  }),
  rirAsns: (r) => ({ firstAsn: r.first_asn as number, count: r.count as number, registry: r.registry as string, opaqueId: r.opaque_id as string }),
  prefixes: (r) => ({ family: r.family as IpFamily, startKey: r.start_key as Buffer, length: r.length as number, origins: r.origins as string }),
  asNames: (r) => ({ asn: r.asn as number, name: r.name as string, orgId: r.org_id as string | null, country: r.country as string | null }),
  asOrgs: (r) => ({ orgId: r.org_id as string, name: r.name as string, country: r.country as string | null }),
  asRelationships: (r) => ({ a: r.a as number, b: r.b as number, rel: r.rel as -1 | 0 }),
};

/**
 * The IP network data in SQLite. A flip is one IMMEDIATE transaction: the pointer moves and the
 * replaced generation's rows go with it, so no reader ever finds a current generation half gone.
 */
export class SqliteIpNetwork implements IpNetworkPort {
  private readonly inserts;
  private readonly pages;
  private readonly prefixAt;

  constructor(private readonly db: Db) {
    this.inserts = Object.fromEntries(
      Object.entries(TABLES).map(([table, t]) => [
        table,
        db.prepare(`INSERT ${t.upsert ?? ''} INTO ${t.name} (generation, ${t.columns.join(', ')}) VALUES (?, ${t.columns.map(() => '?').join(', ')})`),
      ]),
    ) as unknown as Record<IpTable, RowStatement>;
    this.pages = Object.fromEntries(
      Object.entries(TABLES).map(([table, t]) => [
        table,
        db.prepare(`SELECT rowid AS seq, ${t.columns.join(', ')} FROM ${t.name} WHERE generation = ? AND rowid > ? ORDER BY rowid LIMIT ?`),
      ]),
    ) as unknown as Record<IpTable, RowStatement>;
    this.prefixAt = db.prepare('SELECT family, start_key, length, origins FROM ip_prefixes WHERE generation = ? AND family = ? AND start_key = ? AND length = ?');
  }

  async beginImport(source: string, now: number): Promise<number> {
    return this.db
      .transaction(() => {
        this.deleteStale(source);
        return Number(this.db.prepare('INSERT INTO ip_imports (source, started_at) VALUES (?, ?)').run(source, now).lastInsertRowid);
      })
      .immediate();
  }

  /** Rows of the source's generations that never became current: what killed imports left. */
  private deleteStale(source: string): void {
    const stale = this.db.prepare('SELECT generation FROM ip_imports WHERE source = ?').all(source) as { generation: number }[];
    for (const { generation } of stale) this.dropGeneration(generation);
    this.db.prepare('DELETE FROM ip_imports WHERE source = ?').run(source);
  }

  private dropGeneration(generation: number): void {
    for (const t of Object.values(TABLES)) this.db.prepare(`DELETE FROM ${t.name} WHERE generation = ?`).run(generation);
  }

  async write<T extends IpTable>(generation: number, table: T, rows: readonly IpRowsByTable[T][]): Promise<void> {
    const insert = this.inserts[table];
    const values = TO_VALUES[table] as (r: IpRowsByTable[T]) => Values;
    this.db
      .transaction(() => {
        for (const row of rows) insert.run(generation, ...values(row));
      })
      .immediate();
  }

  async commitImport(input: { source: string; generation: number; dataAsOf: string; rows: number; now: number }): Promise<void> {
    this.db
      .transaction(() => {
        const old = this.db.prepare('SELECT generation FROM ip_sources WHERE source = ?').get(input.source) as { generation: number } | undefined;
        this.db
          .prepare(
            `INSERT INTO ip_sources (source, generation, data_as_of, imported_at, rows) VALUES (?, ?, ?, ?, ?)
             ON CONFLICT (source) DO UPDATE SET generation = excluded.generation, data_as_of = excluded.data_as_of, imported_at = excluded.imported_at, rows = excluded.rows`,
          )
          .run(input.source, input.generation, input.dataAsOf, input.now, input.rows);
        this.db.prepare('DELETE FROM ip_imports WHERE generation = ?').run(input.generation);
        if (old !== undefined && old.generation !== input.generation) this.dropGeneration(old.generation);
      })
      .immediate();
  }

  async sources(): Promise<IpSourceRecord[]> {
    const rows = this.db.prepare('SELECT source, generation, data_as_of, imported_at, rows FROM ip_sources ORDER BY source').all() as {
      source: string;
      generation: number;
      data_as_of: string;
      imported_at: number;
      rows: number;
    }[];
    return rows.map((r) => ({ source: r.source, generation: r.generation, dataAsOf: r.data_as_of, importedAt: r.imported_at, rows: r.rows }));
  }

  async readPage<T extends IpTable>(generation: number, table: T, after: number, limit: number): Promise<IpRowPage<IpRowsByTable[T]>> {
    const rows = this.pages[table].all(generation, after, limit) as Row[];
    const from = FROM_ROW[table] as (r: Row) => IpRowsByTable[T];
    return { rows: rows.map(from), next: rows.length < limit ? undefined : (rows[rows.length - 1]!.seq as number) };
  }

  /** One point query of the key index per prefix length, longest first: at most 33 (IPv4) or 129. */
  async coveringPrefixes(generation: number, family: IpFamily, key: Buffer): Promise<IpPrefixRow[]> {
    const out: IpPrefixRow[] = [];
    for (let length = FAMILY_BITS[family]; length >= 0; length--) {
      const start = bigIntToKey(prefixBounds(family, key, length).first, family);
      for (const row of this.prefixAt.all(generation, family, start, length) as Row[]) out.push(FROM_ROW.prefixes(row));
    }
    return out;
  }
}
