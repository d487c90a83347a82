import { positionalSql } from '../../src/infra/queue';

describe("the job queue's positional SQL runs as parameterised Prisma.Sql", () => {
  test('placeholders become parameters in order, repeated ones repeat their value, nothing is interpolated', () => {
    const sql = positionalSql(
      'INSERT INTO j (a, b) VALUES ($1, $2::jsonb) ON CONFLICT (a) DO UPDATE SET c = $1, d = $10',
      ["x'; DROP TABLE j; --", '{"k":1}', 3, 4, 5, 6, 7, 8, 9, 'ten'],
    );
    expect(sql.sql).toBe('INSERT INTO j (a, b) VALUES (?, ?::jsonb) ON CONFLICT (a) DO UPDATE SET c = ?, d = ?');
    expect(sql.values).toEqual(["x'; DROP TABLE j; --", '{"k":1}', "x'; DROP TABLE j; --", 'ten']);
  });

  test('a placeholder without a value is refused', () => {
    expect(() => positionalSql('SELECT $2', [1])).toThrow(/parameter \$2/);
  });
});
