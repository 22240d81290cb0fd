/* lib-realm.js — cdsh's own code, run once per template worker in the
 * library realm after ejs was evaluated there. It gathers what templates may
 * use into one object (lib). Isolation: each evaluation runs in its own
 * fresh global context; the only objects of this realm it can ever hold are
 * the libraries that lib.get hands out, and before the first of them is
 * handed out lib.get seals this realm — freezes everything reachable from
 * its global object, intrinsics included, and the intrinsics only a call
 * reaches (iterator and generator prototypes...) — so that no evaluation
 * can leave state behind for the next one. Until then no object of this
 * realm reaches an evaluation (template-realm.js wraps escapeXML and asks
 * for ejs like for the other libraries), which lets the worker be ready
 * before the seal: it is done when the worker is idle or when a template
 * first uses a library. `__sources` (set by the worker) is an object that
 * the worker fills with the text of lodash, showdown, jsonrepair or the
 * faker bundle only when it loads that library — when the worker is idle,
 * or when an evaluation asked for it (lib.ready false: the evaluation is
 * run again once it is loaded) — so that start-up converts none of that
 * text. lib.get evaluates one as a CommonJS-style factory touching no
 * global, and freezes it in turn. showdown gets its documented defaults
 * (metadata and header ids off). ejsSource keeps ejs's generated code per
 * template text (a bounded cache of strings: nothing an evaluation can
 * reach or change).
 * Completion value: the library object handed to every evaluation. */
