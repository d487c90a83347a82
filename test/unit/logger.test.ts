import { createLogger } from '../../src/infra/logger';

/** The log line's fields, as operators' tools and the process tests read them (docs/operations.md, Logs). */
function collect(level: Parameters<typeof createLogger>[0], base: Record<string, unknown> = {}) {
  const lines: string[] = [];
  const logger = createLogger(level, base, (l) => lines.push(l));
  return { logger, lines, records: () => lines.map((l) => JSON.parse(l) as Record<string, unknown>) };
}

test('one JSON object per line: ISO time, level by name, msg, the base and child fields, the line fields', () => {
  const { logger, lines, records } = collect('info', { service: 'asset-service' });
  logger.child({ request_id: 'r-1' }).info('request', { method: 'GET', status: 200, duration_ms: 1.5 });
  expect(lines).toHaveLength(1);
  expect(lines[0]!.endsWith('\n')).toBe(true);
  expect(lines[0]).toContain('"msg":"request"');
  const [r] = records();
  expect(r).toEqual({
    time: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
    level: 'info',
    msg: 'request',
    service: 'asset-service',
    request_id: 'r-1',
    method: 'GET',
    status: 200,
    duration_ms: 1.5,
  });
});

test('lines below LOG_LEVEL are dropped; silent drops all', () => {
  const warn = collect('warn');
  warn.logger.debug('d');
  warn.logger.info('i');
  warn.logger.warn('w');
  warn.logger.error('e');
  expect(warn.records().map((r) => [r.level, r.msg])).toEqual([
    ['warn', 'w'],
    ['error', 'e'],
  ]);
  const silent = collect('silent');
  silent.logger.error('e');
  expect(silent.lines).toEqual([]);
  const debug = collect('debug');
  debug.logger.debug('d');
  expect(debug.records()[0]).toMatchObject({ level: 'debug', msg: 'd' });
});

test('errors under any key become name, message, stack and code; bigints become text; undefined is left out', () => {
  const { logger, records } = collect('info');
  const err = Object.assign(new Error('disk full'), { code: 'ENOSPC' });
  logger.error('store failed', { err, cause: new TypeError('bad'), bytes: 12n, absent: undefined });
  const [r] = records();
  expect(r!.err).toEqual({ name: 'Error', message: 'disk full', stack: err.stack, code: 'ENOSPC' });
  expect(r!.cause).toMatchObject({ name: 'TypeError', message: 'bad' });
  expect(r!.bytes).toBe('12');
  expect('absent' in r!).toBe(false);
  logger.child({ err, bytes: 7n }).warn('child');
  expect(records()[1]).toMatchObject({ err: { name: 'Error', message: 'disk full', code: 'ENOSPC' }, bytes: '7' });
});

test("a line's fields win over its logger's fields of the same name", () => {
  const { logger, records } = collect('info', { module: 'base' });
  logger.child({ module: 'downloads' }).info('x', { module: 'line' });
  expect(records()[0]!.module).toBe('line');
});
