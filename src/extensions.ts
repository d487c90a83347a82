import type { AppExtensions } from './app';
import type { Container } from './container';
import { downloadsRouter } from './http/rest/downloads.router';
import { tasksRouter } from './http/rest/tasks.router';

/**
 * Modules that plug into the container and the app (downloads and tasks, GraphQL). Each registers its job
 * definitions on the container's queue before the queue starts, and returns what the app mounts.
 */
export async function buildExtensions(c: Container): Promise<AppExtensions> {
  return {
    apiRouters: [downloadsRouter({ downloads: c.downloads }), tasksRouter({ tasks: c.tasks })],
    urlUploader: (principal, body) => c.downloads.uploadFromUrl(principal, body),
  };
}
