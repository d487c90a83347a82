import crypto from 'node:crypto';
import { PassThrough } from 'node:stream';
import type { Request } from 'express';
import type { ReceivedFile } from '../../src/domain/assets/asset.service';
import { DomainError } from '../../src/domain/errors';
import { parseMultipartUpload, type ParsedUpload } from '../../src/http/rest/multipart';

/**
 * The service's multipart reading (parseMultipartUpload over @fastify/busboy): what it hands the domain whatever the
 * chunking, the contract's limits and refusals, and that a failure discards what the file part had stored.
 */

/** A request whose body arrives in `pieces`, as Node's HTTP server would deliver it. */
function requestOf(contentType: string | undefined, pieces: Buffer[]): Request {
  const req = new PassThrough() as unknown as PassThrough & { headers: Record<string, string>; complete: boolean };
  req.headers = contentType === undefined ? {} : { 'content-type': contentType };
  req.complete = false;
  req.on('end', () => (req.complete = true));
  void (async () => {
    for (const p of pieces) if (!req.write(p)) await new Promise((r) => req.once('drain', r));
    req.end();
  })();
  return req as unknown as Request;
}

interface Stored {
  bytes: Buffer;
  declaredHash: string | undefined;
}

/** Parses `body`; returns the fields, the file as received, and how many files were discarded, or the error. */
async function parse(
  body: Buffer,
  opts: { boundary?: string; contentType?: string; pieces?: (b: Buffer) => Buffer[] } = {},
): Promise<{ upload?: ParsedUpload; stored?: Stored; error?: DomainError; discarded: number }> {
  const contentType =
    'contentType' in opts ? opts.contentType : `multipart/form-data; boundary=${opts.boundary ?? 'b'}`;
  let discarded = 0;
  let stored: Stored | undefined;
  const receiver = {
    receiveFile: async (bytes: AsyncIterable<Buffer>, declaredHash: string | undefined) => {
      const chunks: Buffer[] = [];
      for await (const c of bytes) chunks.push(Buffer.from(c));
      stored = { bytes: Buffer.concat(chunks), declaredHash };
      return stored as unknown as ReceivedFile;
    },
    discardFile: async (file: ReceivedFile | undefined) => {
      if (file) discarded++;
    },
  };
  try {
    const upload = await parseMultipartUpload(requestOf(contentType, (opts.pieces ?? ((b) => [b]))(body)), receiver);
    return { upload, stored, discarded };
  } catch (err) {
    if (!(err instanceof DomainError)) throw err;
    return { error: err, stored, discarded };
  }
}

function form(
  boundary: string,
  parts: Array<{ name: string; filename?: string; type?: string; body: Buffer | string; disposition?: string }>,
  opts: { preamble?: string; epilogue?: string } = {},
): Buffer {
  const bufs: Buffer[] = [Buffer.from(opts.preamble ?? '')];
  for (const p of parts) {
    let head = `--${boundary}\r\nContent-Disposition: ${p.disposition ?? `form-data; name="${p.name}"`}`;
    if (p.filename !== undefined) head += `; filename="${p.filename}"`;
    head += '\r\n';
    if (p.type) head += `Content-Type: ${p.type}\r\n`;
    bufs.push(Buffer.from(head + '\r\n'), Buffer.from(p.body), Buffer.from('\r\n'));
  }
  bufs.push(Buffer.from(`--${boundary}--\r\n${opts.epilogue ?? ''}`));
  return Buffer.concat(bufs);
}

/** A deterministic generator, so a failure can be replayed. */
function prng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function splitRandomly(body: Buffer, rnd: () => number): Buffer[] {
  const out: Buffer[] = [];
  for (let off = 0; off < body.length;) {
    const n = 1 + Math.floor(rnd() * (rnd() < 0.3 ? 8 : 300));
    out.push(body.subarray(off, off + n));
    off += n;
  }
  return out;
}

