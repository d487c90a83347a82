import { useEffect, useState } from 'preact/hooks';

/**
 * A module loaded the first time it is wanted (esbuild splits each dynamic import into a chunk of its own): the list
 * view and the keys page stay out of the first screen's script. Undefined until it is in.
 */
export function useLazy<T>(load: () => Promise<T>, wanted: boolean): T | undefined {
  const [mod, setMod] = useState<T>();
  useEffect(() => {
    if (!wanted || mod) return;
    let live = true;
    void load().then((m) => live && setMod(() => m));
    return () => {
      live = false;
    };
  }, [wanted]);
  return mod;
}
