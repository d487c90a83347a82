import path from 'node:path';
import { checkAsset, retryDelayMs } from '../../src/cli/assets/client';
import type { Asset } from '../../src/cli/assets/client';
import { planPaths } from '../../src/cli/assets/pull';
import {
  comfyPlacement,
  comfyPlacementOf,
  fitSegments,
  pullPath,
  pullPaths,
  resolveInside,
  safeRelativePath,
} from '../../src/cli/assets/paths';

describe('safeRelativePath (the loader_path rule)', () => {
  test.each([
    ['SDXL/base.safetensors', 'SDXL/base.safetensors'],
    ['a//b/./c.bin', 'a/b/c.bin'],
    ['ünï 🎨 v2.safetensors', 'ünï 🎨 v2.safetensors'],
    ['..foo/bar..', '..foo/bar..'],
  ])('%j is safe as %j', (name, want) => expect(safeRelativePath(name)).toBe(want));

  test.each(['../x', 'a/../../x', '/etc/passwd', 'a\\b', 'a\u0000b', 'a\nb', '', '.', './', 'C:/x', '\u007f'])(
    '%j is not safe',
    (name) => expect(safeRelativePath(name)).toBeUndefined(),
  );
});

describe('comfyPlacement (ComfyUI asset scanner semantics)', () => {
  test('models/<folder>/<path> → tags models, <folder>; name is the path inside the folder', () => {
    expect(comfyPlacement('models/checkpoints/SDXL/base.safetensors')).toEqual({
      tags: ['models', 'model_type:checkpoints', 'checkpoints'],
      name: 'SDXL/base.safetensors',
    });
    expect(comfyPlacement('models/LoRAs/x.safetensors')).toEqual({
      tags: ['models', 'model_type:loras', 'loras'],
      name: 'x.safetensors',
    });
  });
  test('input/ and output/', () => {
    expect(comfyPlacement('input/a/b.png')).toEqual({ tags: ['input'], name: 'a/b.png' });
    expect(comfyPlacement('output/c.png')).toEqual({ tags: ['output'], name: 'c.png' });
  });
  test('anything else has no place', () => {
    expect(comfyPlacement('models/loose.bin')).toBeUndefined();
    expect(comfyPlacement('custom_nodes/x/y.py')).toBeUndefined();
    expect(comfyPlacement('README.md')).toBeUndefined();
  });
});

describe('comfyPlacementOf (a folder or file inside a ComfyUI tree)', () => {
  test('pushing models/loras or one model file places it as the whole tree would', () => {
    expect(comfyPlacementOf('/home/me/ComfyUI/models/loras/sub/x.safetensors', 'sub/x.safetensors')).toEqual({
      tags: ['models', 'model_type:loras', 'loras'],
      name: 'sub/x.safetensors',
      treePath: 'models/loras/sub/x.safetensors',
    });
    expect(comfyPlacementOf('/home/me/ComfyUI/output/o.png', 'o.png')).toEqual({
      tags: ['output'],
      name: 'o.png',
      treePath: 'output/o.png',
    });
    expect(comfyPlacementOf('/srv/ComfyUI/models/checkpoints/a.sft', 'models/checkpoints/a.sft')).toEqual({
      tags: ['models', 'model_type:checkpoints', 'checkpoints'],
      name: 'a.sft',
      treePath: 'models/checkpoints/a.sft',
    });
    expect(comfyPlacementOf('/home/me/random/x.bin', 'x.bin')).toBeUndefined();
  });
});

describe('pullPath', () => {
  const a = (name: string, tags: string[], loader_path?: string) => ({
    id: '00000000-0000-4000-8000-000000000001',
    name,
    tags,
    loader_path,
  });
  test('--comfyui: models/<folder>/<loader_path>, input/, output/', () => {
    expect(pullPath(a('SDXL/base.safetensors', ['models', 'checkpoints'], 'SDXL/base.safetensors'), true)).toBe(
      'models/checkpoints/SDXL/base.safetensors',
    );
    expect(pullPath(a('x.bin', ['team', 'models', 'loras']), true)).toBe('models/loras/x.bin');
    expect(pullPath(a('x.bin', ['team', 'models']), true)).toBe('models/team/x.bin');
    expect(pullPath(a('in.png', ['input']), true)).toBe('input/in.png');
    expect(pullPath(a('out/o.png', ['output']), true)).toBe('output/out/o.png');
    expect(pullPath(a('plain.bin', []), true)).toBe('plain.bin');
  });
  test('without loader_path (an older service) the name goes through the same rule; unsafe names keep their last segment', () => {
    expect(pullPath(a('SDXL/base.safetensors', ['models', 'checkpoints']), true)).toBe(
      'models/checkpoints/SDXL/base.safetensors',
    );
    expect(pullPath(a('../../etc/passwd', ['models', 'vae']), true)).toBe('models/vae/passwd');
    expect(pullPath(a('/abs/x.bin', []), false)).toBe('x.bin');
    expect(pullPath(a('..', []), false)).toBe('00000000-0000-4000-8000-000000000001');
  });
  test('a loader_path sent by the service is checked too', () => {
    expect(pullPath(a('x', ['models', 'vae'], '../x'), true)).toBe('models/vae/x');
  });
  test('an unsafe folder tag is not used as a folder', () => {
    expect(pullPath(a('x.bin', ['models', '../up']), true)).toBe('models/x.bin');
  });
  test('resolveInside refuses to leave the root', () => {
    expect(resolveInside('/tmp/r', 'a/b')).toBe(path.resolve('/tmp/r/a/b'));
    expect(() => resolveInside('/tmp/r', '../x')).toThrow(/outside/);
  });
});

