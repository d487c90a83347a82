import crypto from 'node:crypto';
import busboy from 'busboy';
import { boundaryOf, MultipartError, MultipartParser, type PartInfo } from '../../src/http/rest/multipart-parser';

interface Part extends PartInfo {
  body: Buffer;
}

/** Feeds `body` in the given pieces; returns the parts, or the parser's error. */
function parse(boundary: string, pieces: Buffer[]): Part[] | MultipartError {
  const parts: Part[] = [];
  let cur: { info: PartInfo; chunks: Buffer[] } | undefined;
  const p = new MultipartParser(boundary, {
    partBegin: (info) => (cur = { info, chunks: [] }),
    partData: (d) => cur!.chunks.push(Buffer.from(d)),
    partEnd: () => {
      parts.push({ ...cur!.info, body: Buffer.concat(cur!.chunks) });
      cur = undefined;
    },
  });
  try {
    for (const piece of pieces) p.write(piece);
    p.end();
  } catch (err) {
    if (err instanceof MultipartError) return err;
    throw err;
  }
  return parts;
}

/** busboy's reading of the same body (the parser it replaced), in the same shape. */
function parseWithBusboy(boundary: string, body: Buffer): Promise<Part[]> {
  return new Promise((resolve, reject) => {
    const bb = busboy({
      headers: { 'content-type': `multipart/form-data; boundary=${boundary}` },
      defParamCharset: 'utf8',
    });
    const parts: Part[] = [];
    bb.on('field', (name, value) => parts.push({ name, body: Buffer.from(value) }));
    bb.on('file', (name, stream, info) => {
      const part: Part = { name, filename: info.filename, body: Buffer.alloc(0) };
      parts.push(part); // in order of appearance; the body is filled in when the file stream ends
      const chunks: Buffer[] = [];
      stream.on('data', (d: Buffer) => chunks.push(d));
      stream.on('end', () => (part.body = Buffer.concat(chunks)));
    });
    bb.on('close', () => resolve(parts));
    bb.on('error', reject);
    bb.end(body);
  });
}

function splitRandomly(body: Buffer, rnd: () => number): Buffer[] {
  const out: Buffer[] = [];
  let off = 0;
  while (off < body.length) {
    const n = 1 + Math.floor(rnd() * (rnd() < 0.3 ? 8 : 300));
    out.push(body.subarray(off, off + n));
    off += n;
  }
  return out;
}

