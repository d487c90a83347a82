/**
 * Incremental BLAKE3; the native addon (`@napi-rs/blake-hash`) where it loads, else the WebAssembly build (`blake3`).
 */
export interface Blake3Incremental {
  update(chunk: Uint8Array): void;
  hex(): string;
}

export type Blake3Kind = 'native' | 'wasm';

export interface Blake3Impl {
  impl: Blake3Kind;
  create(): Blake3Incremental;
}

/**
 * `want`: the implementation to load (config's `blake3`; a worker thread asks for the one its parent uses). `native`
 * falls back to WebAssembly where the addon does not load.
 */
export function loadBlake3(want: Blake3Kind = 'native'): Blake3Impl {
  if (want === 'native') {
    try {
      const { Blake3Hasher } = require('@napi-rs/blake-hash') as typeof import('@napi-rs/blake-hash');
      new Blake3Hasher().update(Buffer.alloc(1)).digest('hex');
      return {
        impl: 'native',
        create: () => {
          const h = new Blake3Hasher();
          return { update: (c) => void h.update(c), hex: () => h.digest('hex') };
        },
      };
    } catch {
      // fall through to WebAssembly
    }
  }
  const wasm = require('blake3') as { createHash(): { update(c: Uint8Array): void; digest(enc: 'hex'): string } };
  return {
    impl: 'wasm',
    create: () => {
      const h = wasm.createHash();
      return { update: (c) => h.update(c), hex: () => h.digest('hex') };
    },
  };
}

let loaded: Blake3Impl | undefined;

/** The BLAKE3 implementation of this process: the one `useBlake3` chose (the container, from config), else native. */
export const blake3 = (): Blake3Impl => (loaded ??= loadBlake3());

/** Chooses this process's implementation (the container, from config.blake3) before anything hashes. */
export function useBlake3(kind: Blake3Kind): Blake3Impl {
  return (loaded = loadBlake3(kind));
}
