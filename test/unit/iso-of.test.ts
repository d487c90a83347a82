import { isoOf } from '../../src/http/rest/read-model/asset-page';

/** A timestamp(3) as PostgreSQL prints it in UTC, ISO DateStyle: the fraction's trailing zeros dropped, or none. */
function pgText(d: Date): string {
  const iso = d.toISOString();
  const fraction = iso.slice(20, 23).replace(/0+$/, '');
  return `${iso.slice(0, 10)} ${iso.slice(11, 19)}${fraction ? '.' + fraction : ''}`;
}

// GET /api/assets reads its timestamps as PostgreSQL prints them (http/rest/read-model/asset-page.ts): isoOf must give
// toISOString's text of the Date pg's parser made of them, character for character.
test('isoOf prints what toISOString prints, for every millisecond of a second and random instants of 1000–9999', () => {
  const dates: Date[] = [];
  for (let ms = 0; ms < 1000; ms++) dates.push(new Date(Date.UTC(2026, 10, 23, 1, 2, 3, ms)));
  const [min, max] = [Date.UTC(1000, 0, 1), Date.UTC(9999, 11, 31, 23, 59, 59, 999)];
  for (let i = 0; i < 100_000; i++) dates.push(new Date(min + Math.floor(Math.random() * (max - min))));
  expect(dates.filter((d) => isoOf(pgText(d)) !== d.toISOString()).map((d) => [pgText(d), isoOf(pgText(d))])).toEqual(
    [],
  );
});

test('isoOf truncates digits past the millisecond, as pg truncates them', () => {
  expect(isoOf('2026-11-23 01:02:03.456789')).toBe('2026-11-23T01:02:03.456Z');
  expect(isoOf('2026-11-23 01:02:03.0001')).toBe('2026-11-23T01:02:03.000Z');
});
