/* template-realm.js — cdsh's own code, run at the start of every template
 * evaluation in that evaluation's fresh global context. The worker has put
 * two things on the global object: `__lib` (the frozen library object of
 * lib-realm.js) and `__input` (the request as JSON text:
 * {src, ctx, write, max_output}). This installs the template API
 * (getvar/setvar/incvar/decvar/delvar, getwi, activewi, entry, print,
 * charName/userName/macros, lastUserMessage...), the libraries (_, ejs,
 * showdown, jsonrepair, faker), a frozen clock and seeded Math.random,
 * compiles the template with ejs's compiler, runs it, and completes with
 * the reply as JSON text: {ok:true, output, changed, vars} or
 * {ok:false, code, message, line, column, expression}, or {ok:false, need}
 * when the template touched a library the worker has not loaded yet: the
 * worker loads it and runs the evaluation again in a new context (nothing of
 * this one is kept, so the second run is the same evaluation). */
(function (g) {
  'use strict';
  var need = null, NEED = {};
  var reply = (function () {
  var lib = g.__lib, req = JSON.parse(g.__input);
  delete g.__lib;
  delete g.__input;
  var MAX = req.max_output >>> 0;
  var ctx = req.ctx && typeof req.ctx === 'object' ? req.ctx : {};
  var src = String(req.src == null ? '' : req.src);

  /* ---- variables and world info (the caller commits them) ---- */
  var vars = ctx.vars && typeof ctx.vars === 'object' ? ctx.vars : {};
  ['global', 'local', 'message'].forEach(function (s) {
    if (!vars[s] || typeof vars[s] !== 'object') vars[s] = {};
  });
  var changed = false;
  function scopeOf(o) {
    var s = (o && o.scope) || 'local';
    if (!Object.prototype.hasOwnProperty.call(vars, s)) throw new Error('unknown scope ' + s);
    return vars[s];
  }
  function walk(obj, path, make) {
    var p = String(path).split('.');
    for (var i = 0; i < p.length - 1; i++) {
      if (p[i] === '__proto__' || p[i] === 'constructor' || p[i] === 'prototype') throw new Error('invalid variable path ' + path);
      if (obj[p[i]] == null || typeof obj[p[i]] !== 'object') {
        if (!make) return [undefined, null];
        obj[p[i]] = {};
      }
      obj = obj[p[i]];
    }
    var last = p[p.length - 1];
    if (last === '__proto__') throw new Error('invalid variable path ' + path);
    return [obj, last];
  }
  var api = {};
  api.getvar = function (path, o) {
    var w = walk(scopeOf(o), path, false);
    var v = w[0] && Object.prototype.hasOwnProperty.call(w[0], w[1]) ? w[0][w[1]] : undefined;
    return v === undefined && o && ('defaults' in o) ? o.defaults : v;
  };
  api.setvar = function (path, v, o) {
    var w = walk(scopeOf(o), path, true);
    w[0][w[1]] = v;
    changed = true;
    return v;
  };
  api.incvar = function (path, by, o) {
    var cur = Number(api.getvar(path, o)) || 0;
    return api.setvar(path, cur + (by === undefined ? 1 : Number(by)), o);
  };
  api.decvar = function (path, by, o) { return api.incvar(path, -(by === undefined ? 1 : Number(by)), o); };
  api.delvar = function (path, o) {
    var w = walk(scopeOf(o), path, false);
    if (w[0] && Object.prototype.hasOwnProperty.call(w[0], w[1])) { delete w[0][w[1]]; changed = true; return true; }
    return false;
  };
  var wi = ctx.wi && typeof ctx.wi === 'object' ? ctx.wi : {};
  var books = wi.books && typeof wi.books === 'object' ? wi.books : {};
  api.getwi = function (book, key) {
    var list = Object.prototype.hasOwnProperty.call(books, book) ? books[book] : [];
    for (var i = 0; i < list.length; i++) {
      var e = list[i];
      if (e.uid === key || String(e.uid) === String(key) || e.comment === key) return e.content;
    }
    return '';
  };
  api.activewi = function () { return JSON.parse(JSON.stringify(wi.active || [])); };
  api.entry = ctx.entry && typeof ctx.entry === 'object' ? ctx.entry : null;
  var macros = ctx.macros && typeof ctx.macros === 'object' ? ctx.macros : {};
  api.macros = macros;
  api.charName = String(macros.char || '');
  api.userName = String(macros.user || '');
  api.lastUserMessage = String(ctx.lastUserMessage || macros.lastUserMessage || '');
  api.lastCharMessage = String(ctx.lastCharMessage || macros.lastCharMessage || '');

  /* ---- libraries ---- */
  var out = '', n = 0, OVER = {};
  api.print = function () {
    for (var i = 0; i < arguments.length; i++) append(arguments[i] == null ? '' : String(arguments[i]));
  };
  /* The libraries, frozen and shared with every evaluation (lodash's own
   * closure state — uniqueId's counter, its path cache — is the one thing
   * that carries over; it holds no template data a template can read). */
  var seed = (ctx.seed >>> 0) || 1;
  /* A library not loaded yet ends this run (need; a catch in the template
   * cannot hide it: the reply says need whatever the run did after). */
  function use(name) {
    if (!lib.ready(name)) {
      need = need || name;
      throw NEED;
    }
    return lib.get(name);
  }
  var fakers = null;
  function fk() {
    if (!fakers) fakers = use('faker').make(seed);
    return fakers;
  }
  var getters = {
    _: function () { return use('lodash'); },
    showdown: function () { return use('showdown'); },
    jsonrepair: function () { return use('jsonrepair').jsonrepair; },
    JSONRepairError: function () { return use('jsonrepair').JSONRepairError; },
    ejs: function () { return use('ejs'); },
    faker: function () { return fk().faker; },
    fakerEN: function () { return fk().fakerEN; },
    fakerZH_CN: function () { return fk().fakerZH_CN; }
  };
  Object.keys(getters).forEach(function (k) {
    Object.defineProperty(g, k, { get: getters[k], enumerable: false, configurable: false });
  });

  /* ---- frozen clock and randomness ---- */
  var rs = seed;
  Math.random = function () {
    rs = (rs + 0x6D2B79F5) >>> 0;
    var t = rs;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  var now = typeof ctx.now === 'number' ? ctx.now : 0;
  var RD = Date;
  var FD = function Date() {
    if (!new.target) return new RD(now).toString();
    return arguments.length === 0 ? new RD(now) : new (Function.prototype.bind.apply(RD, [null].concat(Array.prototype.slice.call(arguments))))();
  };
  FD.prototype = RD.prototype;
  FD.now = function () { return now; };
  FD.UTC = RD.UTC;
  FD.parse = RD.parse;
  g.Date = FD;
  Object.keys(api).forEach(function (k) { g[k] = api[k]; });

  /* ---- compile and run ---- */
  function append(s) {
    n += s.length;
    if (n > MAX) throw OVER;
    out += s;
  }
  function fail(code, message, line, column, expression) {
    return JSON.stringify({ ok: false, code: code, message: String(message),
                            line: line || 0, column: column || 0, expression: expression || '' });
  }
  var tmplLines = src.split('\n');
  /* The template's tags that start on a line: [{col, code}] (1-based col). */
  function tagsOn(line) {
    var res = [], re = /<%(?!%)[_=\-#]?([\s\S]*?)[-_]?%>/g, m, pos = 0, ln = 1;
    while ((m = re.exec(src))) {
      for (; pos < m.index; pos++) if (src.charCodeAt(pos) === 10) ln++;
      if (ln === line) {
        var ls = src.lastIndexOf('\n', m.index - 1) + 1;
        var code = m[1].trim();
        res.push({ col: m.index - ls + 1 + m[0].indexOf(m[1]) + (m[1].length - m[1].trimStart().length), code: code });
      }
      if (ln > line) break;
    }
    return res;
  }
  /* Where in the template: the line ejs recorded (__line), the tag on it
   * whose code holds the failing fragment of the generated line, and the
   * column of that code. */
  function locate(line, genLine, err) {
    var tags = tagsOn(line), frag = (genLine || '').replace(/^\s*;\s*/, '')
      .replace(/^__append\((escapeFn\()?/, '').replace(/\)+\s*$/, '').trim();
    var hit = null;
    for (var i = 0; i < tags.length && !hit; i++) if (frag && tags[i].code.indexOf(frag) >= 0) hit = tags[i];
    var name = /variable: (\S+)|(\S+) is not defined/.exec(String(err && err.message));
    for (i = 0; i < tags.length && !hit && name; i++) if (tags[i].code.indexOf(name[1] || name[2]) >= 0) hit = tags[i];
    if (!hit && tags.length) hit = tags[0];
    if (!hit) return { column: 0, expression: tmplLines[line - 1] ? tmplLines[line - 1].trim() : '' };
    var col = hit.col;
    if (frag && hit.code.indexOf(frag) > 0) col += hit.code.indexOf(frag);
    return { column: col, expression: hit.code };
  }

  var body;
  try {
    body = lib.ejsSource(src);
  } catch (e) {
    /* ejs's parser: an unclosed tag and the like. */
    var m = /<%[^]*$/.exec(src), line = 0, col = 0;
    var open = src.lastIndexOf('<%');
    if (open >= 0) { line = src.slice(0, open).split('\n').length; col = open - src.lastIndexOf('\n', open - 1); }
    return fail('TEMPLATE_SYNTAX', (e && e.message) || String(e), line, col, m ? m[0].slice(0, 80) : '');
  }
  var HEAD = 2; /* JSC wraps a Function body: "function anonymous(args\n) {\n" */
  var pre = '  let __line = 1;\n  var __output = "";\n  function __append(s) { if (s !== undefined && s !== null) __out(String(s)) }\n' +
            '  try {\n  with (locals || {}) {\n';
  var full = pre + body + '  }\n  } catch (e) { rethrow(e, __line); }\n  return __output;\n';
  var genLines = full.split('\n');
  function lineBefore(genLineNo) {
    for (var i = Math.min(genLineNo - 1, genLines.length - 1); i >= 0; i--) {
      var mm = /__line = (\d+)/.exec(genLines[i]);
      if (mm) return +mm[1];
    }
    return 1;
  }
  var fn;
  try {
    fn = new Function('locals, escapeFn, include, rethrow, __out', full);
  } catch (e) {
    var gl = (e && typeof e.line === 'number') ? e.line - HEAD : 0;
    var tl = gl > 0 ? lineBefore(gl) : 1;
    var loc = locate(tl, genLines[gl - 1], e);
    return fail('TEMPLATE_SYNTAX', (e && e.name ? e.name + ': ' : '') + (e && e.message), tl, loc.column, loc.expression);
  }
  var failedAt = 0;
  function rethrow(e, line) { failedAt = line; throw e; }
  /* ejs's escapeXML on a string of this realm; what it throws (a string too
   * large) is rethrown as this realm's error: no object of the library
   * realm reaches the template through it. */
  function escapeFn(v) {
    var s = v === undefined || v === null ? '' : String(v);
    try {
      return lib.escapeXML(s);
    } catch (e) {
      throw new RangeError(String(e && e.message));
    }
  }
  function include() { throw new Error('include is not available in card templates'); }
  try {
    fn.call(undefined, Object.create(null), escapeFn, include, rethrow, append);
  } catch (e) {
    if (e === OVER) return fail('TEMPLATE_OUTPUT_TOO_LARGE', 'template output is larger than ' + MAX + ' bytes', failedAt, 0, '');
    var gl2 = (e && typeof e.line === 'number') ? e.line - HEAD : 0;
    var tl2 = failedAt || (gl2 > 0 ? lineBefore(gl2) : 0);
    var loc2 = tl2 ? locate(tl2, gl2 > 0 ? genLines[gl2 - 1] : '', e) : { column: 0, expression: '' };
    var msg = e instanceof Error || (e && typeof e.message === 'string') ? (e.name ? e.name + ': ' : '') + e.message : 'uncaught value: ' + String(e);
    var code = e && e.name === 'RangeError' && /out of memory/i.test(e.message) ? 'TEMPLATE_MEMORY' : 'TEMPLATE_RUNTIME';
    return fail(code, msg, tl2, loc2.column, loc2.expression);
  }
  var varsJson = req.write ? JSON.stringify(vars) : '{}';
  if (varsJson.length > MAX) return fail('TEMPLATE_OUTPUT_TOO_LARGE', 'template variables are larger than ' + MAX + ' bytes', 0, 0, '');
  return JSON.stringify({ ok: true, output: out, changed: changed, vars: JSON.parse(varsJson) });
  })();
  return need ? '{"ok":false,"need":"' + need + '"}' : reply;
})(this);
