import { Client } from 'pg';
import type { Logger } from './logger';

/** Waits between attempts to listen again after the connection was lost (doubling up to the last). */
const RETRY_MS = [250, 500, 1000, 2000, 5000, 10_000];
/**
 * A listening connection answers a query this often, within the same time, or counts as lost: a connection that died
 * without a word (a network partition) would otherwise never say so, and what it should have heard would be missed.
 */
const PING_MS = 5_000;

/**
 * One PostgreSQL connection of its own that LISTENs on a channel, connected again (with backoff) whenever it is lost.
 * `onState(true)` once it listens (and again after each reconnection: notifications sent while it was down are lost,
 * so the caller starts over), `onState(false)` as soon as it is lost; `onMessage` for each notification.
 */
export class PgListener {
  private client: Client | undefined;
  private stopped = false;
  private attempt = 0;
  private timer: NodeJS.Timeout | undefined;
  private ping: NodeJS.Timeout | undefined;
  /** 'down' from a loss (or a failed first attempt) until it listens again: each change is logged once. */
  private state: 'new' | 'listening' | 'down' = 'new';

  constructor(
    private readonly databaseUrl: string,
    private readonly channel: string,
    private readonly handlers: { onMessage(payload: string): void; onState(listening: boolean): void },
    private readonly logger: Logger,
    private readonly connectTimeoutMs = 10_000,
  ) {
    if (!/^[a-z_][a-z0-9_]*$/.test(channel)) throw new Error(`bad channel name ${channel}`);
  }

  /** Connects and listens; resolves once the first attempt succeeded or failed (it keeps trying after a failure). */
  async start(): Promise<void> {
    await this.connect();
  }

  private async connect(): Promise<void> {
    if (this.stopped) return;
    const client = new Client({
      connectionString: this.databaseUrl,
      application_name: `asset-service:${this.channel}`,
      connectionTimeoutMillis: this.connectTimeoutMs,
      keepAlive: true,
    });
    this.client = client;
    let lost = false;
    const onLost = (err?: unknown) => {
      if (lost) return;
      lost = true;
      clearInterval(this.ping);
      this.handlers.onState(false);
      client.removeAllListeners('notification');
      void client.end().catch(() => undefined);
      if (this.stopped) return;
      // Once per loss, as the database's own outage is logged: a message, never a stack, not one line per retry.
      if (this.state !== 'down') {
        this.state = 'down';
        this.logger.warn(`not listening on ${this.channel}; trying again`, {
          err: err instanceof Error ? err.message : 'connection closed',
        });
      }
      const wait = RETRY_MS[Math.min(this.attempt++, RETRY_MS.length - 1)]!;
      this.timer = setTimeout(() => void this.connect(), wait);
      this.timer.unref();
    };
    client.on('error', onLost);
    client.on('end', () => onLost());
    client.on('notification', (n) => {
      if (n.channel === this.channel && n.payload !== undefined) this.handlers.onMessage(n.payload);
    });
    try {
      await client.connect();
      await client.query(`LISTEN ${this.channel}`);
    } catch (err) {
      onLost(err);
      return;
    }
    if (lost || this.stopped) return;
    this.attempt = 0;
    if (this.state === 'down') this.logger.info(`listening on ${this.channel} again`);
    this.state = 'listening';
    this.handlers.onState(true);
    this.ping = setInterval(() => {
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => reject(new Error(`no answer on the ${this.channel} connection in ${PING_MS} ms`)),
          PING_MS,
        );
      });
      Promise.race([client.query('SELECT 1'), late]).then(
        () => clearTimeout(timer),
        (err: unknown) => {
          clearTimeout(timer);
          onLost(err);
        },
      );
    }, PING_MS);
    this.ping.unref();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    clearInterval(this.ping);
    const client = this.client;
    this.client = undefined;
    this.handlers.onState(false);
    await client?.end().catch(() => undefined);
  }
}