function form(
  boundary: string,
  parts: Array<{ name: string; filename?: string; type?: string; body: Buffer | string }>,
  opts: { preamble?: string } = {},
): Buffer {
  const bufs: Buffer[] = [Buffer.from(opts.preamble ?? '')];
  for (const p of parts) {
    let head = `--${boundary}\r\nContent-Disposition: form-data; name="${p.name}"`;
    if (p.filename !== undefined) head += `; filename="${p.filename}"`;
    head += '\r\n';
    if (p.type) head += `Content-Type: ${p.type}\r\n`;
    bufs.push(Buffer.from(head + '\r\n'), Buffer.from(p.body), Buffer.from('\r\n'));
  }
  bufs.push(Buffer.from(`--${boundary}--\r\n`));
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

describe('MultipartParser', () => {
  it('reads fields and a file exactly as busboy does, whatever the chunking (bodies full of boundary look-alikes)', async () => {
    const boundary = 'xYz-boundary-42';
    let skipped = 0;
    for (let seed = 1; seed <= 60; seed++) {
      const rnd = prng(seed);
      // File bytes that keep almost matching the delimiter: CR, CRLF, CRLF--, CRLF--xYz-boundary-4 …
      const nearMisses = [
        '\r',
        '\r\n',
        '\r\n-',
        '\r\n--',
        `\r\n--${boundary.slice(0, 5)}`,
        `\r\n--${boundary.slice(0, -1)}`,
        `--${boundary}`,
      ];
      const pieces: Buffer[] = [];
      for (let i = 0; i < 40; i++) {
        pieces.push(crypto.randomBytes(Math.floor(rnd() * 200)));
        pieces.push(Buffer.from(nearMisses[Math.floor(rnd() * nearMisses.length)]!));
      }
      if (rnd() < 0.5) pieces.push(Buffer.from('\r\n--')); // the file ends with a delimiter prefix
      const file = Buffer.concat(pieces);
      if (file.includes(`\r\n--${boundary}`)) {
        skipped++; // a real delimiter, not a look-alike
        continue;
      }
      const body = form(
        boundary,
        [
          { name: 'tags', body: 'models,loras' },
          { name: 'user_metadata', body: '{"a":"é ✓"}' },
          { name: 'file', filename: `weights-${seed}.safetensors`, type: 'application/octet-stream', body: file },
          { name: 'after', body: '' },
        ],
        { preamble: seed % 3 === 0 ? 'ignored preamble\r\n' : '' },
      );
      const expected = await parseWithBusboy(boundary, body);
      const got = parse(boundary, splitRandomly(body, rnd));
      expect([seed, got instanceof MultipartError ? got.message : 'ok']).toEqual([seed, 'ok']);
      const simplify = (ps: Part[]) =>
        ps.map((p) => ({ name: p.name, filename: p.filename, body: p.body.toString('base64') }));
      expect(simplify(got as Part[])).toEqual(simplify(expected));
      expect((got as Part[])[2]!.body.equals(file)).toBe(true);
      expect((got as Part[])[2]!.contentType).toBe('application/octet-stream');
    }
    expect(skipped).toBeLessThan(20);
  });

  it('hands out views that stay valid after later chunks arrive', () => {
    const boundary = 'b0';
    const body = form(boundary, [
      { name: 'file', filename: 'a', body: 'x'.repeat(1000) + '\r\n--b' + 'y'.repeat(1000) },
    ]);
    const views: Buffer[] = [];
    const p = new MultipartParser(boundary, {
      partBegin: () => undefined,
      partData: (d) => views.push(d),
      partEnd: () => undefined,
    });
    for (let off = 0; off < body.length; off += 7) p.write(Buffer.from(body.subarray(off, off + 7)));
    p.end();
    expect(Buffer.concat(views).toString()).toBe('x'.repeat(1000) + '\r\n--b' + 'y'.repeat(1000));
  });

  it('decodes UTF-8 and RFC 5987 file names, quoted boundaries and transport padding', () => {
    const raw = Buffer.concat([
      Buffer.from('--"q b"  \t\r\nContent-Disposition: form-data; name="file"; filename="'),
      Buffer.from('模型 ✓.bin', 'utf8'),
      Buffer.from(
        '"\r\n\r\nabc\r\n--"q b"\r\ncontent-disposition: form-data; name=f2; filename="x.bin"; filename*=UTF-8\'\'%E2%82%AC%20rates.txt\r\n\r\n\r\n--"q b"--',
      ),
    ]);
    const boundary = boundaryOf('multipart/form-data; boundary="\\"q b\\""');
    expect(boundary).toBe('"q b"');
    const parts = parse(boundary, [raw]) as Part[];
    expect(parts.map((p) => [p.name, p.filename, p.body.toString()])).toEqual([
      ['file', '模型 ✓.bin', 'abc'],
      ['f2', '€ rates.txt', ''],
    ]);
  });

  it('skips parts that are not form-data and tells fields from files by the filename parameter', () => {
    const raw =
      '--b\r\nContent-Type: text/plain\r\n\r\nno disposition\r\n--b\r\n\r\nno headers\r\n--b\r\nContent-Disposition: form-data; name="f"; filename=""\r\n\r\nx\r\n--b\r\nContent-Disposition: form-data; name="t"\r\n\r\ny\r\n--b--';
    const parts = parse('b', [Buffer.from(raw)]) as Part[];
    expect(parts.map((p) => [p.name, p.filename, p.body.toString()])).toEqual([
      ['f', '', 'x'],
      ['t', undefined, 'y'],
    ]);
  });

  it('rejects truncated and malformed bodies', () => {
    const ok = form('b', [{ name: 'file', filename: 'a', body: 'data' }]);
    expect(parse('b', [ok.subarray(0, ok.length - 6)])).toBeInstanceOf(MultipartError); // no closing boundary
    expect(parse('b', [Buffer.from('')])).toBeInstanceOf(MultipartError);
    expect(parse('b', [Buffer.from('--bX\r\n')])).toBeInstanceOf(MultipartError); // junk after the boundary
    expect(parse('b', [Buffer.from('--b\r\nno colon here\r\n\r\nx\r\n--b--')])).toBeInstanceOf(MultipartError);
    expect(parse('b', [Buffer.from('--b\r\nX-A: ' + 'a'.repeat(20000))])).toBeInstanceOf(MultipartError); // header too large
    const many = '--b\r\n' + Array.from({ length: 101 }, (_, i) => `X-${i}: v`).join('\r\n') + '\r\n\r\nx\r\n--b--';
    expect(parse('b', [Buffer.from(many)])).toBeInstanceOf(MultipartError);
  });

  it('ignores everything after the closing boundary', () => {
    const parts = parse('b', [
      Buffer.from('--b\r\nContent-Disposition: form-data; name="a"\r\n\r\n1\r\n--b--\r\nepilogue --b\r\ngarbage'),
    ]) as Part[];
    expect(parts.map((p) => p.body.toString())).toEqual(['1']);
  });

  it('reads the boundary from the Content-Type', () => {
    expect(boundaryOf('multipart/form-data; boundary=----WebKitFormBoundary7MA4YWxkTrZu0gW')).toBe(
      '----WebKitFormBoundary7MA4YWxkTrZu0gW',
    );
    expect(boundaryOf('Multipart/Form-Data;charset=utf-8; BOUNDARY=abc')).toBe('abc');
    expect(() => boundaryOf('multipart/form-data')).toThrow(MultipartError);
    expect(() => boundaryOf('multipart/mixed; boundary=abc')).toThrow(MultipartError);
    expect(() => boundaryOf(undefined)).toThrow(MultipartError);
    expect(() => boundaryOf(`multipart/form-data; boundary=${'a'.repeat(71)}`)).toThrow(MultipartError);
  });
});
