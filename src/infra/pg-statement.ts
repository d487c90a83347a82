import type { CustomTypesConfig, Pool, QueryConfig, QueryResult, QueryResultRow } from 'pg';

/**
 * A named statement of the hottest reads (HEAD /api/assets/hash/{hash}, GET /api/assets/{id}) run on the pool, as pg
 * documents them (`{ name, text, values }`): PostgreSQL prepares it on each connection the first time it runs there;
 * after that it is only bound and executed.
 */
export class PreparedStatement<R extends QueryResultRow = QueryResultRow> {
  /** `types`: the statement's own type parsers (e.g. none: every column as the text PostgreSQL printed). */
  constructor(
    readonly name: string,
    readonly text: string,
    readonly types?: CustomTypesConfig,
  ) {}

  run(pool: Pool, values: unknown[]): Promise<QueryResult<R>> {
    const config: QueryConfig = { name: this.name, text: this.text, values };
    if (this.types) config.types = this.types;
    return pool.query<R>(config);
  }
}
