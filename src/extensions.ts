import type { AppExtensions } from './app';
import type { Container } from './container';

/**
 * Modules that plug into the container and the app (downloads and tasks, GraphQL). Each registers its job
 * definitions on the container's queue before the queue starts, and returns what the app mounts.
 */
export async function buildExtensions(c: Container): Promise<AppExtensions> {
  void c;
  return {};
}
