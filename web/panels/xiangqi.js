// xiangqi.js — the xiangqi plugin's panel entry (docs/web.md "Panels"): the
// board itself lives in web/xiangqi/board.js.
export { mount } from '../xiangqi/board.js';
