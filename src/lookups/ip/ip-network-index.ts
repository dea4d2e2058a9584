import { AppError, ERROR_CODES } from '../../shared/errors.js';
import { IP_SOURCE_KINDS, type IpNetworkPort, type IpRowsByTable, type IpSourceRecord, type IpTable } from '../../storage/ip-network-records.js';
import { asDirectory, asNeighbours, asnsByHolder, rirTables, SnapshotBuilder, type IpNetworkData } from './ip-network-data.js';

const PAGE_ROWS = 50_000;
/** A load that keeps finding the store moved on (imports back to back) gives up rather than spin. */
const MAX_LOAD_ATTEMPTS = 5;

const signatureOf = (sources: readonly IpSourceRecord[]) => sources.map((s) => `${s.source}:${s.generation}`).join(',');

/**
 * The IP network data of the store, held in memory for lookups at memory speed. Before each batch
 * of lookups `current()` reads the sources' generations (one small query); when another process's
 * import has flipped one, the data is read again before the batch is answered. A load is checked
 * the optimistic way: the generations read before and after it must be the same, else a flip came
 * in between (and may have deleted rows it read), and it reads again. So every answer in every
 * process comes from whole imports, and from the newest ones committed when its batch began.
 */
export class IpNetworkIndex {
  private data: IpNetworkData | undefined;
  private loading: Promise<IpNetworkData> | undefined;

  constructor(private readonly port: IpNetworkPort) {}

  async current(): Promise<IpNetworkData> {
    const sources = await this.port.sources();
    if (this.data?.signature === signatureOf(sources)) return this.data;
    // Concurrent batches share one load rather than each reading the whole store.
    this.loading ??= this.load(sources).finally(() => {
      this.loading = undefined;
    });
    return this.loading;
  }

  private async load(initial: IpSourceRecord[]): Promise<IpNetworkData> {
    let sources = initial;
    for (let attempt = 1; ; attempt++) {
      const data = await this.read(sources);
      const after = await this.port.sources();
      if (signatureOf(after) === data.signature) {
        this.data = data;
        return data;
      }
      if (attempt >= MAX_LOAD_ATTEMPTS) throw new AppError(ERROR_CODES.lookupFailed, 'the IP network data kept changing while it was read; try again', { retryable: true });
      sources = after;
    }
  }

  private async read(sources: IpSourceRecord[]): Promise<IpNetworkData> {
    const bySource = new Map(sources.map((s) => [s.source, s]));
    const data: IpNetworkData = { signature: signatureOf(sources), rir: undefined, snapshots: [], names: undefined, relationships: undefined };
    const rir = bySource.get(IP_SOURCE_KINDS.rir);
    if (rir) {
      data.rir = {
        dataAsOf: rir.dataAsOf,
        byFamily: rirTables(await this.all(rir.generation, 'ranges')),
        asnsByHolder: asnsByHolder(await this.all(rir.generation, 'rirAsns')),
      };
    }
    for (const s of sources.filter((x) => x.source.startsWith(`${IP_SOURCE_KINDS.pfx2as}:`)).sort((a, b) => (a.dataAsOf < b.dataAsOf ? -1 : 1))) {
      const builder = new SnapshotBuilder();
      await this.pages(s.generation, 'prefixes', (rows) => builder.add(rows));
      data.snapshots.push(builder.build(s.source.slice(IP_SOURCE_KINDS.pfx2as.length + 1)));
    }
    const names = bySource.get(IP_SOURCE_KINDS.asnames);
    if (names) data.names = { dataAsOf: names.dataAsOf, ...asDirectory(await this.all(names.generation, 'asNames'), await this.all(names.generation, 'asOrgs')) };
    const rel = bySource.get(IP_SOURCE_KINDS.asrel);
    if (rel) {
      const neighbours = new Map();
      await this.pages(rel.generation, 'asRelationships', (rows) => asNeighbours(rows, neighbours));
      data.relationships = { dataAsOf: rel.dataAsOf, neighbours };
    }
    return data;
  }

  private async pages<T extends IpTable>(generation: number, table: T, each: (rows: IpRowsByTable[T][]) => void): Promise<void> {
    let after: number | undefined = 0;
    while (after !== undefined) {
      const page: { rows: IpRowsByTable[T][]; next: number | undefined } = await this.port.readPage(generation, table, after, PAGE_ROWS);
      each(page.rows);
      after = page.next;
    }
  }

  private async all<T extends IpTable>(generation: number, table: T): Promise<IpRowsByTable[T][]> {
    const out: IpRowsByTable[T][] = [];
    await this.pages(generation, table, (rows) => {
      for (const r of rows) out.push(r);
    });
    return out;
  }
}
