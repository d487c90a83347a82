import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** Deterministic bytes: `n` of them from a seed. */
export function seeded(n: number, seed: number): Buffer {
  const b = Buffer.alloc(n);
  let x = (Math.imul(seed, 2654435761) ^ 0x9e3779b9) >>> 0;
  for (let i = 0; i < n; i++) {
    // xorshift32: distinct seeds give distinct streams.
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    b[i] = x & 0xff;
  }
  return b;
}

export interface ComfyTree {
  root: string;
  /** A file outside the roots that a symbolic link inside points at: never to be read. */
  outside: string;
  env: Record<string, string>;
  write(rel: string, data: Buffer): string;
}

/** An empty ComfyUI-shaped tree (models/, input/, output/) and the IMPORT_ROOTS naming it. */
export function comfyTree(owner = 'alice'): ComfyTree {
  const base = fs.mkdtempSync(path.join(os.tmpdir(), 'asset-tests-comfy-'));
  const root = path.join(base, 'ComfyUI');
  for (const d of ['models', 'input', 'output']) fs.mkdirSync(path.join(root, d), { recursive: true });
  const outside = path.join(base, 'secret.bin');
  fs.writeFileSync(outside, seeded(4096, 999));
  const write = (rel: string, data: Buffer): string => {
    const p = path.join(root, ...rel.split('/'));
    fs.mkdirSync(path.dirname(p), { recursive: true });
    fs.writeFileSync(p, data);
    return p;
  };
  const env = {
    IMPORT_ROOTS: ['models', 'input', 'output'].map((d) => `${d}=${path.join(root, d)}`).join(','),
    IMPORT_ROOTS_OWNER: owner,
  };
  return { root, outside, env, write };
}

/**
 * The awkward entries of a real install: a symbolic link out of the root, a FIFO, and a file that cannot be read (a
 * symbolic link loop: its open fails with ELOOP even for root, which reads any file whatever its mode).
 */
export function addHostileEntries(t: ComfyTree): void {
  const loras = path.join(t.root, 'models', 'loras');
  fs.mkdirSync(loras, { recursive: true });
  fs.symlinkSync(t.outside, path.join(loras, 'leak.safetensors'));
  execFileSync('mkfifo', [path.join(loras, 'pipe.safetensors')]);
  fs.symlinkSync('loop.safetensors', path.join(loras, 'loop.safetensors'));
}
