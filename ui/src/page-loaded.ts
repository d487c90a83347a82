let settle: () => void = () => undefined;

/**
 * Resolves once the first screen has been shown with its thumbnails (`firstScreenShown`), or after 3 s at most.
 * Requests the first screen does not need (who the key is, the storage use, the base models of the filters) wait for
 * it: sent at once, they queued before the thumbnails on the browser's six connections, and the first screen took
 * about a third longer (`npm run bench -- grid`). The window's `load` is no such signal: it fires before the first
 * page's tiles are rendered.
 */
export const pageLoaded: Promise<void> = new Promise((resolve) => {
  settle = resolve;
  setTimeout(resolve, 3000);
});

let shown = false;

/** The first screen is in `root`: `pageLoaded` resolves once its images have loaded or failed. */
export function firstScreenShown(root: ParentNode): void {
  if (shown) return;
  shown = true;
  const pending = [...root.querySelectorAll('img')].filter((img) => !img.complete);
  let left = pending.length;
  if (left === 0) return settle();
  const done = () => {
    if (--left === 0) settle();
  };
  for (const img of pending) {
    img.addEventListener('load', done, { once: true });
    img.addEventListener('error', done, { once: true });
  }
}