(function (g) {
  'use strict';
  var sources = g.__sources;
  delete g.__sources;
  var frozen = new WeakSet();

  function deepFreeze(root, skip) {
    var stack = [root];
    while (stack.length) {
      var o = stack.pop();
      if (o === null || (typeof o !== 'object' && typeof o !== 'function') || frozen.has(o)) continue;
      if (skip && skip.has(o)) continue;
      frozen.add(o);
      var keys = Reflect.ownKeys(o);
      for (var i = 0; i < keys.length; i++) {
        var d = Reflect.getOwnPropertyDescriptor(o, keys[i]);
        if (!d) continue;
        if ('value' in d) stack.push(d.value);
        else { stack.push(d.get); stack.push(d.set); }
      }
      stack.push(Object.getPrototypeOf(o));
      Object.freeze(o);
    }
  }

  /* Evaluates a UMD/CommonJS build with its own module object; returns
   * module.exports. Indirect eval: this realm, no caller scope. */
  function load(name) {
    var text = sources[name];
    if (typeof text !== 'string') throw new Error(name + ' is not installed in the template runtime');
    delete sources[name];
    /* The faker bundle is an IIFE assigned to a var (build.mjs). */
    var tail = name === 'faker' ? '\n;module.exports = __fakerModule;' : '';
    var f = (0, eval)('(function (module, exports, define, require) {' + text + tail + '\n})');
    var module = { exports: {} };
    f.call(undefined, module, module.exports, undefined, undefined);
    return module.exports;
  }

  /* The intrinsics no property path reaches, only a call: each made once
   * here so the seal freezes it (where this engine has it). */
  function reachedByCalls() {
    var found = [];
    var makers = [
      function () { return [][Symbol.iterator](); },
      function () { return ''[Symbol.iterator](); },
      function () { return new Map().entries(); },
      function () { return new Set().values(); },
      function () { return /a/[Symbol.matchAll](''); },
      function () { return function* () {}; },
      function () { return (function* () {})(); },
      function () { return async function () {}; },
      function () { return async function* () {}; },
      function () { return (async function* () {})(); },
      function () { return [].values().map(function (x) { return x; }); },
      function () { return Iterator.from({ next: function () { return { done: true }; } }); },
      function () { return new Intl.Segmenter().segment('a'); },
      function () { return new Intl.Segmenter().segment('a')[Symbol.iterator](); },
      function () { return Object.getOwnPropertyDescriptor((function () { 'use strict'; return arguments; })(), 'callee').get; }
    ];
    for (var i = 0; i < makers.length; i++) {
      try { found.push(Object.getPrototypeOf(makers[i]())); } catch (e) { /* not in this engine */ }
    }
    return found;
  }
  var sealed = false;
  function seal() {
    if (sealed) return;
    var extra = reachedByCalls();
    deepFreeze(g);
    for (var i = 0; i < extra.length; i++) deepFreeze(extra[i]);
    deepFreeze(lib);
    sealed = true;
  }

  var cache = {};
  var setup = {
    ejs: function () { return ejs; },
    lodash: function (m) { return m; },
    jsonrepair: function (m) { return m; },
    /* Faker instances answer through Proxies (definitions), which freezing
     * would break: every evaluation gets its own instances (make), while
     * the classes and the shared locale data are frozen here, by way of two
     * throwaway instances whose Proxies are left out. */
    faker: function (m) {
      var locales = { en: [m.en, m.base], zh_CN: [m.zh_CN, m.en, m.base] };
      Object.keys(locales).forEach(function (k) {
        var probe = new m.Faker({ locale: locales[k] });
        deepFreeze(probe, new Set([probe.definitions]));
      });
      deepFreeze(m.Faker);
      var Faker = m.Faker;
      return {
        make: function (seed) {
          var en = new Faker({ locale: locales.en, seed: seed });
          return { faker: en, fakerEN: en, fakerZH_CN: new Faker({ locale: locales.zh_CN, seed: seed }) };
        }
      };
    },
    showdown: function (sd) {
      sd.setOption('metadata', false);
      sd.setOption('noHeaderId', true);
      /* The module-wide mutators (setOption, setFlavor, extension, ...)
       * keep their state in showdown's closure, out of reach of freezing:
       * templates get a facade without them. Converter options stay per
       * converter. */
      return {
        Converter: sd.Converter,
        helper: sd.helper,
        getOptions: function () { return JSON.parse(JSON.stringify(sd.getOptions())); },
        getDefaultOptions: sd.getDefaultOptions,
        makeHtml: function (md, opts) {
          var o = { metadata: false, noHeaderId: true };
          for (var k in opts || {}) if (k !== 'metadata' && k !== 'noHeaderId') o[k] = opts[k];
          return new sd.Converter(o).makeHtml(String(md == null ? '' : md));
        }
      };
    }
  };
  /* A library, loaded and frozen on first use; this realm is sealed
   * before any is handed out. */
  function get(name) {
    if (!Object.prototype.hasOwnProperty.call(setup, name)) throw new Error('no library ' + name);
    if (!Object.prototype.hasOwnProperty.call(cache, name)) {
      seal();
      var m = setup[name](name === 'ejs' ? null : load(name));
      deepFreeze(m);
      cache[name] = m;
    }
    return cache[name];
  }
  var ejs = g.ejs;
  /* ejs's own compiler produces the template's function body; the worker
   * wraps it as ejs's Template#compile does (compileDebug on), but with the
   * Function constructor of the evaluation's realm, so the template's code
   * runs there and not here. The body depends on the text alone (the
   * options are fixed), so it is kept per text: a Map of strings in this
   * closure (this realm's Map, frozen like the rest), the least recently
   * used dropped past CACHE_ENTRIES or CACHE_CHARS. */
  var CACHE_ENTRIES = 256, CACHE_CHARS = 4 << 20;
  var compiled = new Map(), cachedChars = 0;
  function ejsSource(text) {
    text = String(text);
    var hit = compiled.get(text);
    if (typeof hit === 'string') {
      /* the most recent use goes last */
      compiled.delete(text);
      compiled.set(text, hit);
      return hit;
    }
    var t = new ejs.Template(text, { compileDebug: true, strict: false, _with: true,
                                     localsName: 'locals', legacyInclude: false });
    t.generateSource();
    var body = String(t.source);
    var size = text.length + body.length;
    if (size <= CACHE_CHARS / 4) {
      compiled.set(text, body);
      cachedChars += size;
      while (compiled.size > CACHE_ENTRIES || cachedChars > CACHE_CHARS) {
        var oldest = compiled.keys().next().value;
        cachedChars -= oldest.length + compiled.get(oldest).length;
        compiled.delete(oldest);
      }
    }
    return body;
  }

  /* What template-realm.js uses: ejsSource and escapeXML take and return
   * strings; get and ready as above (ejs is a library like the others). */
  var lib = {
    ejsSource: ejsSource,
    escapeXML: ejs.escapeXML,
    get: get,
    /* Whether a library is loaded (an evaluation may use it now). */
    ready: function (name) { return Object.prototype.hasOwnProperty.call(cache, name); }
  };
  Object.freeze(lib);
  return lib;
})(this);
