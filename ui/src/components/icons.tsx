import type { Kind } from '../format';

const PATHS: Record<Kind, string> = {
  image: 'M4 5h16v14H4z M4 16l5-5 4 4 3-3 4 4 M15.5 9.5a1.5 1.5 0 1 0 0-.01',
  video: 'M4 6h12v12H4z M16 10l4-3v10l-4-3',
  audio: 'M9 18V6l10-2v12 M9 18a3 3 0 1 1-6 0 3 3 0 0 1 6 0 M19 16a3 3 0 1 1-6 0 3 3 0 0 1 6 0',
  model: 'M12 3l8 4.5v9L12 21l-8-4.5v-9z M12 12l8-4.5 M12 12v9 M12 12L4 7.5',
  text: 'M6 3h9l4 4v14H6z M15 3v4h4 M9 12h7 M9 15h7 M9 18h5',
  archive: 'M5 4h14v16H5z M12 4v2 M12 8v2 M12 12v2 M10.5 16h3v2h-3z',
  file: 'M6 3h9l4 4v14H6z M15 3v4h4',
};

export function KindIcon({ kind, size = 40 }: { kind: Kind; size?: number }) {
  return (
    <svg width={size} height={size} viewBox="0 0 24 24" aria-hidden="true" class={`kind-icon kind-${kind}`}>
      <path
        d={PATHS[kind]}
        fill="none"
        stroke="currentColor"
        stroke-width="1.5"
        stroke-linejoin="round"
        stroke-linecap="round"
      />
    </svg>
  );
}
