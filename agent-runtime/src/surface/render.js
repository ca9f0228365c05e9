/* Rendering helpers shared by the two pages served from the binary: the human console
   (surface/console) and the session view of an MCP client (surface/mcp/app_view.rs; docs/mcp.md
   §The session view in the chat). Every value from a
   state, a payload or a log is written as text (textContent), never parsed as HTML. */
var Render = (function () {
  'use strict';
  // An element: attributes (`text` sets its text, `on<event>` a listener), then children.
  function h(tag, attrs) {
    var el = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) {
      var v = attrs[k];
      if (v === undefined || v === null || v === false) return;
      if (k === 'text') el.textContent = String(v);
      else if (k.slice(0, 2) === 'on') el.addEventListener(k.slice(2), v);
      else el.setAttribute(k, v === true ? '' : String(v));
    });
    for (var i = 2; i < arguments.length; i++) append(el, arguments[i]);
    return el;
  }
  // append(el, child, child, ...): strings become text nodes; arrays are flattened.
  function append(el) {
    for (var i = 1; i < arguments.length; i++) {
      var child = arguments[i];
      if (child === undefined || child === null || child === false) continue;
      if (Array.isArray(child)) { child.forEach(function (c) { append(el, c); }); continue; }
      el.appendChild(typeof child === 'object' ? child : document.createTextNode(String(child)));
    }
  }
  function clip(s, n) { s = String(s); return s.length > n ? s.slice(0, n - 1) + '\u2026' : s; }
  function isContainer(v) { return v !== null && typeof v === 'object'; }
  // A JSON Pointer segment.
  function seg(k) { return String(k).replace(/~/g, '~0').replace(/\//g, '~1'); }
  // One line of a scalar: JSON text, clipped.
  function scalar(v) {
    var text = JSON.stringify(v);
    return h('span', { 'class': 'v v-' + (v === null ? 'null' : typeof v), text: clip(text === undefined ? String(v) : text, 400) });
  }

  var PAGE = 50;
  // A collapsible tree of `value` at JSON Pointer `path`. `opts.elided[path]` names a part
  // the server left out ({size, shown, read}); `opts.load(arguments)` reads its next page
  // (query_state) and answers {value, offset, nextOffset}. Big containers show PAGE children
  // at a time.
  function tree(value, path, opts, label, depth) {
    depth = depth || 0;
    var key = label === undefined ? null : h('span', { 'class': 'k', text: label + ': ' });
    if (!isContainer(value)) {
      var cut = opts.elided && opts.elided[path];
      return h('div', { 'class': 'row', 'data-path': path }, key, scalar(value),
        cut ? more(path, cut, opts, function (page) { return scalar(page.value); }) : null);
    }
    var array = Array.isArray(value);
    var keys = array ? value.map(function (_, i) { return i; }) : Object.keys(value);
    var size = keys.length;
    var box = h('div', { 'class': 'kids' });
    var node = h('details', { 'class': 'node', 'data-path': path, open: depth < 3 || undefined },
      h('summary', {}, key, h('span', { 'class': 'm', text: array ? '[' + size + ']' : '{' + size + '}' })), box);
    var shown = 0;
    function page() {
      keys.slice(shown, shown + PAGE).forEach(function (k) {
        box.appendChild(tree(value[k], path + '/' + seg(k), opts, String(k), depth + 1));
      });
      shown = Math.min(size, shown + PAGE);
      if (shown < size) {
        box.appendChild(h('button', { 'class': 'more', text: 'Show ' + Math.min(PAGE, size - shown) + ' more of ' + size,
          onclick: function (ev) { ev.target.remove(); page(); } }));
      }
    }
    page();
    var cut = opts.elided && opts.elided[path];
    if (cut) {
      box.appendChild(more(path, cut, opts, function (got) {
        var part = got.value, offset = got.offset || 0;
        if (Array.isArray(part)) {
          return part.map(function (v, i) { return tree(v, path + '/' + (offset + i), opts, String(offset + i), depth + 1); });
        }
        return Object.keys(part || {}).map(function (k) { return tree(part[k], path + '/' + seg(k), opts, k, depth + 1); });
      }));
    }
    return node;
  }
  // The button that reads the next page of a part the server left out.
  function more(path, cut, opts, render) {
    var args = cut.read && cut.read.arguments;
    if (!args || !opts.load) return h('span', { 'class': 'm', text: ' (' + cut.shown + ' of ' + cut.size + ' shown)' });
    var holder = h('div', { 'class': 'page' });
    function button(a, shown) {
      return h('button', { 'class': 'more', text: 'Load more (' + shown + ' of ' + cut.size + ' shown)',
        onclick: function (ev) {
          var b = ev.target; b.disabled = true;
          opts.load(a).then(function (got) {
            b.remove();
            append(holder, render(got));
            if (got.nextOffset !== undefined && got.nextOffset !== null) {
              var next = JSON.parse(JSON.stringify(a)); next.offset = got.nextOffset;
              holder.appendChild(button(next, got.nextOffset));
            }
          }, function (e) { b.disabled = false; b.textContent = 'Load more failed: ' + clip(e.message, 120); });
        } });
    }
    holder.appendChild(button(args, cut.shown));
    return holder;
  }
  // A JSON Patch, one row per operation, its value as JSON text.
  function patch(ops) {
    return h('ul', { 'class': 'patch' }, (ops || []).map(function (op) {
      var kind = String(op && op.op);
      return h('li', { 'class': 'op op-' + kind.replace(/[^a-z]/g, '') },
        h('span', { 'class': 'opk', text: kind }), ' ',
        h('code', { text: String(op && op.path) || '(root)' }),
        op && op.from !== undefined ? h('span', { text: ' from ' + op.from }) : null,
        op && 'value' in op ? [' ', scalar(op.value)] : null);
    }));
  }
  // A progress bar of a Work entry's `progress`: {fraction?, done?, total?, text?}.
  function progress(p) {
    p = p || {};
    var fraction = typeof p.fraction === 'number' ? p.fraction
      : (typeof p.done === 'number' && p.total ? p.done / p.total : null);
    var bar = h('progress', { max: 1 });
    if (fraction !== null) bar.value = Math.max(0, Math.min(1, fraction));
    var label = [p.done !== undefined ? p.done + (p.total ? '/' + p.total : '') : '', p.text || ''].join(' ').trim();
    return h('span', { 'class': 'prog' }, bar, label ? h('span', { 'class': 'm', text: ' ' + clip(label, 200) }) : null);
  }
  return { h: h, append: append, clip: clip, seg: seg, tree: tree, patch: patch, progress: progress };
})();
