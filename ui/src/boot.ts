// Inlined in the page's head (src/http/ui/ui.router.ts): the first screen's requests, sent before the bundle loads.
import { startEarly } from './first-screen';

startEarly();
