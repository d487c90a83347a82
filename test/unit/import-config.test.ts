import { ConfigError, loadConfig } from '../../src/config';

describe('IMPORT_ROOTS and IMPORT_ROOTS_OWNER', () => {
  test('unset: no roots, no owner', () => {
    expect(loadConfig({}).importRoots).toEqual({ roots: {}, owner: undefined });
  });

  test('named absolute folders of a ComfyUI tree', () => {
    const c = loadConfig({
      IMPORT_ROOTS: 'models=/srv/comfyui/models/, input=/srv/comfyui/input',
      IMPORT_ROOTS_OWNER: 'studio',
    });
    expect(c.importRoots).toEqual({
      roots: { models: '/srv/comfyui/models', input: '/srv/comfyui/input' },
      owner: 'studio',
    });
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
