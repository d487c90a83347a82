import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

const STALE_MS = 24 * 3600 * 1000;

interface PreviousUpload {
  size: number | null;
  metadata: { [key: string]: string };
  creationTime: string;
  urlStorageKey: string;
  uploadUrl: string | null;
  parallelUploadUrls: string[] | null;
}

/**
 * tus-js-client's `urlStorage` kept in one small JSON file, so a push that was interrupted (killed, network cut)
 * finds its upload URLs on the next run and continues where the service stopped receiving. Writes are serialised in
 * this process and land atomically (temp file + rename), so a killed run never leaves a torn file.
 */
export class UploadStateFile {
  private chain: Promise<unknown> = Promise.resolve();

  private warned = false;

  /** `warn`: told once when the file cannot be written (the uploads go on, without resuming a later run). */
  constructor(
    readonly file: string,
    private readonly warn: (message: string) => void = () => undefined,
  ) {}

  private read(): Record<string, Omit<PreviousUpload, 'urlStorageKey'>> {
    try {
      return JSON.parse(fs.readFileSync(this.file, 'utf8')) as Record<string, Omit<PreviousUpload, 'urlStorageKey'>>;
    } catch {
      return {};
    }
  }

  private update(fn: (data: Record<string, Omit<PreviousUpload, 'urlStorageKey'>>) => void): Promise<void> {
    const run = this.chain.then(() => {
      const data = this.read();
      fn(data);
      const tmp = `${this.file}.${process.pid}.tmp`;
      try {
        fs.mkdirSync(path.dirname(this.file), { recursive: true });
        fs.writeFileSync(tmp, JSON.stringify(data, null, 1));
        fs.renameSync(tmp, this.file);
      } catch (err) {
        // A state file that cannot be written (a full disk, a path under a file) costs the resuming of a later run,
        // not this push: tus-js-client would fail the upload (or leave its rejection unhandled).
        try {
          fs.rmSync(tmp, { force: true });
        } catch {
          // nothing was written there either
        }
        const e = err as NodeJS.ErrnoException;
        if (!this.warned)
          this.warn(
            `cannot keep upload state in ${this.file} (${e.code ?? e.message}): an interrupted upload will start again`,
          );
        this.warned = true;
      }
    });
    this.chain = run.catch(() => undefined);
    return run;
  }

  async findAllUploads(): Promise<PreviousUpload[]> {
    const data = this.read();
    // The service drops unfinished uploads after 24 h (Upload-Expires): older entries are of no use.
    const stale = Object.keys(data).filter((k) => Date.now() - Date.parse(data[k]!.creationTime) > STALE_MS);
    if (stale.length) await this.update((d) => stale.forEach((k) => delete d[k]));
    return Object.entries(data)
      .filter(([k]) => !stale.includes(k))
      .map(([urlStorageKey, v]) => ({ ...v, urlStorageKey }));
  }

  async findUploadsByFingerprint(fingerprint: string): Promise<PreviousUpload[]> {
    return (await this.findAllUploads()).filter((u) => u.urlStorageKey.startsWith(`tus::${fingerprint}::`));
  }

  removeUpload(urlStorageKey: string): Promise<void> {
    return this.update((d) => void delete d[urlStorageKey]);
  }

  async addUpload(fingerprint: string, upload: PreviousUpload): Promise<string> {
    const key = `tus::${fingerprint}::${crypto.randomBytes(6).toString('hex')}`;
    const { urlStorageKey: _ignored, ...rest } = upload;
    void _ignored;
    await this.update((d) => void (d[key] = rest));
    return key;
  }
}
