import { cidrText, keyToBigInt, keyToText, parseCidr, type IpFamily } from '../../shared/ip-keys.js';
import type { IpNetworkPort, IpPrefixRow, IpRowPage, IpRowsByTable, IpSourceRecord, IpTable } from '../ip-network-records.js';
import type { PgDatabase, PgQueryable } from './pg-database.js';

interface TableSpec {
  name: string;
  /** Column and the array type its values travel as through unnest. */
  columns: [string, string][];
  /** Columns as read back (a prefix comes back as its cidr text). */
  select: string;
  conflict?: string;
}

const TABLES: Readonly<Record<IpTable, TableSpec>> = {
  ranges: {
    name: 'ip_ranges',
    columns: [['family', 'smallint'], ['start_key', 'bytea'], ['end_key', 'bytea'], ['registry', 'text'], ['cc', 'text'], ['allocated_at', 'text'], ['status', 'text'], ['opaque_id', 'text']],
    select: 'family, start_key, end_key, registry, cc, allocated_at, status, opaque_id',
  },
  rirAsns: { name: 'ip_rir_asns', columns: [['first_asn', 'bigint'], ['count', 'bigint'], ['registry', 'text'], ['opaque_id', 'text']], select: 'first_asn, count, registry, opaque_id' },
  prefixes: { name: 'ip_prefixes', columns: [['prefix', 'cidr'], ['origins', 'text']], select: 'prefix::text AS prefix, origins' },
  // A file that names one AS twice: the later line wins, as SQLite's INSERT OR REPLACE has it.
  asNames: {
    name: 'ip_as_names',
    columns: [['asn', 'bigint'], ['name', 'text'], ['org_id', 'text'], ['country', 'text']],
    select: 'asn, name, org_id, country',
    conflict: 'ON CONFLICT (generation, asn) DO UPDATE SET name = excluded.name, org_id = excluded.org_id, country = excluded.country',
  },
  asOrgs: {
    name: 'ip_as_orgs',
    columns: [['org_id', 'text'], ['name', 'text'], ['country', 'text']],
    select: 'org_id, name, country',
    conflict: 'ON CONFLICT (generation, org_id) DO UPDATE SET name = excluded.name, country = excluded.country',
  },
  asRelationships: { name: 'ip_as_relationships', columns: [['a', 'bigint'], ['b', 'bigint'], ['rel', 'smallint']], select: 'a, b, rel', conflict: 'ON CONFLICT (generation, a, b) DO UPDATE SET rel = excluded.rel' },
};

type Values = unknown[];
const prefixText = (r: IpPrefixRow) => `${keyToText(r.family, r.startKey)}/${r.length}`;

const TO_VALUES: { [T in IpTable]: (r: IpRowsByTable[T]) => Values } = {
  ranges: (r) => [r.family, r.startKey, r.endKey, r.registry, r.cc, r.allocatedAt, r.status, r.opaqueId],
  rirAsns: (r) => [r.firstAsn, r.count, r.registry, r.opaqueId],
  prefixes: (r) => [prefixText(r), r.origins],
  asNames: (r) => [r.asn, r.name, r.orgId, r.country],
  asOrgs: (r) => [r.orgId, r.name, r.country],
  asRelationships: (r) => [r.a, r.b, r.rel],
};

type Row = Record<string, unknown>;

function prefixFromText(text: string, origins: string): IpPrefixRow {
  const cidr = parseCidr(text)!;
  return { family: cidr.family, startKey: cidr.key, length: cidr.length, origins };
}

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
  prefixes: (r) => prefixFromText(r.prefix as string, r.origins as string),
  asNames: (r) => ({ asn: r.asn as number, name: r.name as string, orgId: r.org_id as string | null, country: r.country as string | null }),
  asOrgs: (r) => ({ orgId: r.org_id as string, name: r.name as string, country: r.country as string | null }),
  asRelationships: (r) => ({ a: r.a as number, b: r.b as number, rel: r.rel as -1 | 0 }),
};

/**
 * The IP network data in PostgreSQL, the same generations as SQLite's. A flip is one transaction
 * at READ COMMITTED: readers see the old pointer (and its rows, deleted in the same transaction)
 * until it commits, then the new one.
 */
export class PgIpNetwork implements IpNetworkPort {
  constructor(private readonly db: PgDatabase) {}

