import { HttpFetcher, isBlockedAddress } from '../../src/infra/http-fetch';
import { Providers } from '../../src/domain/downloads/providers';
import { CivitaiProvider } from '../../src/domain/downloads/providers/civitai';
import { HuggingFaceProvider } from '../../src/domain/downloads/providers/huggingface';
import { fileNameFromDisposition, retryAfterMs, statusError } from '../../src/domain/downloads/providers/provider';

describe('isBlockedAddress', () => {
  test.each([
    '127.0.0.1',
    '10.1.2.3',
    '172.16.0.1',
    '172.31.255.255',
    '192.168.1.1',
    '169.254.169.254',
    '100.64.0.1',
    '0.0.0.0',
    '224.0.0.1',
    '::1',
    '::',
    'fe80::1',
    'fd00:ec2::254',
    'fc00::1',
    '::ffff:127.0.0.1',
    '::ffff:7f00:1',
    '64:ff9b::10.0.0.1',
  ])('%s is blocked', (a) => expect(isBlockedAddress(a)).toBe(true));
  test.each(['8.8.8.8', '172.32.0.1', '104.16.0.1', '2606:4700::1111', '::ffff:8.8.8.8'])('%s is allowed', (a) =>
    expect(isBlockedAddress(a)).toBe(false),
  );
});

describe('providers', () => {
  const fetcher = new HttpFetcher({ blockPrivateNetworks: true, trustedOrigins: [] });
  afterAll(() => fetcher.close());
  const providers = new Providers([
    new HuggingFaceProvider({ fetcher, endpoint: 'https://huggingface.co', token: undefined }),
    new CivitaiProvider({ fetcher, endpoint: 'https://mirror.example/civitai', token: undefined }),
  ]);

  test('Hugging Face: /blob/ becomes /resolve/, query and fragment dropped', () => {
    const { provider, url } = providers.resolve(
      'https://huggingface.co/org/repo/blob/main/sub/dir/m.safetensors?download=true#x',
    );
    expect(provider.name).toBe('huggingface');
    expect(url.href).toBe('https://huggingface.co/org/repo/resolve/main/sub/dir/m.safetensors');
    expect(providers.resolve('https://huggingface.co/datasets/o/d/resolve/refs%2Fpr%2F1/a.parquet').url.pathname).toBe(
      '/datasets/o/d/resolve/refs%2Fpr%2F1/a.parquet',
    );
  });

  test('Civitai: keeps only the file-selecting parameters; endpoint path prefixes work', () => {
    const { provider, url } = providers.resolve(
      'https://mirror.example/civitai/api/download/models/123?token=s3cret&fp=fp16&type=Model&x=1',
    );
    expect(provider.name).toBe('civitai');
    expect(url.href).toBe('https://mirror.example/civitai/api/download/models/123?type=Model&fp=fp16');
  });

  test('Civitai: a model page with ?modelVersionId= is that version; without one it needs the API (locate), resolve refuses it', async () => {
    for (const page of [
      'https://mirror.example/civitai/models/77?modelVersionId=123',
      'https://mirror.example/civitai/models/77/a-lora/?modelVersionId=123&x=1',
    ]) {
      expect(providers.resolve(page).url.href).toBe('https://mirror.example/civitai/api/download/models/123');
      expect((await providers.locate(page)).url.href).toBe('https://mirror.example/civitai/api/download/models/123');
    }
    expect(() => providers.resolve('https://mirror.example/civitai/models/77?modelVersionId=1x')).toThrow(
      expect.objectContaining({ code: 'SOURCE_NOT_ALLOWED' }),
    );
  });

  test('Civitai: a model page without a version keeps its file selectors on the newest version it leads to', async () => {
    const asked: string[] = [];
    const stub = {
      open: async (url: URL) => {
        asked.push(url.pathname);
        return {
          status: 200,
          headers: {},
          body: [Buffer.from(JSON.stringify({ id: 77, modelVersions: [{ id: 456 }, { id: 123 }] }))],
        };
      },
    } as unknown as HttpFetcher;
    const civitai = new Providers([
      new CivitaiProvider({ fetcher: stub, endpoint: 'https://mirror.example/civitai', token: undefined }),
    ]);
    const { url } = await civitai.locate(
      'https://mirror.example/civitai/models/77/a-lora?type=VAE&format=SafeTensor&other=1',
    );
    expect(url.href).toBe('https://mirror.example/civitai/api/download/models/456?type=VAE&format=SafeTensor');
    expect(asked).toEqual(['/civitai/api/v1/models/77']);
  });

  test.each([
    'https://huggingface.co/org/repo',
    'https://huggingface.co.evil.com/org/repo/resolve/main/f',
    'http://huggingface.co/org/repo/resolve/main/f',
    'https://user:pw@huggingface.co/org/repo/resolve/main/f',
    'https://mirror.example/api/download/models/1',
    'https://mirror.example/civitai/models/1',
    'file:///etc/passwd',
    'nonsense',
  ])('%s is not allowed', (u) => {
    expect(() => providers.resolve(u)).toThrow(expect.objectContaining({ code: 'SOURCE_NOT_ALLOWED' }));
  });
});

test('fileNameFromDisposition: filename* first, quotes, paths and control characters removed', () => {
  expect(fileNameFromDisposition(`attachment; filename="a b.safetensors"`)).toBe('a b.safetensors');
  expect(fileNameFromDisposition(`attachment; filename="x.bin"; filename*=UTF-8''%E6%A8%A1%E5%9E%8B.bin`)).toBe(
    '模型.bin',
  );
  expect(fileNameFromDisposition('attachment; filename=../../etc/passwd')).toBe('passwd');
  expect(fileNameFromDisposition('attachment; filename="a\u0001b"')).toBe('ab');
  expect(fileNameFromDisposition('inline')).toBeUndefined();
  expect(fileNameFromDisposition(undefined)).toBeUndefined();
});

test('statusError: which answers are retried', () => {
  expect(statusError(401, { 'x-error-code': 'GatedRepo' }, 'hf')).toMatchObject({
    code: 'SOURCE_AUTH_REQUIRED',
    retryable: false,
  });
  expect(statusError(401, { 'x-error-code': 'RepoNotFound' }, 'hf')).toMatchObject({
    code: 'SOURCE_NOT_FOUND',
    retryable: false,
  });
  expect(statusError(403, {}, 'x')).toMatchObject({ code: 'SOURCE_AUTH_REQUIRED', retryable: false });
  expect(statusError(404, {}, 'x')).toMatchObject({ code: 'SOURCE_NOT_FOUND', retryable: false });
  expect(statusError(429, { 'retry-after': '7' }, 'x')).toMatchObject({
    code: 'DOWNLOAD_FAILED',
    retryable: true,
    retryAfterMs: 7000,
  });
  expect(statusError(503, {}, 'x')).toMatchObject({ retryable: true });
  expect(statusError(400, {}, 'x')).toMatchObject({ code: 'DOWNLOAD_FAILED', retryable: false });
  expect(retryAfterMs(new Date(Date.now() + 5000).toUTCString())).toBeGreaterThan(3000);
  expect(retryAfterMs('99999')).toBe(600_000);
  expect(retryAfterMs('soon')).toBeUndefined();
});
