import { startS3Server, type TestS3Server } from '../helpers/rgw';

/**
 * The REST asset suite (assets.test.ts), unchanged, with STORAGE_BACKEND=s3 against Ceph RGW: every service the suite
 * starts gets the S3 settings added to its environment.
 */
let mockS3Env: Record<string, string> = {};
jest.mock('../helpers/harness', () => {
  const actual = jest.requireActual('../helpers/harness');
  return {
    ...actual,
    startTestService: (env: Record<string, string> = {}, opts?: unknown) =>
      actual.startTestService({ ...mockS3Env, ...env }, opts),
  };
});

let s3: TestS3Server;
beforeAll(async () => {
  s3 = await startS3Server();
  mockS3Env = s3.env;
});
afterAll(async () => {
  await s3?.stop();
});

describe('assets REST suite on S3', () => {
  require('./assets.test');

  test('the suite really ran on S3', () => {
    expect(mockS3Env.STORAGE_BACKEND).toBe('s3');
  });
});
