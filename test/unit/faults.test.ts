import { ApiKeyRepository } from '../../src/domain/auth/api-key.repository';
import { ApiKeyService, hashKey } from '../../src/domain/auth/api-key.service';
import fs from 'node:fs';
import path from 'node:path';
import { DomainError, storeErrors } from '../../src/domain/errors';
import { fromInfraError } from '../../src/http/shared/errors';
import { isStorageFull, translateStoreError } from '../../src/infra/blob-store/blob-store';
import { StoreFullError, StoreUnavailableError } from '../../src/infra/errors';
import { classifyDbError, DatabaseHealth, translateDbError, type Db } from '../../src/infra/prisma';

describe('database errors are translated in one place (infra/prisma.ts), answered by the one error table', () => {
  const adapter = (cause: Record<string, unknown>) =>
    Object.assign(new Error('x'), { code: 'P2010', meta: { driverAdapterError: { cause } } });
  test.each([
    ['ECONNREFUSED', Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' })],
    ['ECONNRESET', Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' })],
    ['57P01 admin shutdown', Object.assign(new Error('terminating connection'), { code: '57P01' })],
    ['57P03 cannot connect now', Object.assign(new Error('the database system is starting up'), { code: '57P03' })],
    ['57014 statement timeout', adapter({ originalCode: '57014', kind: 'postgres' })],
    ['P1001', Object.assign(new Error("Can't reach database server"), { code: 'P1001' })],
    ['P1017', Object.assign(new Error('Server has closed the connection'), { code: 'P1017' })],
    ['P2024 pool timeout', Object.assign(new Error('Timed out fetching a new connection'), { code: 'P2024' })],
    ['adapter DatabaseNotReachable', adapter({ kind: 'DatabaseNotReachable', host: '10.0.0.1', port: 5432 })],
    ['pg-pool timeout', new Error('timeout exceeded when trying to connect')],
    ['pg client query timeout', new Error('Query read timeout')],
    ['wrapped in a cause', new Error('outer', { cause: Object.assign(new Error('inner'), { code: 'ECONNREFUSED' }) })],
  ])('%s → the database unavailable: SERVICE_UNAVAILABLE with retry_after, nothing of the original text', (_n, err) => {
    const infra = translateDbError(err);
    expect(infra).toBeInstanceOf(StoreUnavailableError);
    expect((infra as StoreUnavailableError).store).toBe('database');
    const t = fromInfraError(infra)!;
    expect(t).toBeInstanceOf(DomainError);
    expect(t.code).toBe('SERVICE_UNAVAILABLE');
    expect(t.details).toEqual({ retry_after: 5 });
    expect(t.message).not.toMatch(/10\.0\.0\.1|127\.0\.0\.1|ECONN/);
  });

  test('53100 disk full → INSUFFICIENT_STORAGE (pg error and through Prisma)', () => {
    const infra = translateDbError(Object.assign(new Error('could not extend file'), { code: '53100' }));
    expect(infra).toBeInstanceOf(StoreFullError);
    expect((infra as StoreFullError).store).toBe('database');
    expect(fromInfraError(infra)?.code).toBe('INSUFFICIENT_STORAGE');
    expect(classifyDbError(adapter({ originalCode: '53100', kind: 'postgres' }))).toBe('full');
  });

  test('other errors pass unchanged', () => {
    const unique = Object.assign(new Error('duplicate key'), { code: '23505' });
    expect(translateDbError(unique)).toBe(unique);
    const plain = new Error('something else');
    expect(translateDbError(plain)).toBe(plain);
    // A domain error thrown inside a transaction is the domain's answer, whatever its code.
    const domain = new DomainError('SERVICE_UNAVAILABLE', 'the stored content was just removed; try again');
    expect(translateDbError(domain)).toBe(domain);
    expect(fromInfraError(plain)).toBeUndefined();
  });

  test('an outage is logged once per transition and counted', () => {
    const lines: string[] = [];
    const logger = { warn: (m: string) => lines.push(m), info: (m: string) => lines.push(m) } as never;
    const health = new DatabaseHealth(logger);
    for (let i = 0; i < 100; i++) translateDbError(Object.assign(new Error('x'), { code: 'ECONNREFUSED' }), health);
    health.answered();
    health.answered();
    translateDbError(Object.assign(new Error('x'), { code: 'ECONNRESET' }), health);
    expect(lines).toEqual(['database unavailable', 'database available again', 'database unavailable']);
    expect(health.outages).toBe(2);
    expect(health.unavailableErrors).toBe(101);
  });
});

test('ENOSPC and EDQUOT are recognised as a full store', () => {
  expect(isStorageFull(Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' }))).toBe(
    true,
  );
  expect(isStorageFull(Object.assign(new Error('x'), { code: 'EDQUOT' }))).toBe(true);
  expect(isStorageFull(new Error('the ingest worker stopped: ENOSPC: no space left on device'))).toBe(true);
  expect(isStorageFull(Object.assign(new Error('x'), { code: 'EACCES' }))).toBe(false);
});

describe('blob store errors are infra errors, answered by the one error table', () => {
  test('full (507), unreachable (503, Retry-After), named as the blob store', () => {
    const full = translateStoreError(Object.assign(new Error('ENOSPC: no space left on device'), { code: 'ENOSPC' }));
    expect(full).toBeInstanceOf(StoreFullError);
    expect((full as StoreFullError).store).toBe('blob store');
    expect(fromInfraError(full)).toMatchObject({
      code: 'INSUFFICIENT_STORAGE',
      message: expect.stringMatching(/blob/),
    });
    const away = translateStoreError(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }));
    expect(away).toBeInstanceOf(StoreUnavailableError);
    expect((away as StoreUnavailableError).store).toBe('blob store');
    expect(fromInfraError(away)).toMatchObject({ code: 'SERVICE_UNAVAILABLE', details: { retry_after: 5 } });
    const other = new Error('EACCES');
    expect(translateStoreError(other)).toBe(other);
  });

  test("storeErrors passes the domain's errors unchanged", async () => {
    const domain = new DomainError('PAYLOAD_TOO_LARGE', 'too large');
    await expect(storeErrors(Promise.reject(domain))).rejects.toBe(domain);
    await expect(storeErrors(Promise.reject(Object.assign(new Error('x'), { code: 'EDQUOT' })))).rejects.toBeInstanceOf(
      StoreFullError,
    );
  });

  test('infra raises no domain error: no module of src/infra imports domain/errors', () => {
    const root = path.join(__dirname, '..', '..', 'src', 'infra');
    const files = fs.readdirSync(root, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.ts'));
    const leaks = files.filter((f) =>
      /from '(\.\.\/)+domain\/errors'/.test(fs.readFileSync(path.join(root, f), 'utf8')),
    );
    expect(leaks).toEqual([]);
  });
});

describe('API key caches', () => {
  function fakeDb(valid: Record<string, string>) {
    let lookups = 0;
    const db = {
      apiKey: {
        findUnique: async ({ where }: { where: { keyHash: string } }) => {
          lookups++;
          const owner = valid[where.keyHash];
          return owner
            ? {
                id: `id-${owner}`,
                ownerId: owner,
                keyHash: where.keyHash,
                scopes: ['read', 'write'],
                isAdmin: false,
                revokedAt: null,
                expiresAt: null,
                lastUsedAt: null,
              }
            : null;
        },
      },
    } as unknown as Db;
    return { db, lookups: () => lookups };
  }

  test('a repeated unknown key reaches the database once; a flood of unknown keys never evicts a valid one', async () => {
    const f = fakeDb({ [hashKey('valid-key-0001')]: 'carol' });
    const keys = new ApiKeyService(new ApiKeyRepository(f.db), []);
    expect((await keys.authenticate('valid-key-0001')).ownerId).toBe('carol');
    for (let i = 0; i < 5; i++)
      await expect(keys.authenticate('unknown-key-1')).rejects.toMatchObject({ code: 'UNAUTHORIZED' });
    expect(f.lookups()).toBe(2);
    for (let i = 0; i < 60_000; i++) await keys.authenticate(`random-${i}`).catch(() => undefined);
    const before = f.lookups();
    expect((await keys.authenticate('valid-key-0001')).ownerId).toBe('carol');
    expect(f.lookups()).toBe(before);
    expect(keys.cached('valid-key-0001')).toMatchObject({ ownerId: 'carol' });
    expect(keys.cached('random-59999')).toBeNull();
    expect(keys.cached('never-seen-key')).toBeUndefined();
  });
});
