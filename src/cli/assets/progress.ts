import cliProgress from 'cli-progress';

/** Progress of one file (or task): bytes done so far, then a final line. */
export interface FileProgress {
  /** Moves the bar to `bytes` done (absolute: a resumed transfer starts above zero). */
  update(bytes: number): void;
  /** Ends this item; `line` is what a plain (non-terminal) run prints for it. */
  finish(line?: string): void;
}

/** What the commands report to: bars on a terminal, plain lines on stderr otherwise. */
export interface Progress {
  /** Adds bytes to the total the overall bar counts towards. */
  addTotal(bytes: number): void;
  /** `hidden`: counted in the total only, no bar and no line of its own (a folder of many small files). */
  item(label: string, size: number, hidden?: boolean): FileProgress;
  log(line: string): void;
  stop(): void;
}

export function formatBytes(n: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  let v = n;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return i === 0 ? `${n} B` : `${v.toFixed(1)} ${units[i]}`;
}

const PLAIN_EVERY_MS = 10_000;

/**
 * Text as it may go to a terminal: control characters (an escape sequence in a name sent by a hostile server could
 * rewrite the screen or the window title) and bidirectional controls shown as `\u001b`-style escapes.
 */
export const printable = (s: string): string =>
  s.replace(
    /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );

const shorten = (s: string, max = 40): string => (s.length <= max ? s : '…' + s.slice(s.length - max + 1));

function barPayload(value: number, startedAt: number, startValue: number): { speed: string; done: string } {
  const secs = (Date.now() - startedAt) / 1000;
  const rate = secs > 0.2 ? (value - startValue) / secs : 0;
  return { speed: `${formatBytes(Math.round(rate))}/s`, done: formatBytes(value) };
}

/** cli-progress multibar: a bar per running file and one for the total (bytes/s, ETA). */
class TerminalProgress implements Progress {
  private readonly multi = new cliProgress.MultiBar(
    {
      format: '{label} {bar} {percentage}% | {done}/{size} | {speed} | ETA {eta_formatted}',
      stream: process.stderr,
      hideCursor: true,
      clearOnComplete: false,
      stopOnComplete: false,
      etaBuffer: 50,
      fps: 10,
      autopadding: true,
      barsize: 24,
      // Lines logged above the bars clear the bars' first line; redraw even unchanged bars so none goes missing.
      forceRedraw: true,
    },
    cliProgress.Presets.shades_classic,
  );
  private totalBytes = 0;
  private totalDone = 0;
  private readonly startedAt = Date.now();
  private readonly totalBar: cliProgress.SingleBar;

  constructor() {
    // Ctrl-C: show the cursor again (the bars hide it) and end as an interrupted command does.
    process.once('SIGINT', () => {
      process.stderr.write('\x1b[?25h\n');
      process.exit(130);
    });
    this.totalBar = this.multi.create(1, 0, {
      label: 'total'.padEnd(40),
      size: formatBytes(0),
      speed: '',
      done: formatBytes(0),
    });
  }

  addTotal(bytes: number): void {
    this.totalBytes += bytes;
    this.totalBar.setTotal(Math.max(1, this.totalBytes));
    this.totalBar.update(this.totalDone, { size: formatBytes(this.totalBytes) });
  }

  item(label: string, size: number, hidden = false): FileProgress {
    if (hidden) {
      let done = 0;
      const move = (bytes: number): void => {
        this.totalDone += bytes - done;
        done = bytes;
        this.totalBar.update(this.totalDone, barPayload(this.totalDone, this.startedAt, 0));
      };
      return { update: move, finish: () => move(size) };
    }
    const started = Date.now();
    const bar = this.multi.create(Math.max(1, size), 0, {
      label: shorten(label).padEnd(40),
      size: formatBytes(size),
      speed: '',
      done: formatBytes(0),
    });
    let last = 0;
    let first: number | undefined;
    return {
      update: (bytes) => {
        first ??= bytes;
        this.totalDone += bytes - last;
        last = bytes;
        bar.update(bytes, barPayload(bytes, started, first));
        this.totalBar.update(this.totalDone, barPayload(this.totalDone, this.startedAt, 0));
      },
      finish: (line) => {
        this.totalDone += size - last;
        last = size;
        bar.update(Math.max(1, size), { done: formatBytes(size) });
        bar.stop();
        this.multi.remove(bar);
        if (line) this.multi.log(`${line}\n`);
        this.totalBar.update(this.totalDone, barPayload(this.totalDone, this.startedAt, 0));
      },
    };
  }

  log(line: string): void {
    this.multi.log(line + '\n');
  }

  stop(): void {
    this.totalBar.update(this.totalDone, barPayload(this.totalDone, this.startedAt, 0));
    // MultiBar.stop() draws the bars but not the lines logged since the last redraw: flush them first.
    this.multi.update();
    this.multi.stop();
  }
}

/** No terminal: one line per finished item on stderr, no bars; a long transfer also says where it is every 10 s. */
class PlainProgress implements Progress {
  addTotal(): void {}
  item(label: string, size: number, hidden = false): FileProgress {
    if (hidden) return { update: () => {}, finish: () => {} };
    const started = Date.now();
    let last = started;
    return {
      update: (bytes) => {
        const now = Date.now();
        if (now - last < PLAIN_EVERY_MS || size === 0) return;
        last = now;
        const { speed } = barPayload(bytes, started, 0);
        process.stderr.write(
          `${label}: ${Math.floor((bytes / size) * 100)}% (${formatBytes(bytes)} of ${formatBytes(size)}, ${speed})\n`,
        );
      },
      finish: (line) => line && process.stderr.write(line + '\n'),
    };
  }
  log(line: string): void {
    process.stderr.write(line + '\n');
  }
  stop(): void {}
}

/**
 * Bars only when stderr is a terminal (and not --quiet); plain lines otherwise. Every label and line made printable.
 */
export function createProgress(opts: { quiet?: boolean } = {}): Progress {
  if (opts.quiet)
    return { addTotal: () => {}, item: () => ({ update: () => {}, finish: () => {} }), log: () => {}, stop: () => {} };
  const p: Progress = process.stderr.isTTY ? new TerminalProgress() : new PlainProgress();
  return {
    addTotal: (bytes) => p.addTotal(bytes),
    item: (label, size, hidden) => {
      const it = p.item(printable(label), size, hidden);
      return {
        update: (bytes) => it.update(bytes),
        finish: (line) => it.finish(line === undefined ? undefined : printable(line)),
      };
    },
    log: (line) => p.log(printable(line)),
    stop: () => p.stop(),
  };
}