  async beginImport(source: string, now: number): Promise<number> {
    return this.db.transaction(async (tx) => {
      const { rows: stale } = await tx.query<{ generation: number }>('DELETE FROM ip_imports WHERE source = $1 RETURNING generation', [source]);
      for (const { generation } of stale) await dropGeneration(tx, generation);
      const { rows } = await tx.query<{ generation: number }>('INSERT INTO ip_imports (source, started_at) VALUES ($1, $2) RETURNING generation', [source, now]);
      return rows[0]!.generation;
    });
  }

  async write<T extends IpTable>(generation: number, table: T, rows: readonly IpRowsByTable[T][]): Promise<void> {
    if (rows.length === 0) return;
    const spec = TABLES[table];
    const values = rows.map(TO_VALUES[table] as (r: IpRowsByTable[T]) => Values);
    const columns = spec.columns.map(([c]) => c);
    // unnest of one array per column: one statement per batch, whatever its size.
    await this.db.query(
      `INSERT INTO ${spec.name} (generation, ${columns.join(', ')})
       SELECT $1, ${columns.join(', ')} FROM unnest(${spec.columns.map(([, type], i) => `$${i + 2}::${type}[]`).join(', ')}) AS r (${columns.join(', ')})
       ${spec.conflict ?? ''}`,
      [generation, ...spec.columns.map((_, i) => values.map((v) => v[i]))],
    );
  }

  async commitImport(input: { source: string; generation: number; dataAsOf: string; rows: number; now: number }): Promise<void> {
    await this.db.transaction(async (tx) => {
      const { rows: old } = await tx.query<{ generation: number }>('SELECT generation FROM ip_sources WHERE source = $1 FOR UPDATE', [input.source]);
      await tx.query(
        `INSERT INTO ip_sources (source, generation, data_as_of, imported_at, rows) VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT (source) DO UPDATE SET generation = excluded.generation, data_as_of = excluded.data_as_of, imported_at = excluded.imported_at, rows = excluded.rows`,
        [input.source, input.generation, input.dataAsOf, input.now, input.rows],
      );
      await tx.query('DELETE FROM ip_imports WHERE generation = $1', [input.generation]);
      if (old[0] !== undefined && old[0].generation !== input.generation) await dropGeneration(tx, old[0].generation);
    });
  }

  async sources(): Promise<IpSourceRecord[]> {
    const { rows } = await this.db.query<{ source: string; generation: number; data_as_of: string; imported_at: number; rows: number }>(
      'SELECT source, generation, data_as_of, imported_at, rows FROM ip_sources ORDER BY source COLLATE "C"',
    );
    return rows.map((r) => ({ source: r.source, generation: r.generation, dataAsOf: r.data_as_of, importedAt: r.imported_at, rows: r.rows }));
  }

  async readPage<T extends IpTable>(generation: number, table: T, after: number, limit: number): Promise<IpRowPage<IpRowsByTable[T]>> {
    const spec = TABLES[table];
    const { rows } = await this.db.query<Row>(`SELECT id, ${spec.select} FROM ${spec.name} WHERE generation = $1 AND id > $2 ORDER BY id LIMIT $3`, [generation, after, limit]);
    const from = FROM_ROW[table] as (r: Row) => IpRowsByTable[T];
    return { rows: rows.map(from), next: rows.length < limit ? undefined : (rows[rows.length - 1]!.id as number) };
  }

  /** The GiST index answers `prefix >>= address`: every covering prefix, longest first. */
  async coveringPrefixes(generation: number, family: IpFamily, key: Buffer): Promise<IpPrefixRow[]> {
    const bits = family === 4 ? 32 : 128;
    const { rows } = await this.db.query<Row>(
      'SELECT prefix::text AS prefix, origins FROM ip_prefixes WHERE prefix >>= $1::inet AND generation = $2 ORDER BY masklen(prefix) DESC, id',
      [cidrText(family, keyToBigInt(key), bits), generation],
    );
    return rows.map(FROM_ROW.prefixes);
  }
}

async function dropGeneration(tx: PgQueryable, generation: number): Promise<void> {
  for (const spec of Object.values(TABLES)) await tx.query(`DELETE FROM ${spec.name} WHERE generation = $1`, [generation]);
}
