/* The session view (docs/mcp.md §The session view in the chat): speaks the MCP Apps
   postMessage JSON-RPC to its host (SEP-1865), reads the session through the host's tools/call
   and decides nothing: Approve, Reject, Cancel and Undo open the console in the person's
   browser (ui/open-link). */
(function () {
  'use strict';
  var h = Render.h, clip = Render.clip;
  var config = {};
  try { config = JSON.parse(document.getElementById('agent-config').textContent) || {}; } catch (e) { config = {}; }
  var calls = {}, nextId = 1, stopped = false, seq = null, failures = 0, lag = {}, proposals = null;

  function $(id) { return document.getElementById(id); }
  function status(text, error) { var s = $('status'); s.textContent = text; s.className = error ? 'status error' : 'status'; }
  function post(message) { window.parent.postMessage(message, '*'); }

  // A request to the host; the answer within `ms`.
  function rpc(method, params, ms) {
    var id = nextId++;
    return new Promise(function (resolve, reject) {
      var timer = setTimeout(function () { delete calls[id]; reject(new Error(method + ': the host did not answer')); }, ms || 20000);
      calls[id] = { resolve: resolve, reject: reject, timer: timer };
      post({ jsonrpc: '2.0', id: id, method: method, params: params });
    });
  }
  function notify(method, params) { post({ jsonrpc: '2.0', method: method, params: params || {} }); }

  window.addEventListener('message', function (ev) {
    if (ev.source !== window.parent) return;
    var m = ev.data;
    if (!m || m.jsonrpc !== '2.0') return;
    if (!m.method && m.id !== undefined && calls[m.id]) {
      var call = calls[m.id]; delete calls[m.id]; clearTimeout(call.timer);
      if (m.error) call.reject(new Error(String(m.error.message || 'error ' + m.error.code)));
      else call.resolve(m.result);
      return;
    }
    if (m.method === 'ui/notifications/tool-result') { shown(m.params); return; }
    if (m.method === 'ui/resource-teardown') { stop('The view was closed.'); reply(m, {}); return; }
    if (m.method === 'ping') { reply(m, {}); return; }
    if (m.method && m.id !== undefined) post({ jsonrpc: '2.0', id: m.id, error: { code: -32601, message: 'Method not found' } });
  });
  function reply(m, result) { if (m.id !== undefined) post({ jsonrpc: '2.0', id: m.id, result: result }); }

  // A tool of the server, through the host: its structured answer, or an error with its text.
  // The view's calls share the agent token's rate limit: it takes at most a third of it
  // (`callsPerMinute` from the server), a few at once, so the agent is never starved.
  var perMinute = Math.max(1, Number(config.callsPerMinute) || 10);
  var bucket = { tokens: Math.min(4, perMinute), max: Math.min(4, perMinute), at: Date.now() };
  function budget() {
    var now = Date.now();
    bucket.tokens = Math.min(bucket.max, bucket.tokens + (now - bucket.at) * perMinute / 60000);
    bucket.at = now;
    if (bucket.tokens >= 1) { bucket.tokens -= 1; return Promise.resolve(); }
    var wait = Math.ceil((1 - bucket.tokens) * 60000 / perMinute);
    return new Promise(function (resolve) { setTimeout(resolve, wait); }).then(budget);
  }
  function tool(name, args, ms) {
    return budget().then(function () {
      return rpc('tools/call', { name: name, arguments: args || {} }, ms);
    }).then(function (r) {
      var text = ((r && r.content) || []).map(function (c) { return c && c.type === 'text' ? c.text : ''; }).join('\n');
      if (!r || r.isError) throw new Error(text || name + ' failed');
      if (r.structuredContent) return r.structuredContent;
      return JSON.parse(text);
    });
  }

  // A token revoked, expired or unknown: the view says so and stops.
  var GONE = /revoked|expired|token is invalid|code=unauthorized|status=401|auth failed|not connected/i;
  function stop(text) {
    stopped = true;
    status(text, true);
  }

  function link(suffix) { return config.console ? config.console + suffix : null; }
  // Opens the console where the human decides; the host may ask the person first.
  function open(url, what) {
    if (!url) { $('notice').textContent = 'The console URL is not known: open the app\u2019s console to ' + what + '.'; return; }
    rpc('ui/open-link', { url: url }).then(function () {
      $('notice').textContent = 'Opened the console to ' + what + ': decide there.';
    }, function (e) {
      $('notice').textContent = 'The host did not open the console (' + clip(e.message, 120) + '): ' + url;
    });
  }
  function decideButtons(suffix, what, labels) {
    return labels.map(function (label) {
      return h('button', { 'data-action': label.toLowerCase(), title: 'Opens the console in your browser, where you ' + what,
        text: label + '\u2026', onclick: function () { open(link(suffix), what); } });
    });
  }

  // The state at `root` of an answer (`/state` of observe, `/stateAfter` of wait_for_change),
  // the parts the server left out readable page by page.
  function renderState(answer, root) {
    var elided = {};
    (answer.elided || []).forEach(function (e) { if (e && typeof e.path === 'string') elided[e.path] = e; });
    var opts = { elided: elided, load: function (args) { return tool('query_state', args); } };
    $('state').replaceChildren(Render.tree(answer[root.slice(1)], root, opts));
    $('seq').textContent = seq === null || seq === undefined ? '' : 'seq ' + seq;
  }
  // Running work, each card kept while it runs (its Cancel stays where it is), its bar updated.
  function renderWork(work) {
    var box = $('work'), cards = {};
    $('work-count').textContent = String(work.length);
    Array.prototype.forEach.call(box.querySelectorAll('[data-work-id]'), function (el) { cards[el.getAttribute('data-work-id')] = el; });
    var next = work.map(function (w) {
      var card = cards[String(w.id)] || h('div', { 'class': 'card', 'data-work-id': String(w.id) },
        h('div', { text: (w.intent || w.variant || 'work') + ' (commit ' + w.seq + ')' }),
        h('div', { 'class': 'who' }), h('div', { 'class': 'bar' }),
        h('div', {}, decideButtons('/work/' + encodeURIComponent(w.id), 'cancel it', ['Cancel'])));
      card.querySelector('.who').textContent = 'started by ' + (w.startedBy || '?') + (w.cancelling ? ', stopping' : '');
      card.querySelector('.bar').replaceChildren(Render.progress(w.progress));
      return card;
    });
    box.replaceChildren.apply(box, next.length ? next : [h('p', { 'class': 'empty', text: 'Nothing runs.' })]);
  }
  function renderPending(list) {
    $('pending-count').textContent = String(list.length);
    $('pending').replaceChildren.apply($('pending'), list.length ? list.map(function (p) {
      return h('div', { 'class': 'card', 'data-confirm-id': p.confirmId },
        h('div', { text: p.variant }),
        p.reason ? h('div', { 'class': 'who', text: 'Why: ' + clip(p.reason, 500) }) : null,
        h('div', { 'class': 'payload' }, Render.tree(p.msg, '', {}, undefined, 1)),
        h('div', {}, decideButtons('/confirm/' + encodeURIComponent(p.confirmId), 'approve or reject it', ['Approve', 'Reject'])));
    }) : [h('p', { 'class': 'empty', text: 'Nothing waits for you.' })]);
  }
  var COMMITS = { dispatched: 1, confirmed: 1, undone: 1, cancelled: 1, rejected: 1 };
  function who(e) {
    if (e.kind === 'undone') return 'undone by the human';
    if (e.kind === 'confirmed') return 'agent ' + clip(e.tid || '', 9) + ', approved by the human';
    if (e.kind === 'rejected') return 'rejected';
    return e.tid ? 'agent ' + clip(e.tid, 9) : 'the human';
  }
  function renderCommits(entries) {
    var list = entries.filter(function (e) { return e && COMMITS[e.kind]; }).slice(0, 10);
    var undone = {};
    entries.forEach(function (e) { (e && e.kind === 'undone' && e.undid || []).forEach(function (n) { undone[n] = true; }); });
    $('commits').replaceChildren.apply($('commits'), list.length ? list.map(function (e) {
      var undo = e.tid && e.seq !== undefined && !e.noUndo && (e.kind === 'dispatched' || e.kind === 'confirmed');
      return h('div', { 'class': 'card', 'data-seq': e.seq === undefined ? null : String(e.seq) },
        h('div', { text: (e.intent || e.variant || e.kind) + (e.seq !== undefined ? ' \u00b7 commit ' + e.seq : '') }),
        h('div', { 'class': 'who', text: e.kind + ' \u00b7 ' + who(e) + ' \u00b7 ' + new Date(e.at).toLocaleTimeString() }),
        e.detail && !e.stateDiff ? h('div', { 'class': 'who', text: clip(e.detail, 300) }) : null,
        e.stateDiff ? Render.patch(e.stateDiff) : null,
        undo && undone[e.seq] ? h('div', { 'class': 'who', text: 'undone' }) : null,
        undo && !undone[e.seq] ? h('div', {}, decideButtons('/commit/' + e.seq, 'undo it', ['Undo'])) : null,
        e.noUndo && e.tid ? h('div', { 'class': 'who', text: 'No undo: ' + clip(e.noUndo, 200) }) : null);
    }) : [h('p', { 'class': 'empty', text: 'No commit yet.' })]);
  }

  // The log, and the pending proposals when the log shows a proposal, a decision or a
  // withdrawal since the last read (a first read reads them).
  function readLog() {
    return tool('describe_recent_actions', { n: 40 }).then(function (r) {
      var entries = r.entries || [];
      renderCommits(entries);
      var key = entries.filter(function (e) { return e && (e.confirmId || e.kind === 'proposed'); })
        .map(function (e) { return e.id; }).join(',');
      var logged = entries.reduce(function (m, e) { return typeof e.seq === 'number' && e.seq > m ? e.seq : m; }, -1);
      // The log records a commit just after its state is published: read it again (three
      // times at most) when the newest commit is not in it yet (an effect's never are).
      if (typeof seq === 'number' && logged < seq) {
        lag = lag.seq === seq ? { seq: seq, tries: lag.tries + 1 } : { seq: seq, tries: 1 };
        if (lag.tries <= 3) setTimeout(function () { if (!stopped) readLog().catch(failed); }, 300 * lag.tries);
      }
      if (key === proposals) return;
      proposals = key;
      return tool('list_pending', {}).then(function (p) { renderPending(p.pending || []); });
    }).then(function () { status('Live \u00b7 updated ' + new Date().toLocaleTimeString()); });
  }

  // The first read: the app's name, the state, the work, the log and the pending proposals.
  function first() {
    return tool('observe', {}).then(function (o) {
      seq = o.seq === undefined ? null : o.seq;
      $('app-name').textContent = (o.description && o.description.name) || 'App';
      renderState(o, '/state');
      renderWork(o.work || []);
      return readLog();
    });
  }

  // Waits for a change or progress (wait_for_change through the host), draws what it brought,
  // and reads the log after a change or a quiet wait (a proposal, a decision or an undo record
  // changes no state).
  var WAIT_MS = 15000;
  function loop() {
    if (stopped) return;
    tool('wait_for_change', { sinceSeq: seq === null ? undefined : seq, timeoutMs: WAIT_MS, progress: true }, WAIT_MS + 30000)
      .then(function (w) {
        if (stopped) return;
        if (w.status === 'changed') {
          if (w.seq !== undefined) seq = w.seq;
          renderState(w, '/stateAfter');
        }
        renderWork(w.work || []);
        if (w.status !== 'progress') return readLog();
      })
      .then(function () { failures = 0; loop(); }, function (e) { if (failed(e)) setTimeout(loop, Math.min(30000, 1000 * Math.pow(2, failures))); });
  }
  // A later result the host shows (a call of the model's): its state, without a call.
  function shown(result) {
    var o = result && result.structuredContent;
    if (!o || stopped) return;
    if (o.state !== undefined && typeof o.seq === 'number' && (seq === null || o.seq >= seq)) { seq = o.seq; renderState(o, '/state'); }
  }

  // Whether to go on after `e`.
  function failed(e) {
    var text = String((e && e.message) || e);
    if (GONE.test(text)) { stop('This session\u2019s agent token is no longer valid (revoked or expired): the view stopped. ' + clip(text, 200)); return false; }
    failures++;
    status('Could not read the session: ' + clip(text, 200), true);
    return !stopped;
  }

  if (window.ResizeObserver) {
    new ResizeObserver(function () {
      notify('ui/notifications/size-changed', { width: document.documentElement.scrollWidth, height: document.documentElement.scrollHeight });
    }).observe(document.body);
  }

  rpc('ui/initialize', {
    protocolVersion: '2026-01-26',
    appInfo: { name: 'agent-session-view', version: '1' },
    appCapabilities: { availableDisplayModes: ['inline'] }
  }).then(function () {
    notify('ui/notifications/initialized');
    status('Reading the session\u2026');
    return first();
  }).then(loop, function (e) { if (failed(e)) setTimeout(function () { first().then(loop, failed); }, 2000); });
})();
