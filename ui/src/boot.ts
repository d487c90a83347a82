// Inlined in the page's head (src/http/ui/ui.router.ts): the theme before the first paint, and the first screen's
// requests, sent before the bundle loads.
import { startEarly } from './first-screen';
import { applyTheme } from './theme';

applyTheme();
startEarly();
