import { EventEmitter } from 'node:events';
import type http from 'node:http';
import { RequestGuard } from '../../src/http/request-guard';

/**
 * The answer's side of the request guard (SEND_IDLE_TIMEOUT_MS), on stand-ins for a request, its answer and socket
 * whose counters the test moves: Node reports a socket's progress only per write taken whole, so an answer written in
 * one large piece gets time for its size; a client that takes nothing of a streamed answer is cut at the limit.
 */
function exchange(waiting: number) {
  const socket = Object.assign(new EventEmitter(), {
    bytesRead: 100,
    bytesWritten: 0,
    writableLength: waiting,
    destroyed: false,
    destroy: jest.fn(),
  });
  socket.destroy.mockImplementation(() => (socket.destroyed = true));
  const req = Object.assign(new EventEmitter(), { socket, complete: true }) as unknown as http.IncomingMessage;
  const res = Object.assign(new EventEmitter(), {
    req,
    writableNeedDrain: waiting > 0,
    headersSent: true,
    writableEnded: false,
  }) as unknown as http.ServerResponse;
  return { socket, req, res };
}

describe('RequestGuard, the answer side', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  test('a streamed answer (a write of 256 KiB waiting) the client takes nothing of is cut after the limit', () => {
    const guard = new RequestGuard(0, 1_000);
    const x = exchange(256 * 1024);
    guard.step(x.req, x.res);
    jest.advanceTimersByTime(800);
    expect(x.socket.destroy).not.toHaveBeenCalled();
    jest.advanceTimersByTime(1_000);
    expect(x.socket.destroy).toHaveBeenCalled();
    guard.close();
  });

  test('a client that takes a write now and then is never cut', () => {
    const guard = new RequestGuard(0, 1_000);
    const x = exchange(256 * 1024);
    guard.step(x.req, x.res);
    for (let i = 0; i < 20; i++) {
      jest.advanceTimersByTime(750);
      x.socket.bytesWritten += 256 * 1024;
    }
    expect(x.socket.destroy).not.toHaveBeenCalled();
    guard.close();
  });

  test('an answer of 5 MiB written in one piece gets time to be read at 16 KB/s before it is cut', () => {
    const guard = new RequestGuard(0, 1_000);
    const x = exchange(5 * 1024 * 1024);
    guard.step(x.req, x.res);
    // 1 s + (5 MiB - 256 KiB) at 16 bytes per ms ≈ 312 s.
    jest.advanceTimersByTime(60_000);
    expect(x.socket.destroy).not.toHaveBeenCalled();
    jest.advanceTimersByTime(260_000);
    expect(x.socket.destroy).toHaveBeenCalled();
    guard.close();
  });

  test('an answer waiting for the service (nothing queued for the client) is never cut', () => {
    const guard = new RequestGuard(0, 1_000);
    const x = exchange(0);
    guard.step(x.req, x.res);
    jest.advanceTimersByTime(10_000);
    expect(x.socket.destroy).not.toHaveBeenCalled();
    guard.close();
  });
});
