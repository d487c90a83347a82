/**
 * A streaming multipart/form-data parser (RFC 7578 over RFC 2046 framing) that searches for the boundary with
 * `Buffer.indexOf` (native) and hands out the body of each part as views of the received chunks, without copying.
 *
 * It replaced busboy on the upload path: busboy's JavaScript boundary search (streamsearch) was about a tenth of the
 * CPU time of a large upload, and its per-chunk stream machinery added garbage. This parser only frames parts and
 * parses their headers; limits on part counts and field sizes are the caller's (see `multipart.ts`).
 */

export class MultipartError extends Error {}

export interface PartInfo {
  /** The `name` parameter of `Content-Disposition: form-data`. */
  name: string;
  /** The `filename` (or RFC 5987 `filename*`) parameter; present (possibly empty) only for file parts. */
  filename?: string;
  /** `type/subtype` of the part's `Content-Type`, lowercased. */
  contentType?: string;
}

export interface MultipartHandler {
  partBegin(part: PartInfo): void;
  /** A piece of the current part's body: a view of a received chunk (never modified afterwards). */
  partData(data: Buffer): void;
  partEnd(): void;
}

export interface MultipartLimits {
  /** Bytes of one part's header block. */
  headerBytes: number;
  /** Header lines of one part. */
  headerPairs: number;
}

const CRLF = Buffer.from('\r\n');
const CRLFCRLF = Buffer.from('\r\n\r\n');
const CR = 0x0d;
const LF = 0x0a;
const DASH = 0x2d;

const enum State {
  /** Inside a part's body, or before the first boundary (preamble, discarded). */
  Data,
  /** After a boundary: `--` (the end) or optional whitespace and CRLF (a part follows). */
  AfterBoundary,
  Headers,
  End,
}

/** The boundary of a `multipart/form-data` Content-Type, or a MultipartError saying why there is none. */
export function boundaryOf(contentType: string | undefined): string {
  if (!contentType || !/^multipart\/form-data\s*(;|$)/i.test(contentType.trim())) {
    throw new MultipartError('the Content-Type is not multipart/form-data');
  }
  const m = /;\s*boundary\s*=\s*(?:"((?:[^"\\]|\\.){1,200})"|([^\s;"]{1,200}))/i.exec(contentType);
  const boundary = m ? (m[1] !== undefined ? m[1].replace(/\\(.)/g, '$1') : m[2]!) : '';
  if (boundary === '' || boundary.length > 70 || /[^\x20-\x7e]/.test(boundary)) {
    throw new MultipartError('the Content-Type has no valid boundary');
  }
  return boundary;
}

export class MultipartParser {
  private readonly delimiter: Buffer;
  private state = State.Data;
  private inPart = false;
  /** Unconsumed bytes from the previous chunk (a possible delimiter prefix, or an incomplete header block). */
  private carry: Buffer;

  constructor(
    boundary: string,
    private readonly handler: MultipartHandler,
    private readonly limits: MultipartLimits = { headerBytes: 16 * 1024, headerPairs: 100 },
  ) {
    this.delimiter = Buffer.from(`\r\n--${boundary}`, 'latin1');
    // The first boundary may open the body without a preceding CRLF: parse as if the body started with one.
    this.carry = CRLF;
  }

  write(chunk: Buffer): void {
    if (chunk.length === 0 || this.state === State.End) return;
    let data = chunk;
    let pos = 0;
    if (this.carry.length > 0) {
      const carry = this.carry;
      this.carry = EMPTY;
      if (this.state === State.Data && chunk.length >= this.delimiter.length) {
        // Only a delimiter that starts inside the carried bytes needs them joined; look at just that much.
        const probe = Buffer.concat([carry, chunk.subarray(0, this.delimiter.length - 1)]);
        const at = probe.indexOf(this.delimiter);
        if (at < 0) {
          if (this.inPart) this.handler.partData(carry);
        } else {
          if (at > 0 && this.inPart) this.handler.partData(carry.subarray(0, at));
          this.closeData();
          pos = at + this.delimiter.length - carry.length;
        }
      } else {
        data = Buffer.concat([carry, chunk]);
      }
    }
    this.parse(data, pos);
  }

  /** The body ended: an error unless the closing boundary was seen. */
  end(): void {
    if (this.state !== State.End) throw new MultipartError('unexpected end of the multipart body');
  }