describe('hostile answers (issue 14)', () => {
  test('Retry-After is honoured up to 60 s; without one (or unreadable) 1 s, 2 s, 4 s', () => {
    expect(retryDelayMs('3', 0)).toBe(3000);
    expect(retryDelayMs('999999', 0)).toBe(60_000);
    expect(retryDelayMs(new Date(Date.now() + 10 * 3600_000).toUTCString(), 0)).toBe(60_000);
    expect(retryDelayMs('soon', 1)).toBe(2000);
    expect(retryDelayMs(undefined, 2)).toBe(4000);
    expect(retryDelayMs('-5', 0)).toBe(1000);
  });

  test('an asset the client cannot rely on is refused', () => {
    const good = { id: 'a1b2', name: 'x', size: 1, asset_hash: `blake3:${'0'.repeat(64)}`, tags: [] };
    expect(checkAsset(good)).toBe(good);
    for (const bad of [
      null,
      'x',
      { ...good, id: '../etc' },
      { ...good, size: -1 },
      { ...good, size: 2 ** 60 },
      { ...good, asset_hash: 'blake3:00' },
      { ...good, tags: [1] },
      { ...good, name: 5 },
    ]) {
      expect(() => checkAsset(bad)).toThrow(/INVALID_RESPONSE|not an asset/);
    }
  });

  test('long segments are cut to 240 UTF-8 bytes, whole characters, extension kept', () => {
    expect(fitSegments('a/b.txt')).toBe('a/b.txt');
    const cut = fitSegments(`d/${'ü'.repeat(300)}.safetensors`);
    expect(Buffer.byteLength(cut.split('/')[1]!)).toBeLessThanOrEqual(240);
    expect(cut.endsWith('ü.safetensors')).toBe(true);
  });
});

describe('planPaths (where pull writes each asset)', () => {
  const asset = (id: string, name: string) =>
    ({ id, name, size: 1, asset_hash: `blake3:${'0'.repeat(64)}`, tags: [] }) as unknown as Asset;
  const assets = [
    asset('1', 'Model.bin'),
    asset('2', 'model.bin'),
    asset('3', 'e\u0301.bin'),
    asset('4', '\u00e9.bin'),
  ];
  test('on a file system that tells letter case apart, names that differ only in case are two files', () => {
    expect(planPaths(assets, false, false).map((p) => p.takenBy === undefined)).toEqual([true, true, true, true]);
  });
  test('on one that does not (macOS, Windows), the second of them is not written over the first; nor another normalisation of a name', () => {
    const plan = planPaths(assets, false, true);
    expect(plan.map((p) => p.takenBy === undefined)).toEqual([true, false, true, false]);
    expect(plan[1]!.takenBy).toContain('asset 1');
  });
});

describe('pullPaths (every recorded path of an asset)', () => {
  const a = (paths: unknown, tags = ['models', 'model_type:loras', 'loras']) => ({
    id: 'i',
    name: 'a.safetensors',
    tags,
    loader_path: 'a.safetensors',
    metadata: { paths },
  });
  test('with --comfyui each ComfyUI tree path as it is; without, the path inside its folder', () => {
    const asset = a(['models/loras/a.safetensors', 'models/vae/a-copy.safetensors']);
    expect(pullPaths(asset, true)).toEqual(['models/loras/a.safetensors', 'models/vae/a-copy.safetensors']);
    expect(pullPaths(asset, false)).toEqual(['a.safetensors', 'a-copy.safetensors']);
  });
  test("unsafe recorded paths are left out; none left: the asset's own path", () => {
    expect(pullPaths(a(['../../etc/passwd', '/abs', 7]), true)).toEqual(['models/loras/a.safetensors']);
    expect(pullPaths(a(undefined), false)).toEqual(['a.safetensors']);
  });
  test('a plain folder path is placed by the tags with --comfyui', () => {
    expect(pullPaths(a(['sub/b.safetensors']), true)).toEqual(['models/loras/sub/b.safetensors']);
  });
});
