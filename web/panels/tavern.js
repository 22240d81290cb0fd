// panels/tavern.js — the tavern plugin's panel for the web front end's
// panel area (mount(element, host)); the UI lives in web/tavern/.
export { mount } from '../tavern/tavern.js';
