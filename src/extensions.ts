import type { AppExtensions } from './app';
import type { Container } from './container';
import { downloadsRouter } from './http/rest/downloads.router';
import { tasksRouter } from './http/rest/tasks.router';
import { uploadsRouter } from './http/rest/uploads.router';
import { exportDownloadRouter, exportsRouter } from './http/rest/exports.router';
import { graphqlRouter } from './http/graphql/graphql.router';

/** The routers and handlers of downloads, tasks, uploads, exports and GraphQL, for createApp to mount. */
export async function buildExtensions(c: Container): Promise<AppExtensions> {
  // GraphQL last: its resolvers take the container's services as they are once the other modules are in.
  return {
    apiRouters: [
      downloadsRouter({ downloads: c.downloads }),
      tasksRouter({ tasks: c.tasks }),
      uploadsRouter({ uploads: c.uploads, logger: c.logger, publicUrl: c.config.publicUrl }),
      exportsRouter({ exports: c.exports, publicUrl: c.config.publicUrl }),
    ],
    urlUploader: (principal, body) => c.downloads.uploadFromUrl(principal, body),
    remoteMetadata: (principal, url) => c.downloads.remoteMetadata(principal, url),
    rootRouters: [exportDownloadRouter({ exports: c.exports }), await graphqlRouter(c)],
  };
}