describe('parseMultipartUpload', () => {
  it('hands the domain the fields and the exact file bytes whatever the chunking (bodies full of boundary look-alikes)', async () => {
    const boundary = 'xYz-boundary-42';
    for (let seed = 1; seed <= 40; seed++) {
      const rnd = prng(seed);
      // File bytes that keep almost matching the delimiter: CR, CRLF, CRLF--, CRLF--xYz-boundary-4 …
      const nearMisses = [
        '\r',
        '\r\n',
        '\r\n-',
        '\r\n--',
        `\r\n--${boundary.slice(0, 5)}`,
        `\r\n--${boundary.slice(0, -1)}`,
      ];
      const pieces: Buffer[] = [];
      for (let i = 0; i < 40; i++) {
        pieces.push(crypto.randomBytes(Math.floor(rnd() * 200)));
        pieces.push(Buffer.from(nearMisses[Math.floor(rnd() * nearMisses.length)]!));
      }
      const file = Buffer.concat(pieces);
      if (file.includes(`\r\n--${boundary}`)) continue;
      const body = form(
        boundary,
        [
          { name: 'hash', body: 'blake3:abc' },
          { name: 'tags', body: 'models,loras' },
          { name: 'user_metadata', body: '{"a":"é ✓"}' },
          { name: 'file', filename: `weights-${seed}.safetensors`, type: 'application/octet-stream', body: file },
          { name: 'tags', body: 'second' },
        ],
        { preamble: seed % 3 === 0 ? 'ignored preamble\r\n' : '' },
      );
      const r = await parse(body, { boundary, pieces: (b) => splitRandomly(b, rnd) });
      expect([seed, r.error?.message]).toEqual([seed, undefined]);
      expect(r.stored!.bytes.equals(file)).toBe(true);
      // Only a hash before the file reaches the ingest (it may spare storing the bytes).
      expect(r.stored!.declaredHash).toBe('blake3:abc');
      expect(r.upload!.fileName).toBe(`weights-${seed}.safetensors`);
      expect(Object.fromEntries(r.upload!.fields)).toEqual({
        hash: ['blake3:abc'],
        tags: ['models,loras', 'second'],
        user_metadata: ['{"a":"é ✓"}'],
      });
    }
  });

  it('decodes UTF-8 and RFC 5987 file names, keeps a path as sent, and reads a quoted boundary', async () => {
    const raw = Buffer.concat([
      Buffer.from('--"q b"\r\nContent-Disposition: form-data; name="file"; filename="dir/'),
      Buffer.from('模型 ✓.bin', 'utf8'),
      Buffer.from('"\r\n\r\nabc\r\n--"q b"--'),
    ]);
    const r = await parse(raw, { contentType: 'multipart/form-data; boundary="\\"q b\\""' });
    expect([r.error?.message, r.upload?.fileName, r.stored?.bytes.toString()]).toEqual([
      undefined,
      'dir/模型 ✓.bin',
      'abc',
    ]);
    const star = await parse(
      Buffer.from(
        "--b\r\nContent-Disposition: form-data; name=file; filename*=UTF-8''%E2%82%AC%20rates.txt\r\n\r\nx\r\n--b--",
      ),
    );
    expect([star.error?.message, star.upload?.fileName]).toEqual([undefined, '€ rates.txt']);
  });

  it('takes the part named file without a filename as the file, skips a first file part of another name', async () => {
    const bare = await parse(form('b', [{ name: 'file', body: 'raw bytes' }]));
    expect([bare.error?.message, bare.stored?.bytes.toString(), bare.upload?.fileName]).toEqual([
      undefined,
      'raw bytes',
      undefined,
    ]);
    const other = await parse(
      form('b', [
        { name: 'image', filename: 'a.png', body: 'png' },
        { name: 'tags', body: 't' },
      ]),
    );
    expect([other.error?.message, other.stored, other.upload?.fields.get('tags')]).toEqual([
      undefined,
      undefined,
      ['t'],
    ]);
  });

  it.each([
    [
      'a second file part',
      form('b', [
        { name: 'file', filename: 'a', body: '1' },
        { name: 'file', filename: 'b', body: '2' },
      ]),
      'INVALID_BODY',
    ],
    [
      'a body cut inside the file',
      form('b', [{ name: 'file', filename: 'a', body: 'data'.repeat(100) }]).subarray(0, 200),
      'INVALID_BODY',
    ],
    ['an empty body', Buffer.alloc(0), 'INVALID_BODY'],
    [
      'a field over 1 MiB',
      form('b', [{ name: 'user_metadata', body: 'x'.repeat(1024 * 1024 + 1) }]),
      'PAYLOAD_TOO_LARGE',
    ],
    [
      'more than 300 parts',
      form(
        'b',
        Array.from({ length: 301 }, (_, i) => ({
          name: i === 0 ? 'file' : 'x',
          filename: i === 0 ? 'a' : undefined,
          body: 'v',
        })),
      ),
      'INVALID_BODY',
    ],
    [
      'more than 200 fields',
      form(
        'b',
        Array.from({ length: 201 }, () => ({ name: 'x', body: 'v' })),
      ),
      'INVALID_BODY',
    ],
    ['a NUL in a field', form('b', [{ name: 'tags', body: 'a\u0000b' }]), 'INVALID_BODY'],
  ])('refuses %s', async (_what, body, code) => {
    const r = await parse(body);
    expect(r.error?.code).toBe(code);
    expect(r.stored === undefined || r.discarded === 1).toBe(true);
  });

  it('discards the stored file when a field after it is refused', async () => {
    const r = await parse(
      form('b', [
        { name: 'file', filename: 'a', body: 'bytes' },
        { name: 'tags', body: 'a\u0000' },
      ]),
    );
    // Either the ingest had finished (and its file is discarded) or it was stopped before it kept anything.
    expect(r.error?.code).toBe('INVALID_BODY');
    expect(r.stored === undefined || r.discarded === 1).toBe(true);
  });

  it.each([
    ['no boundary', 'multipart/form-data'],
    ['no Content-Type', undefined],
  ])('refuses a request with %s as INVALID_BODY', async (_what, contentType) => {
    const r = await parse(form('b', [{ name: 'file', filename: 'a', body: 'x' }]), { contentType });
    expect(r.error?.code).toBe('INVALID_BODY');
  });

  it('ignores everything after the closing boundary', async () => {
    const r = await parse(
      form('b', [{ name: 'file', filename: 'a', body: '1' }], { epilogue: 'epilogue --b\r\ngarbage' }),
    );
    expect([r.error?.message, r.stored?.bytes.toString()]).toEqual([undefined, '1']);
  });
});
