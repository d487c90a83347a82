import { useEffect, useRef } from 'preact/hooks';

const KEYS: [string, string][] = [
  ['?', 'Show this list'],
  ['/', 'Search by name'],
  ['Esc', 'Close the open dialog, viewer, tags drawer or details'],
  ['← → ↑ ↓', 'Move between tiles (grid)'],
  ['Enter', 'Open the details of the focused asset'],
  ['Space', 'Tick the focused tile; Shift+click ticks a range'],
  ['← →', 'Previous / next in the viewer'],
];

/** The keyboard shortcuts (`?`); Escape, the close button or a click beside it closes it. */
export function Shortcuts({ onClose }: { onClose(): void }) {
  const close = useRef<HTMLButtonElement>(null);
  useEffect(() => {
    const back = document.activeElement as HTMLElement | null;
    close.current?.focus();
    return () => back?.focus?.();
  }, []);
  return (
    <div
      class="modal-backdrop"
      role="dialog"
      aria-modal="true"
      aria-labelledby="shortcuts-title"
      onClick={(e) => e.target === e.currentTarget && onClose()}
    >
      <div class="modal">
        <h2 id="shortcuts-title">Keyboard shortcuts</h2>
        <dl class="shortcuts">
          {KEYS.map(([k, v]) => (
            <div key={k + v}>
              <dt>
                <kbd>{k}</kbd>
              </dt>
              <dd>{v}</dd>
            </div>
          ))}
        </dl>
        <div class="row">
          <button type="button" ref={close} onClick={onClose}>
            Close
          </button>
        </div>
      </div>
    </div>
  );
}
