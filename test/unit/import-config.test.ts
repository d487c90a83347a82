import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ConfigError, loadConfig } from '../../src/config';

describe('IMPORT_ROOTS and IMPORT_ROOTS_OWNER', () => {
  test('unset: no roots, no owner', () => {
    expect(loadConfig({}).importRoots).toEqual({ roots: {}, inPlace: new Set(), owner: undefined });
  });

  test('named absolute folders of a ComfyUI tree', () => {
    const c = loadConfig({
      IMPORT_ROOTS: 'models=/srv/comfyui/models/, input=/srv/comfyui/input',
      IMPORT_ROOTS_OWNER: 'studio',
    });
    expect(c.importRoots).toEqual({
      roots: { models: '/srv/comfyui/models', input: '/srv/comfyui/input' },
      inPlace: new Set(),
      owner: 'studio',
    });
  });

  test('a root written :in-place is indexed where it is; it must be a folder that can be read now', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'in-place-config-'));
    try {
      const c = loadConfig({ IMPORT_ROOTS: `models=${dir}:in-place,output=/srv/comfyui/output` });
      expect(c.importRoots).toEqual({
        roots: { models: dir, output: '/srv/comfyui/output' },
        inPlace: new Set(['models']),
        owner: undefined,
      });
      const missing = path.join(dir, 'nope');
      expect(() => loadConfig({ IMPORT_ROOTS: `models=${missing}:in-place` })).toThrow(
        /the in-place folder of models .* does not exist or cannot be read/,
      );
      fs.writeFileSync(path.join(dir, 'file'), 'x');
      expect(() => loadConfig({ IMPORT_ROOTS: `models=${path.join(dir, 'file')}:in-place` })).toThrow(ConfigError);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  test.each([
    ['custom_nodes=/srv/x', /must be <name>=<folder>/],
    ['/srv/comfyui/models', /must be <name>=<folder>/],
    ['models=relative/path', /absolute path/],
    ['models=/a,models=/b', /named twice/],
  ])('%s is refused', (value, message) => {
    expect(() => loadConfig({ IMPORT_ROOTS: value })).toThrow(ConfigError);
    expect(() => loadConfig({ IMPORT_ROOTS: value })).toThrow(message);
  });

  test('an owner name with other characters is refused', () => {
    expect(() => loadConfig({ IMPORT_ROOTS_OWNER: 'bad owner' })).toThrow(/IMPORT_ROOTS_OWNER/);
  });
});
