import { EventEmitter } from 'node:events';
import http from 'node:http';
import type { Duplex } from 'node:stream';
import { answerClientErrors } from '../../src/http/client-error';

/**
 * The parser refuses every chunk that follows its first refusal (and its head timer may fire on top): the connection
 * gets one answer, and its close stays the lingering one (not a destroy at the second refusal, which would reset the
 * connection and lose the answer in the client's kernel).
 */
test('one answer per refused connection, however often the parser refuses it', () => {
  const server = http.createServer();
  answerClientErrors(server, { answering: () => undefined });
  const state = { writable: true };
  const socket = Object.assign(new EventEmitter(), {
    end: jest.fn((): void => {
      state.writable = false;
    }),
    destroy: jest.fn(),
  });
  Object.defineProperty(socket, 'writable', { get: () => state.writable });
  const err = Object.assign(new Error('Parse Error: Invalid method encountered'), { code: 'HPE_INVALID_METHOD' });
  for (let i = 0; i < 5; i++) server.emit('clientError', err, socket as unknown as Duplex);
  expect(socket.end).toHaveBeenCalledTimes(1);
  expect(String((socket.end.mock.calls[0] as unknown[])[0])).toMatch(/^HTTP\/1\.1 400 /);
  expect(socket.destroy).not.toHaveBeenCalled();
  server.close();
});
