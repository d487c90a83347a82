import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { ApiError, type Api } from '../api';
import { uploadFile, type UploadState } from '../uploads';

/** At most this many files go up at once; the rest wait their turn. */
const PARALLEL = 3;

/**
 * Uploads of this page, each with its progress. Files dropped anywhere on the window go to `onDropped` first (the
 * page asks which tags they get); `addFiles` uploads them with the tags chosen.
 */
export function useUploads(api: Api, onUploaded: (name: string) => void, onDropped: (files: File[]) => void) {
  const [uploads, setUploads] = useState<UploadState[]>([]);
  const [dragging, setDragging] = useState(false);
  const queue = useRef<{ file: File; key: string; tags: string[] }[]>([]);
  const running = useRef(0);
  const uploaded = useRef(onUploaded);
  uploaded.current = onUploaded;

  const patch = (key: string, p: Partial<UploadState>) =>
    setUploads((us) => us.map((u) => (u.key === key ? { ...u, ...p } : u)));

  const pump = useCallback(() => {
    while (running.current < PARALLEL && queue.current.length) {
      const { file, key, tags: fileTags } = queue.current.shift()!;
      running.current++;
      uploadFile(api, file, fileTags, (p) => patch(key, p))
        .then(
          (assetId) => {
            patch(key, { status: 'done', assetId, sent: file.size, cancel: undefined });
            uploaded.current(file.name);
          },
          (err: Error) =>
            patch(key, {
              status: err instanceof ApiError && err.code === 'CANCELLED' ? 'cancelled' : 'failed',
              error: err.message,
              cancel: undefined,
            }),
        )
        .finally(() => {
          running.current--;
          pump();
        });
    }
  }, [api]);

  const addFiles = (files: FileList | File[] | null | undefined, tags: string[]) => {
    const list = [...(files ?? [])];
    if (!list.length) return;
    const added = list.map((file, i) => ({ file, key: `${Date.now()}-${i}-${file.name}`, tags }));
    setUploads((us) => [
      ...added.map(({ file, key }) => ({
        key,
        name: file.name,
        size: file.size,
        sent: 0,
        status: 'uploading' as const,
      })),
      ...us,
    ]);
    queue.current.push(...added);
    pump();
  };
  const dropped = useRef(onDropped);
  dropped.current = onDropped;

  // Drag and drop anywhere on the page (the overlay shows while files are dragged over it).
  useEffect(() => {
    let depth = 0;
    const hasFiles = (e: DragEvent) => !!e.dataTransfer && [...e.dataTransfer.types].includes('Files');
    const enter = (e: DragEvent) => {
      if (!hasFiles(e)) return;
      depth++;
      setDragging(true);
    };
    const over = (e: DragEvent) => {
      if (!hasFiles(e)) return;
      e.preventDefault();
      e.dataTransfer!.dropEffect = 'copy';
    };
    const leave = () => {
      depth = Math.max(0, depth - 1);
      if (!depth) setDragging(false);
    };
    const drop = (e: DragEvent) => {
      if (!hasFiles(e)) return;
      e.preventDefault();
      depth = 0;
      setDragging(false);
      if (e.dataTransfer!.files.length) dropped.current([...e.dataTransfer!.files]);
    };
    window.addEventListener('dragenter', enter);
    window.addEventListener('dragover', over);
    window.addEventListener('dragleave', leave);
    window.addEventListener('drop', drop);
    return () => {
      window.removeEventListener('dragenter', enter);
      window.removeEventListener('dragover', over);
      window.removeEventListener('dragleave', leave);
      window.removeEventListener('drop', drop);
    };
  }, []);

  const clearFinished = () => setUploads((us) => us.filter((u) => u.status === 'uploading'));
  return { uploads, dragging, addFiles, clearFinished };
}
