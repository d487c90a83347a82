import { Query, type CustomTypesConfig, type Pool, type QueryResult, type QueryResultRow } from 'pg';

/**
 * A named statement of the hottest reads (HEAD /api/assets/hash/{hash}, GET /api/assets/{id}) run on the pool:
 * PostgreSQL prepares it on each connection the first time it runs there; after that it is only bound and executed.
 *
 * Each run hands the pool pg's own `Query`, made from the statement's text and then given its name. A query passed as
 * a config object (`{ name, text, values }`) is first copied by pg property descriptor by property descriptor
 * (`normalizeQueryConfig`), a cost the hottest reads show (`node bench/profiles/profile-rest.cjs head`); a query made
 * from a string is not copied.
 */
export class PreparedStatement<R extends QueryResultRow = QueryResultRow> {
  /** `types`: the statement's own type parsers (e.g. none: every column as the text PostgreSQL printed). */
  constructor(
    readonly name: string,
    readonly text: string,
    readonly types?: CustomTypesConfig,
  ) {}

  run(pool: Pool, values: unknown[]): Promise<QueryResult<R>> {
    const types = this.types;
    const query = types ? new Query<R>({ text: this.text, values, types }) : new Query<R>(this.text, values);
    (query as { name?: string }).name = this.name;
    // pool.query resolves a submittable query with its result, as it does a config object (pg's typings say otherwise).
    return pool.query(query) as unknown as Promise<QueryResult<R>>;
  }
}
