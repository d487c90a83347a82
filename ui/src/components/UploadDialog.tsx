import { useEffect, useRef, useState } from 'preact/hooks';
import { parseTags } from '../format';

/**
 * Before files go up: which tags they get. The tags of the current filter are proposed (visible and editable, never
 * applied silently); empty means no tags.
 */
export function UploadDialog({
  files,
  proposed,
  onUpload,
  onCancel,
}: {
  files: File[];
  proposed: string[];
  onUpload(tags: string[]): void;
  onCancel(): void;
}) {
  const [tags, setTags] = useState(proposed.join(', '));
  const input = useRef<HTMLInputElement>(null);
  useEffect(() => {
    const back = document.activeElement as HTMLElement | null;
    input.current?.focus();
    const onKey = (e: KeyboardEvent) => e.key === 'Escape' && onCancel();
    document.addEventListener('keydown', onKey);
    return () => {
      document.removeEventListener('keydown', onKey);
      back?.focus?.();
    };
  }, []);
  const what = files.length === 1 ? files[0]!.name : `${files.length} files`;
  return (
    <div class="modal-backdrop" role="dialog" aria-modal="true" aria-labelledby="upload-title">
      <form
        class="modal"
        onSubmit={(e) => {
          e.preventDefault();
          onUpload(parseTags(tags));
        }}
      >
        <h2 id="upload-title">Upload {what}</h2>
        <label for="upload-tags">Tags</label>
        <input
          id="upload-tags"
          ref={input}
          value={tags}
          onInput={(e) => setTags((e.target as HTMLInputElement).value)}
          aria-describedby="upload-tags-help"
        />
        <p id="upload-tags-help" class="help">
          Comma-separated; leave empty for none.{proposed.length > 0 && ' Proposed: the tags you are filtering by.'}
        </p>
        <div class="row">
          <button type="submit" class="primary">
            Upload
          </button>
          <button type="button" onClick={onCancel}>
            Cancel
          </button>
        </div>
      </form>
    </div>
  );
}