  private parse(data: Buffer, pos: number): void {
    const len = data.length;
    while (pos < len) {
      switch (this.state) {
        case State.Data: {
          const at = data.indexOf(this.delimiter, pos);
          if (at >= 0) {
            if (at > pos && this.inPart) this.handler.partData(data.subarray(pos, at));
            this.closeData();
            pos = at + this.delimiter.length;
            break;
          }
          const keep = this.delimiterPrefixAtEnd(data, pos);
          // The carried bytes are copied: handed-out views must own their bytes alone.
          this.carry = keep > 0 ? Buffer.from(data.subarray(len - keep)) : EMPTY;
          if (len - keep > pos && this.inPart) this.handler.partData(data.subarray(pos, len - keep));
          return;
        }
        case State.AfterBoundary: {
          if (len - pos < 2) {
            this.carry = Buffer.from(data.subarray(pos));
            return;
          }
          if (data[pos] === DASH && data[pos + 1] === DASH) {
            this.state = State.End;
            return;
          }
          // Transport padding (RFC 2046 §5.1.1), then CRLF.
          let p = pos;
          while (p < len && (data[p] === 0x20 || data[p] === 0x09)) p++;
          if (p + 2 > len) {
            if (p - pos > 1024) throw new MultipartError('malformed boundary line');
            this.carry = Buffer.from(data.subarray(pos));
            return;
          }
          if (data[p] !== CR || data[p + 1] !== LF) throw new MultipartError('malformed boundary line');
          pos = p + 2;
          this.state = State.Headers;
          break;
        }
        case State.Headers: {
          const empty = len - pos >= 2 && data[pos] === CR && data[pos + 1] === LF; // no header lines at all
          const end = empty ? pos : len - pos >= 2 ? data.indexOf(CRLFCRLF, pos) : -1;
          if (end < 0) {
            if (len - pos > this.limits.headerBytes) throw new MultipartError('a part header is too large');
            this.carry = Buffer.from(data.subarray(pos));
            return;
          }
          if (end - pos > this.limits.headerBytes) throw new MultipartError('a part header is too large');
          const next = empty ? pos + 2 : end + 4;
          this.beginPart(data.toString('latin1', pos, end));
          pos = next;
          break;
        }
        case State.End:
          return;
      }
    }
  }

  /** The length of the longest suffix of `data[from..]` that is a proper prefix of the delimiter. */
  private delimiterPrefixAtEnd(data: Buffer, from: number): number {
    const len = data.length;
    const d = this.delimiter;
    for (let k = Math.max(from, len - d.length + 1); k < len; k++) {
      if (data[k] !== CR) continue;
      let i = 1;
      while (k + i < len && data[k + i] === d[i]) i++;
      if (k + i === len) return len - k;
    }
    return 0;
  }

  private closeData(): void {
    if (this.inPart) this.handler.partEnd();
    this.inPart = false;
    this.state = State.AfterBoundary;
  }

  private beginPart(block: string): void {
    const headers = new Map<string, string>();
    let lines = 0;
    let last: string | undefined;
    for (const line of block === '' ? [] : block.split('\r\n')) {
      if ((line.startsWith(' ') || line.startsWith('\t')) && last) {
        headers.set(last, `${headers.get(last)} ${line.trim()}`); // obsolete line folding
        continue;
      }
      if (++lines > this.limits.headerPairs) throw new MultipartError('too many part header lines');
      const colon = line.indexOf(':');
      if (colon <= 0) throw new MultipartError('malformed part header');
      last = line.slice(0, colon).trim().toLowerCase();
      headers.set(last, line.slice(colon + 1).trim());
    }
    this.state = State.Data;
    const disposition = parseDisposition(headers.get('content-disposition'));
    if (!disposition) return; // not a form-data part: its body is skipped
    const type = headers.get('content-type')?.split(';')[0]!.trim().toLowerCase();
    this.inPart = true;
    this.handler.partBegin({ ...disposition, contentType: type || undefined });
  }
}

const EMPTY = Buffer.alloc(0);

/** `form-data; name="…"; filename="…"` (values are UTF-8, as browsers send them; `filename*` per RFC 5987). */
function parseDisposition(value: string | undefined): { name: string; filename?: string } | undefined {
  if (!value) return undefined;
  const semi = value.indexOf(';');
  if ((semi < 0 ? value : value.slice(0, semi)).trim().toLowerCase() !== 'form-data') return undefined;
  const params = new Map<string, string>();
  const re = /;\s*([^\s=;]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^;]*))/g;
  for (let m = re.exec(value); m; m = re.exec(value)) {
    const key = m[1]!.toLowerCase();
    if (params.has(key)) continue;
    if (m[2] !== undefined) params.set(key, utf8(m[2].replace(/\\(.)/g, '$1')));
    else params.set(key, key.endsWith('*') ? m[3]!.trim() : utf8(m[3]!.trim()));
  }
  const name = params.get('name');
  if (name === undefined) return undefined;
  const extended = params.has('filename*') ? decodeExtended(params.get('filename*')!) : undefined;
  const filename = extended ?? params.get('filename');
  return filename === undefined ? { name } : { name, filename };
}

/** Header bytes were read as latin1; browsers send UTF-8. */
function utf8(latin1: string): string {
  return /[^\x00-\x7f]/.test(latin1) ? Buffer.from(latin1, 'latin1').toString('utf8') : latin1;
}

/** RFC 5987 `charset'lang'pct-encoded`, for UTF-8 and ISO-8859-1; undefined when it cannot be decoded. */
function decodeExtended(value: string): string | undefined {
  const m = /^([\w!#$%&+^`{}~-]*)'[^']*'(.*)$/.exec(value);
  if (!m) return undefined;
  const charset = m[1]!.toLowerCase();
  if (charset !== 'utf-8' && charset !== 'utf8' && charset !== 'iso-8859-1' && charset !== 'latin1') return undefined;
  const bytes: number[] = [];
  const text = m[2]!;
  for (let i = 0; i < text.length; i++) {
    if (text[i] === '%' && /^[0-9a-fA-F]{2}$/.test(text.slice(i + 1, i + 3))) {
      bytes.push(parseInt(text.slice(i + 1, i + 3), 16));
      i += 2;
    } else {
      bytes.push(text.charCodeAt(i) & 0xff);
    }
  }
  return Buffer.from(bytes).toString(charset.startsWith('utf') ? 'utf8' : 'latin1');
}
