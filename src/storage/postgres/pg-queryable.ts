/** What runs a statement: the pool or one transaction's client. Its own file so that a migration step can take one without importing the pool. */
export interface PgQueryable {
  query<R extends object = Record<string, unknown>>(sql: string, params?: readonly unknown[]): Promise<{ rows: R[]; rowCount: number }>;
}
