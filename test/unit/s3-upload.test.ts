import crypto from 'node:crypto';
import type { S3Client } from '@aws-sdk/client-s3';
import { StreamUpload } from '../../src/infra/blob-store/s3-upload';

/**
 * The S3 store's stream writer (StreamUpload) against a recording client: the object's bytes in order, one PutObject
 * for a body of one part or less, at most `queueSize` parts in flight in at most `queueSize + 1` part buffers, a failed
 * part failing the upload only once no part is in flight, and owned chunks freed once their bytes are copied.
 */
const PART = 64 * 1024;

interface Sent {
  op: string;
  partNumber?: number;
  bytes: Buffer;
  buffer?: ArrayBufferLike;
}

function recordingClient(opts: { failPart?: number; hold?: boolean } = {}) {
  const sent: Sent[] = [];
  let inFlight = 0;
  let maxInFlight = 0;
  const waiting: Array<() => void> = [];
  const client = {
    async send(cmd: { constructor: { name: string }; input: Record<string, unknown> }) {
      const op = cmd.constructor.name.replace(/Command$/, '');
      const body = cmd.input.Body as Buffer | undefined;
      // A copy of what the request carries when it is sent: the writer may reuse the buffer afterwards.
      const rec: Sent = { op, bytes: Buffer.from(body ?? []), buffer: body?.buffer };
      if (op === 'UploadPart') rec.partNumber = cmd.input.PartNumber as number;
      sent.push(rec);
      if (op === 'CreateMultipartUpload') return { UploadId: 'u1' };
      if (op !== 'UploadPart') return {};
      inFlight++;
      maxInFlight = Math.max(maxInFlight, inFlight);
      await new Promise<void>((r) => (opts.hold ? waiting.push(r) : setImmediate(r)));
      inFlight--;
      if (rec.partNumber === opts.failPart) throw new Error(`part ${rec.partNumber} refused`);
      return { ETag: `"e${rec.partNumber}"` };
    },
  };
  return {
    client: client as unknown as S3Client,
    sent,
    maxInFlight: () => maxInFlight,
    inFlight: () => inFlight,
    release: () => waiting.splice(0).forEach((r) => r()),
  };
}

async function* chunksOf(data: Buffer, size: number): AsyncGenerator<Buffer> {
  for (let at = 0; at < data.length; at += size) yield Buffer.from(data.subarray(at, at + size));
}

const bodyOf = (sent: Sent[]) =>
  Buffer.concat(
    sent
      .filter((s) => s.op === 'UploadPart')
      .sort((a, b) => a.partNumber! - b.partNumber!)
      .map((s) => s.bytes),
  );

test('a body of one part or less is one PutObject, an empty one included', async () => {
  for (const size of [0, 1, PART]) {
    const data = crypto.randomBytes(size);
    const rec = recordingClient();
    const up = new StreamUpload(rec.client, 'b', 'k', { partSize: PART, queueSize: 2 });
    await up.run(chunksOf(data, 1000));
    expect(rec.sent.map((s) => s.op)).toEqual(['PutObject']);
    expect(rec.sent[0]!.bytes.equals(data)).toBe(true);
    expect(up.size).toBe(size);
  }
});

test('a larger body: parts of partSize in order, at most queueSize in flight, in queueSize + 1 buffers', async () => {
  const data = crypto.randomBytes(PART * 7 + 123);
  const rec = recordingClient();
  const up = new StreamUpload(rec.client, 'b', 'k', { partSize: PART, queueSize: 2 });
  await up.run(chunksOf(data, 10_000));
  const ops = rec.sent.map((s) => s.op);
  expect(ops[0]).toBe('CreateMultipartUpload');
  expect(ops.at(-1)).toBe('CompleteMultipartUpload');
  const parts = rec.sent.filter((s) => s.op === 'UploadPart');
  expect(parts.map((p) => p.bytes.length)).toEqual([...Array(7).fill(PART), 123]);
  expect(bodyOf(rec.sent).equals(data)).toBe(true);
  expect(rec.maxInFlight()).toBeLessThanOrEqual(2);
  expect(new Set(parts.map((p) => p.buffer)).size).toBeLessThanOrEqual(3);
  expect(up.size).toBe(data.length);
  expect(up.uploadId).toBe('u1');
});

test('a failed part fails the upload once no other part is in flight; the source is not read to its end', async () => {
  const rec = recordingClient({ failPart: 2 });
  let read = 0;
  async function* source() {
    for (let i = 0; i < 100; i++) {
      read++;
      yield crypto.randomBytes(PART / 2);
    }
  }
  const up = new StreamUpload(rec.client, 'b', 'k', { partSize: PART, queueSize: 2 });
  await expect(up.run(source())).rejects.toThrow('part 2 refused');
  expect(rec.inFlight()).toBe(0);
  expect(read).toBeLessThan(100);
  expect(rec.sent.some((s) => s.op === 'CompleteMultipartUpload')).toBe(false);
});

test('a failing source fails the upload once the parts in flight are answered', async () => {
  const rec = recordingClient({ hold: true });
  async function* source() {
    yield crypto.randomBytes(PART * 2 + 1);
    throw new Error('the client went away');
  }
  const up = new StreamUpload(rec.client, 'b', 'k', { partSize: PART, queueSize: 4 });
  let settled = false;
  const done = up.run(source()).finally(() => (settled = true));
  await new Promise((r) => setTimeout(r, 20));
  expect(settled).toBe(false); // two parts still in flight
  rec.release();
  await expect(done).rejects.toThrow('the client went away');
  expect(rec.inFlight()).toBe(0);
});

test("the source's chunks are copied into the part buffers and never freed or changed", async () => {
  const whole = Array.from({ length: 4 }, () => crypto.randomBytes(64 * 1024));
  const own = whole.map((b) => {
    const c = Buffer.allocUnsafeSlow(b.length);
    b.copy(c);
    return c;
  });
  const small = Buffer.from('a pooled chunk'); // Node's shared pool
  const expected = Buffer.concat([...whole, small]);
  async function* source() {
    yield* own;
    yield small;
  }
  const rec = recordingClient();
  const up = new StreamUpload(rec.client, 'b', 'k', { partSize: PART, queueSize: 2 });
  await up.run(source());
  expect(bodyOf(rec.sent).equals(expected)).toBe(true);
  expect(Buffer.concat([...own, small]).equals(expected)).toBe(true);
});
