'use strict';
// The baseline of the GraphQL figure: what a team following Apollo Server's documentation gets over the same schema.
// `node bench/lib/apollo-defaults.cjs` (a `main` for bench/lib/common.cjs's spawnService, or a build argument of
// bench/ab.cjs) serves /graphql with `new ApolloServer({ schema })` and its defaults (graphql-js execution, the
// default plugins, its document store) through `expressMiddleware` of @as-integrations/express5 behind
// `express.json()`, with the service's own context (the key checked as every request of the service is) and /readyz.
// The schema, resolvers, database and key are the service's, from the build in BENCH_DIST (default dist).
const http = require('node:http');
const path = require('node:path');
const express = require('express');
const { ApolloServer } = require('@apollo/server');
const { expressMiddleware } = require('@as-integrations/express5');

const dist = path.resolve(__dirname, '..', '..', process.env.BENCH_DIST || 'dist');
const load = (m) => require(path.join(dist, 'src', m));

async function main() {
  const { loadConfig } = load('config.js');
  const { createLogger } = load('infra/logger.js');
  const { migrate } = load('infra/migrate.js');
  const { buildContainer } = load('container.js');
  const { buildGraphQLSchema } = load('http/graphql/schema.js');
  const { createContext } = load('http/graphql/context.js');
  const config = loadConfig(process.env);
  const logger = createLogger(config.logLevel);
  if (!config.databaseUrl) throw new Error('apollo-defaults needs DATABASE_URL');
  await migrate(config.databaseUrl, logger);
  const c = await buildContainer(config, logger, config.databaseUrl);
  const schema = await buildGraphQLSchema(c);
  const server = new ApolloServer({ schema });
  await server.start();
  const context = createContext({ auth: c.requestAuth, assets: c.assets, logger: c.logger });
  const app = express();
  app.get('/readyz', (_req, res) => res.json({ status: 'ok' }));
  // The service's base URL (for the answers' URLs), as its own first step sets it.
  app.use((req, res, next) => {
    res.locals.baseUrl = `http://${req.headers.host}`;
    next();
  });
  app.use('/graphql', express.json(), expressMiddleware(server, { context: ({ req, res }) => context({ req, res }) }));
  const httpServer = http.createServer(app);
  await new Promise((resolve) => httpServer.listen(config.port, config.host, resolve));
  const stop = async () => {
    httpServer.close();
    await server.stop();
    await c.close?.();
    process.exit(0);
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
