/**
 * The page's colours: light, dark, or the system's (`prefers-color-scheme`, followed as it changes), chosen with the
 * switch in the header and kept in `localStorage`. The page's head applies it before the first paint (boot.ts), so a
 * dark page never flashes light. Nothing of Preact here.
 */
export type Theme = 'light' | 'dark' | 'system';
export const THEME_STORE = 'assetBrowser.theme';

export function storedTheme(): Theme {
  try {
    const t = localStorage.getItem(THEME_STORE);
    return t === 'light' || t === 'dark' ? t : 'system';
  } catch {
    return 'system';
  }
}

/** Sets `data-theme` on the root element to what the choice resolves to (the stylesheet's dark colours key on it). */
export function applyTheme(t: Theme = storedTheme()): void {
  const dark = t === 'dark' || (t === 'system' && matchMedia('(prefers-color-scheme: dark)').matches);
  document.documentElement.dataset.theme = dark ? 'dark' : 'light';
}

export function saveTheme(t: Theme): void {
  try {
    if (t === 'system') localStorage.removeItem(THEME_STORE);
    else localStorage.setItem(THEME_STORE, t);
  } catch {
    /* storage refused: the choice holds for this page */
  }
  applyTheme(t);
}

/** Follows the system's scheme while the choice is "system". */
export function followSystem(): () => void {
  const mq = matchMedia('(prefers-color-scheme: dark)');
  const on = () => storedTheme() === 'system' && applyTheme('system');
  mq.addEventListener('change', on);
  return () => mq.removeEventListener('change', on);
}
