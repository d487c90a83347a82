/** Incremental BLAKE3; the native addon (`@napi-rs/blake-hash`) where it loads, else the WebAssembly build (`blake3`). */
export interface Blake3Incremental {
  update(chunk: Uint8Array): void;
  hex(): string;
}

export interface Blake3Impl {
  impl: 'native' | 'wasm';
  /** The module to require for it (worker threads load the same one). */
  modulePath: string;
  create(): Blake3Incremental;
}

function load(): Blake3Impl {
  if (process.env.ASSET_SERVICE_FORCE_WASM_BLAKE3 !== '1') {
    try {
      const modulePath = require.resolve('@napi-rs/blake-hash');
      const { Blake3Hasher } = require(modulePath) as typeof import('@napi-rs/blake-hash');
      new Blake3Hasher().update(Buffer.alloc(1)).digest('hex');
      return {
        impl: 'native',
        modulePath,
        create: () => {
          const h = new Blake3Hasher();
          return { update: (c) => void h.update(c), hex: () => h.digest('hex') };
        },
      };
    } catch {
      // fall through to WebAssembly
    }
  }
  const modulePath = require.resolve('blake3');
  const wasm = require(modulePath) as { createHash(): { update(c: Uint8Array): void; digest(enc: 'hex'): string } };
  return {
    impl: 'wasm',
    modulePath,
    create: () => {
      const h = wasm.createHash();
      return { update: (c) => h.update(c), hex: () => h.digest('hex') };
    },
  };
}

let loaded: Blake3Impl | undefined;

/** The BLAKE3 implementation of this process, loaded on first use. */
export const blake3 = (): Blake3Impl => (loaded ??= load());
