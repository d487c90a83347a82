import type { Pool, QueryResult, QueryResultRow } from 'pg';

/**
 * A named statement of the hottest reads (HEAD /api/assets/hash/{hash}, GET /api/assets/{id}, the listing's pages)
 * run on the pool, as pg documents them (`{ name, text, values }`): PostgreSQL prepares it on each connection the
 * first time it runs there; after that it is only bound and executed.
 */
export class PreparedStatement<R extends QueryResultRow = QueryResultRow> {
  constructor(
    readonly name: string,
    readonly text: string,
  ) {}

  run(pool: Pool, values: unknown[]): Promise<QueryResult<R>> {
    return pool.query<R>({ name: this.name, text: this.text, values });
  }
}
