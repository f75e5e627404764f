// Spool's live console: four views over the node's admin API, drawn with
// the DOM and SVG, no library. Each view polls one endpoint per tick (at
// most one request a second, none while the tab is hidden); the cluster view
// also follows /v1/members/watch as a stream. Nothing here writes: every
// request is a GET.
'use strict';

(function () {
  const TOKEN_KEY = 'spool-admin-token';
  const TICK_MS = 1000;
  const main = document.getElementById('main');

  // ---- small helpers -------------------------------------------------

  // el builds an element: el('td', {class: 'num', data: {x: 1}}, 'text', child...).
  // kids drops the absent children a view passes (null for "nothing here").
  function kids(list) { return list.flat().filter((c) => c !== null && c !== undefined && c !== false); }

  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    setAttrs(e, attrs);
    for (const c of children.flat()) {
      if (c === null || c === undefined || c === false) continue;
      e.append(c instanceof Node ? c : String(c));
    }
    return e;
  }
  const SVGNS = 'http://www.w3.org/2000/svg';
  function svg(tag, attrs) {
    const e = document.createElementNS(SVGNS, tag);
    setAttrs(e, attrs);
    return e;
  }
  function setAttrs(e, attrs) {
    if (!attrs) return;
    for (const [k, v] of Object.entries(attrs)) {
      if (v === undefined || v === null || v === false) continue;
      if (k === 'data') {
        for (const [dk, dv] of Object.entries(v)) e.dataset[dk] = dv;
      } else {
        e.setAttribute(k, v === true ? '' : v);
      }
    }
  }
  function num(n) { return n === undefined || n === null || n < 0 ? '–' : Number(n).toLocaleString('en-US'); }
  function bytes(n) {
    if (n === undefined || n === null || n < 0) return '–';
    const u = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
    let i = 0;
    while (n >= 1024 && i < u.length - 1) { n /= 1024; i++; }
    return (i === 0 ? n.toFixed(0) : n.toFixed(1)) + ' ' + u[i];
  }
  function rate(n, unit) {
    if (!n) return '0 ' + unit;
    if (n >= 1e6) return (n / 1e6).toFixed(1) + ' M' + unit;
    if (n >= 1e3) return (n / 1e3).toFixed(1) + ' k' + unit;
    return (n >= 10 ? n.toFixed(0) : n.toFixed(1)) + ' ' + unit;
  }
  function clock(t) { return new Date(t).toLocaleTimeString('en-GB'); }
  function ids(list) { return (list || []).join(', ') || '–'; }
  function sleep(ms, signal) {
    return new Promise((resolve) => {
      const t = setTimeout(resolve, ms);
      if (signal) signal.addEventListener('abort', () => { clearTimeout(t); resolve(); }, { once: true });
    });
  }

  // ---- the admin API, and the token ------------------------------------

  class Unauthorized extends Error {}

  function headers() {
    const h = { Accept: 'application/json' };
    const tok = sessionStorage.getItem(TOKEN_KEY);
    if (tok) h.Authorization = 'Bearer ' + tok;
    return h;
  }

  async function api(path, signal) {
    const r = await fetch(path, { headers: headers(), cache: 'no-store', signal });
    if (r.status === 401) throw new Unauthorized(await r.text());
    if (!r.ok) throw new Error(path + ': ' + r.status + ' ' + (await r.text()).slice(0, 200));
    return r.json();
  }

  const conn = document.getElementById('conn');
  function connState(ok, text) {
    conn.className = 'conn ' + (ok ? 'ok' : 'err');
    conn.textContent = text;
    conn.title = text;
  }

  // ---- polling: one request per tick, in turn --------------------------

  // poll runs next() (which makes one request) every TICK_MS, the next
  // tick starting a full tick after the previous one began, so a view never
  // asks more than once a second; a hidden tab skips its ticks.
  function poll(next, signal) {
    (async () => {
      while (!signal.aborted) {
        const began = Date.now();
        if (!document.hidden) {
          try {
            await next(signal);
            connState(true, 'live');
          } catch (e) {
            if (signal.aborted) return;
            if (e instanceof Unauthorized) { lock(e.message); return; }
            connState(false, String(e.message || e));
          }
        }
        await sleep(Math.max(TICK_MS - (Date.now() - began), 0), signal);
      }
    })();
  }

  // ---- charts ----------------------------------------------------------

  // chart draws points ([[t, v], ...]) over the window [t1-span, t1] as an
  // SVG line with its area; data-last and data-max carry the newest and the
  // largest value (for people with a screen reader, and for the tests).
  function chart(points, o) {
    const w = o.w || 120, h = o.h || 26, pad = o.axis ? 48 : 1;
    // The window is the span the node keeps, or less while the history is
    // younger than that (the sampler starts with the first reader), never
    // under a minute.
    const t1 = o.now;
    const oldest = points.length ? points[0][0] : t1;
    const t0 = t1 - Math.min(o.span, Math.max(t1 - oldest, 60000));
    const vis = points.filter((p) => p[0] >= t0);
    let vmax = 0;
    for (const p of vis) vmax = Math.max(vmax, p[1]);
    const last = points.length ? points[points.length - 1][1] : 0;
    const s = svg('svg', {
      class: 'spark', width: w, height: h, viewBox: `0 0 ${w} ${h}`, role: 'img',
      'aria-label': `${o.label || ''}: now ${last}, max ${vmax}`,
      data: { chart: o.name || '', last: String(last), max: String(vmax), points: String(vis.length) },
    });
    const top = o.axis ? 6 : 1, bottom = o.axis ? h - 14 : h - 1;
    const x = (t) => pad + ((t - t0) / (t1 - t0)) * (w - pad - 2);
    const y = (v) => bottom - (vmax > 0 ? (v / vmax) * (bottom - top) : 0);
    if (o.axis) {
      s.append(svg('line', { class: 'axis', x1: pad, y1: bottom, x2: w, y2: bottom }));
      const tt = svg('text', { x: pad - 3, y: top + 8, 'text-anchor': 'end' }); tt.textContent = o.fmt ? o.fmt(vmax) : vmax; s.append(tt);
      const t0l = svg('text', { x: pad, y: h - 2 }); t0l.textContent = '-' + (t1 - t0 >= 120000 ? Math.round((t1 - t0) / 60000) + ' min' : Math.round((t1 - t0) / 1000) + ' s'); s.append(t0l);
      const t1l = svg('text', { x: w - 2, y: h - 2, 'text-anchor': 'end' }); t1l.textContent = 'now'; s.append(t1l);
    }
    if (vis.length > 0) {
      const pts = vis.map((p) => `${x(p[0]).toFixed(1)},${y(p[1]).toFixed(1)}`);
      s.append(svg('path', { class: 'area', d: `M${x(vis[0][0]).toFixed(1)},${bottom} L${pts.join(' L')} L${x(vis[vis.length - 1][0]).toFixed(1)},${bottom} Z` }));
      s.append(svg('path', { class: 'line', d: 'M' + pts.join(' L') }));
      if (vis.length === 1) s.append(svg('circle', { class: 'dot', cx: x(vis[0][0]).toFixed(1), cy: y(vis[0][1]).toFixed(1), r: 2 })); // a lone point has no line
    }
    return s;
  }

  // Series accumulates the points a view receives in deltas (?since=),
  // keyed by name, each bounded to the span the node keeps.
  class Series {
    constructor() { this.by = new Map(); this.keep = 300; }
    add(key, points) {
      let s = this.by.get(key);
      if (!s) { s = []; this.by.set(key, s); }
      for (const p of points) {
        const lastT = s.length ? s[s.length - 1][0] : -1;
        if (p[0] > lastT) s.push(p);
        else if (p[0] === lastT) s[s.length - 1] = p;
      }
      if (s.length > this.keep) s.splice(0, s.length - this.keep);
      return s;
    }
    get(key) { return this.by.get(key) || []; }
  }

  // ---- cluster view ----------------------------------------------------

  const EVENT_TYPES = new Set(['join', 'fail', 'leave', 'reap']);

  function clusterView(signal) {
    const members = new Map();
    const events = [];
    let loadedEvents = false;
    const summary = el('div', { class: 'summary' });
    const tbody = el('tbody');
    const strip = el('div');
    const list = el('ul', { class: 'timeline' });
    main.replaceChildren(
      el('h2', null, 'Cluster'), summary,
      el('div', { class: 'card scroll' }, el('table', { id: 'members' },
        el('thead', null, el('tr', null, ['Name', 'ID', 'Status', 'Rack', 'Gen', 'Kafka', 'Admin', 'Raft', 'Led'].map((c, i) => el('th', { class: i === 1 || i === 4 || i === 8 ? 'num' : null }, c)))),
        tbody)),
      el('div', { class: 'card' }, el('h3', null, 'Membership events'), strip, list));

    function render() {
      const rows = [...members.values()].sort((a, b) => a.id - b.id);
      const count = (s) => rows.filter((m) => m.status === s).length;
      summary.replaceChildren(
        el('div', null, el('b', { id: 'alive-count' }, count('alive')), el('span', null, 'alive')),
        el('div', null, el('b', null, count('joining')), el('span', null, 'joining')),
        el('div', null, el('b', { id: 'failed-count' }, count('failed')), el('span', null, 'failed')),
        el('div', null, el('b', null, count('left')), el('span', null, 'left')),
        el('div', null, el('b', null, rows.reduce((n, m) => n + (m.partitions_led || 0), 0)), el('span', null, 'partitions led')));
      tbody.replaceChildren(...rows.map((m) => el('tr', { data: { member: m.id, status: m.status } },
        el('td', null, m.name), el('td', { class: 'num' }, m.id),
        el('td', { class: 'status status-' + m.status }, m.status),
        el('td', null, m.rack || '–'), el('td', { class: 'num' }, m.generation),
        el('td', null, m.kafka_addr), el('td', null, m.admin_addr || '–'), el('td', null, m.raft_addr || '–'),
        el('td', { class: 'num' }, m.status === 'alive' || m.status === 'joining' ? m.partitions_led : '–'))));
      renderEvents();
    }

    function renderEvents() {
      const now = Date.now(), span = 10 * 60 * 1000, w = 600, h = 28;
      const s = svg('svg', { class: 'spark', width: w, height: h, viewBox: `0 0 ${w} ${h}`, role: 'img', 'aria-label': 'membership events, last 10 minutes' });
      s.append(svg('line', { class: 'axis', x1: 0, y1: h / 2, x2: w, y2: h / 2 }));
      for (const ev of events) {
        const t = Date.parse(ev.time);
        if (t < now - span) continue;
        const c = svg('circle', { class: 'ev-' + ev.type, cx: (((t - (now - span)) / span) * (w - 8) + 4).toFixed(1), cy: h / 2, r: 5 });
        const title = svg('title'); title.textContent = `${clock(t)} ${ev.type} ${ev.member.name}`; c.append(title);
        s.append(c);
      }
      strip.replaceChildren(s, el('div', { class: 'muted' }, 'last 10 minutes'));
      list.replaceChildren(...events.slice(-200).reverse().map((ev) => el('li', { data: { event: ev.type, member: ev.member.id } },
        el('span', { class: 'muted' }, clock(Date.parse(ev.time)) + ' '),
        el('span', { class: 'type type-' + ev.type }, ev.type), ' ',
        `${ev.member.name} (broker ${ev.member.id}${ev.member.rack ? ', rack ' + ev.member.rack : ''}, gen ${ev.member.generation})`)));
      if (events.length === 0) list.replaceChildren(el('li', { class: 'muted' }, 'No join, failure or departure since this node started.'));
    }

    function addEvent(ev) {
      if (!EVENT_TYPES.has(ev.type)) return;
      const t = Date.parse(ev.time);
      if (events.some((e) => e.type === ev.type && e.member.id === ev.member.id && Date.parse(e.time) === t)) return;
      events.push(ev);
      events.sort((a, b) => Date.parse(a.time) - Date.parse(b.time));
      if (events.length > 500) events.splice(0, events.length - 500);
    }

    async function watch() {
      while (!signal.aborted) {
        try {
          const r = await fetch('/v1/members/watch', { headers: headers(), cache: 'no-store', signal });
          if (r.status === 401) { lock(await r.text()); return; }
          if (!r.ok) throw new Error('watch: ' + r.status);
          const reader = r.body.getReader();
          const dec = new TextDecoder();
          let buf = '';
          for (;;) {
            const { value, done } = await reader.read();
            if (done) break;
            buf += dec.decode(value, { stream: true });
            let i;
            while ((i = buf.indexOf('\n')) >= 0) {
              const line = buf.slice(0, i).trim();
              buf = buf.slice(i + 1);
              if (!line) continue;
              const ev = JSON.parse(line);
              // The event carries the member as it is now: its row
              // changes at once, without waiting for the next poll.
              if (ev.type === 'reap') members.delete(ev.member.id); else members.set(ev.member.id, ev.member);
              addEvent(ev);
              render();
            }
          }
        } catch (e) {
          if (signal.aborted) return;
        }
        await sleep(2000, signal); // the node restarted or the stream broke: again, gently
      }
    }

    poll(async () => {
      if (!loadedEvents) {
        for (const ev of await api('/v1/console/events', signal)) addEvent(ev);
        loadedEvents = true;
        watch();
        render();
        return;
      }
      const ms = await api('/v1/members', signal);
      members.clear();
      for (const m of ms) members.set(m.id, m);
      render();
    }, signal);
  }

  // ---- the console state, shared by topics and groups ------------------

  // stateFeed fetches /v1/console/state with ?since= so each answer carries
  // only the new points, and accumulates them.
  function stateFeed() {
    const f = { parts: new Series(), inRate: new Series(), outRate: new Series(), lag: new Series(), lagPart: new Series(),
      latest: null, span: 300000, since: 0 };
    f.fetch = async (signal) => {
      // The first answer is thinned to what a chart can draw; then each
      // carries the seconds since the last, every point.
      const st = await api('/v1/console/state?since=' + f.since + (f.since === 0 ? '&max_points=150' : ''), signal);
      f.latest = st;
      f.span = (st.keep || 300) * (st.interval_ms || 1000);
      for (const s of [f.parts, f.inRate, f.outRate, f.lag, f.lagPart]) s.keep = st.keep || 300;
      for (const p of st.partitions) {
        const k = p.topic + '/' + p.partition;
        f.parts.add(k, p.points);
        f.inRate.add(k, p.points.map((q) => [q[0], q[4]]));
        f.outRate.add(k, p.points.map((q) => [q[0], q[6]]));
      }
      for (const g of st.groups) {
        f.lag.add(g.group, g.lag);
        for (const lp of g.lag_by_partition) f.lagPart.add(g.group + '|' + lp.topic + '/' + lp.partition, lp.points);
      }
      // Brokers sample at their own phase: ask again from a little before
      // this answer, the overlap merged away by time.
      f.since = Math.max(st.now - 3000, 0);
      return st;
    };
    return f;
  }

  function unanswered(st) {
    const bad = (st.nodes || []).filter((n) => n.error);
    if (bad.length === 0) return null;
    return el('p', { class: 'error' }, 'Not answering, their partitions and groups missing here: ' + bad.map((n) => `broker ${n.id} (${n.error})`).join('; '));
  }

  // ---- topics view -----------------------------------------------------

  // underReplicated: fewer in-sync replicas than replicas, or a replica on
  // a broker that is down (the leader may not have dropped it from the
  // ISR yet).
  function underReplicated(p) {
    return (p.isr || []).length < p.replicas.length || (p.offline || []).length > 0;
  }

  function topicsView(signal) {
    const feed = stateFeed();
    let placement = null, turn = 0;
    const body = el('div');
    main.replaceChildren(el('h2', null, 'Topics'), body);

    function render() {
      if (!placement) return;
      const now = Date.now();
      const byTopic = new Map();
      for (const p of placement) {
        if (!byTopic.has(p.topic)) byTopic.set(p.topic, []);
        byTopic.get(p.topic).push(p);
      }
      const offline = placement.filter((p) => p.leader < 0).length;
      const under = placement.filter((p) => p.leader >= 0 && underReplicated(p)).length;
      let inTotal = 0;
      for (const p of placement) { const s = feed.inRate.get(p.topic + '/' + p.partition); if (s.length) inTotal += s[s.length - 1][1]; }
      const cards = [];
      const names = [...byTopic.keys()].sort((a, b) => (a.startsWith('__') - b.startsWith('__')) || a.localeCompare(b));
      for (const name of names) {
        const parts = byTopic.get(name).sort((a, b) => a.partition - b.partition);
        const rows = parts.map((p) => {
          const k = p.topic + '/' + p.partition;
          const pts = feed.parts.get(k);
          const last = pts.length ? pts[pts.length - 1] : null;
          const isr = p.isr || [];
          const cls = p.leader < 0 ? 'offline' : (underReplicated(p) ? 'under' : null);
          const inS = feed.inRate.get(k), outS = feed.outRate.get(k);
          return el('tr', { class: cls, data: { tp: k } },
            el('td', { class: 'num' }, p.partition),
            el('td', { class: 'num leader' }, p.leader < 0 ? 'none' : p.leader),
            el('td', { class: 'num epoch' }, p.leader_epoch < 0 ? '–' : p.leader_epoch),
            el('td', null, ids(p.replicas), p.differs ? el('span', { class: 'badge warn', title: 'placement today would be ' + ids(p.preferred) }, 'moves to ' + ids(p.preferred)) : null),
            el('td', { class: 'isr' }, ids(isr), cls === 'under' ? el('span', { class: 'badge warn' }, 'under-replicated') : null),
            el('td', { class: 'offline-replicas' }, ids(p.offline), cls === 'offline' ? el('span', { class: 'badge bad' }, 'offline') : null),
            el('td', { class: 'num start' }, last ? num(last[1]) : '–'),
            el('td', { class: 'num end' }, last ? num(last[2]) : '–'),
            el('td', { class: 'num size' }, last ? bytes(last[3]) : '–'),
            el('td', { class: 'num' }, chart(inS, { now, span: feed.span, name: 'produce-' + k, label: 'records/s produced' }), ' ', rate(inS.length ? inS[inS.length - 1][1] : 0, 'rec/s')),
            el('td', { class: 'num' }, chart(outS, { now, span: feed.span, name: 'fetch-' + k, label: 'bytes/s fetched' }), ' ', rate(outS.length ? outS[outS.length - 1][1] : 0, 'B/s')));
        });
        const bad = parts.filter((p) => p.leader < 0).length, low = parts.filter((p) => p.leader >= 0 && underReplicated(p)).length;
        cards.push(el('div', { class: 'card scroll', data: { topic: name } },
          el('h3', null, name, el('span', { class: 'badge' }, parts.length + ' partitions'), el('span', { class: 'badge' }, 'RF ' + parts[0].replicas.length),
            bad ? el('span', { class: 'badge bad' }, bad + ' offline') : null, low ? el('span', { class: 'badge warn' }, low + ' under-replicated') : null),
          el('table', null, el('thead', null, el('tr', null, ['Partition', 'Leader', 'Epoch', 'Replicas', 'ISR', 'Offline', 'Start', 'End', 'Size', 'Produce', 'Fetch']
            .map((c, i) => el('th', { class: i < 3 || i > 5 ? 'num' : null }, c)))), el('tbody', null, rows))));
      }
      if (cards.length === 0) cards.push(el('p', { class: 'muted' }, 'No topics yet.'));
      body.replaceChildren(
        el('div', { class: 'summary' },
          el('div', null, el('b', null, byTopic.size), el('span', null, 'topics')),
          el('div', null, el('b', null, placement.length), el('span', null, 'partitions')),
          el('div', null, el('b', { id: 'offline-count' }, offline), el('span', null, 'offline')),
          el('div', null, el('b', { id: 'under-count' }, under), el('span', null, 'under-replicated')),
          el('div', null, el('b', null, rate(inTotal, 'rec/s')), el('span', null, 'produced'))),
        ...kids([feed.latest ? unanswered(feed.latest) : null, cards]));
    }

    // Placement and the sampled state take turns: each every other second.
    poll(async () => {
      if (turn++ % 2 === 0) placement = await api('/v1/placement', signal);
      else await feed.fetch(signal);
      render();
    }, signal);
  }

  // ---- groups view -----------------------------------------------------

  function groupsView(signal) {
    const feed = stateFeed();
    const body = el('div');
    main.replaceChildren(el('h2', null, 'Consumer groups'), body);

    function assignment(a) {
      const parts = Object.keys(a || {}).sort().map((t) => `${t}[${a[t].join(',')}]`);
      return parts.join(' ') || '–';
    }

    function render(st) {
      const now = Date.now();
      const cards = st.groups.map((g) => {
        const members = g.members.length
          ? el('table', null, el('thead', null, el('tr', null, ['Member', 'Instance', 'Client', 'Host', 'Assignment'].map((c) => el('th', null, c)))),
            el('tbody', null, g.members.map((m) => el('tr', { data: { memberId: m.member_id } },
              el('td', null, m.member_id), el('td', null, m.instance_id || '–'), el('td', null, m.client_id), el('td', null, m.host), el('td', null, assignment(m.assignment))))))
          : el('p', { class: 'muted' }, 'No members.');
        const offsets = el('table', null, el('thead', null, el('tr', null, ['Topic', 'Partition', 'Committed', 'End', 'Lag', 'Lag, last minutes', 'Member']
          .map((c, i) => el('th', { class: i >= 1 && i <= 4 ? 'num' : null }, c)))),
        el('tbody', null, g.offsets.map((o) => el('tr', { data: { tp: o.topic + '/' + o.partition } },
          el('td', null, o.topic), el('td', { class: 'num' }, o.partition), el('td', { class: 'num committed' }, num(o.committed)),
          el('td', { class: 'num end' }, num(o.end)), el('td', { class: 'num lag' }, num(o.lag)),
          el('td', null, chart(feed.lagPart.get(g.group + '|' + o.topic + '/' + o.partition), { now, span: feed.span, name: 'lag-' + o.topic + '/' + o.partition, label: 'lag' })),
          el('td', null, o.member || '–')))));
        return el('div', { class: 'card scroll', data: { group: g.group } },
          el('h3', null, g.group,
            el('span', { class: 'badge' }, g.type === 'consumer' ? 'consumer (KIP-848)' : 'classic'),
            el('span', { class: 'badge' + (g.state === 'Stable' ? ' ok' : '') }, g.state),
            g.protocol ? el('span', { class: 'badge' }, g.protocol) : null,
            el('span', { class: 'badge' }, 'coordinator ' + g.coordinator),
            el('span', { class: 'badge' }, g.members.length + ' members'),
            el('span', { class: 'badge' + (g.total_lag > 0 ? ' warn' : ' ok') }, 'lag ', el('span', { class: 'total-lag' }, g.total_lag))),
          el('div', null, chart(feed.lag.get(g.group), { now, span: feed.span, w: 640, h: 110, axis: true, name: 'lag-' + g.group, label: 'total lag', fmt: num })),
          el('h3', null, 'Members'), members, el('h3', null, 'Offsets'), offsets);
      });
      if (cards.length === 0) cards.push(el('p', { class: 'muted' }, 'No groups. A group appears once a consumer joins it or commits an offset.'));
      body.replaceChildren(
        el('div', { class: 'summary' },
          el('div', null, el('b', null, st.groups.length), el('span', null, st.groups_total > st.groups.length ? `groups shown of ${st.groups_total}` : 'groups')),
          el('div', null, el('b', null, num(st.groups.reduce((n, g) => n + g.total_lag, 0))), el('span', null, 'total lag'))),
        ...kids([unanswered(st), cards]));
    }

    poll(async () => render(await feed.fetch(signal)), signal);
  }

  // ---- operations view -------------------------------------------------

  function operationsView(signal) {
    let rebalance = null, roster = null, quarantine = null, scrub = null;
    const drains = new Map();
    let turn = 0;
    const body = el('div');
    main.replaceChildren(el('h2', null, 'Operations'), body);

    // The requests in turn, one a tick: moves, roster, each draining
    // broker's progress, quarantine, scrubber.
    function steps() {
      const s = [
        async () => { rebalance = await api('/v1/rebalance', signal); },
        async () => {
          roster = await api('/v1/roster', signal);
          for (const id of [...drains.keys()]) if (!roster.some((e) => e.id === id && e.drain)) drains.delete(id);
        },
      ];
      for (const e of roster || []) {
        if (e.drain && !e.decommissioned) s.push(async () => { drains.set(e.id, await api('/v1/roster/drain?id=' + e.id, signal)); });
      }
      s.push(async () => { quarantine = await api('/v1/quarantine', signal); });
      s.push(async () => { scrub = await api('/v1/scrub', signal); });
      return s;
    }

    function progress(done, total) {
      const f = total > 0 ? Math.min(done / total, 1) : 0;
      const i = el('i'); i.style.width = (f * 100).toFixed(1) + '%';
      return el('span', null, el('span', { class: 'bar' }, i), ' ' + (total > 0 ? (f * 100).toFixed(0) + '%' : '–'));
    }

    function render() {
      const parts = [];
      if (rebalance) {
        parts.push(el('div', { class: 'card scroll', id: 'moves' },
          el('h3', null, 'Partition moves', rebalance.paused ? el('span', { class: 'badge warn' }, 'paused') : el('span', { class: 'badge ok' }, 'running'),
            el('span', { class: 'badge' }, rebalance.moves.length + ' under way')),
          rebalance.moves.length ? el('div', null, progress(rebalance.bytes_copied, rebalance.bytes_to_copy), ' ', bytes(rebalance.bytes_copied) + ' of ' + bytes(rebalance.bytes_to_copy)) : null,
          rebalance.moves.length
            ? el('table', null, el('thead', null, el('tr', null, ['Partition', 'From', 'To', 'Leader', 'Step', 'Progress', 'Started'].map((c) => el('th', null, c)))),
              el('tbody', null, rebalance.moves.map((m) => el('tr', { data: { move: m.topic + '/' + m.partition } },
                el('td', null, m.topic + '/' + m.partition), el('td', null, ids(m.replicas)), el('td', null, ids(m.target)),
                el('td', null, m.leader < 0 ? 'none' : m.leader), el('td', null, m.step, m.error ? el('span', { class: 'error' }, ' ' + m.error) : null),
                el('td', null, progress(m.bytes_copied, m.bytes_to_copy)), el('td', null, m.started_ms ? clock(m.started_ms) : '–')))))
            : el('p', { class: 'muted' }, 'No partition is moving.')));
      }
      if (roster) {
        // A roster entry's drain field counts drains ever started; whether
        // one is under way is what its progress says.
        const draining = [...drains.values()].filter((d) => d.state === 'draining').sort((a, b) => a.broker - b.broker);
        const gone = roster.filter((e) => e.decommissioned);
        parts.push(el('div', { class: 'card scroll', id: 'drains' },
          el('h3', null, 'Drains and decommissions'),
          draining.length
            ? el('table', null, el('thead', null, el('tr', null, ['Broker', 'State', 'Partitions on it', 'Moving', 'Waiting on other moves'].map((c) => el('th', null, c)))),
              el('tbody', null, draining.map((d) => el('tr', { data: { drain: d.broker } }, el('td', null, d.broker),
                el('td', null, d.state + (d.auto ? ' (auto: down too long)' : '') + (d.forced ? ' (forced)' : '') + (d.paused ? ' (moves paused)' : '')),
                el('td', null, d.partitions.length), el('td', null, d.moving), el('td', null, d.movesElsewhere || 0)))))
            : el('p', { class: 'muted' }, 'No broker is draining.'),
          gone.length ? el('p', { class: 'muted' }, 'Decommissioned: ' + gone.map((e) => e.id).join(', ')) : null));
      }
      if (quarantine) {
        parts.push(el('div', { class: 'card scroll', id: 'quarantine' },
          el('h3', null, 'Quarantine on this node', el('span', { class: 'badge' + (quarantine.length ? ' warn' : '') }, quarantine.length + ' entries')),
          quarantine.length
            ? el('table', null, el('thead', null, el('tr', null, ['Name', 'Size', 'Dropped'].map((c) => el('th', null, c)))),
              el('tbody', null, quarantine.map((q) => el('tr', null, el('td', { title: q.path }, q.name), el('td', null, bytes(q.bytes)), el('td', null, new Date(q.dropped).toLocaleString('en-GB'))))))
            : el('p', { class: 'muted' }, 'Nothing set aside.')));
      }
      if (scrub) {
        const findings = [...(scrub.corrupt || []).map((f) => ['corrupt', f]), ...(scrub.quarantined || []).map((f) => ['cut at recovery', f])];
        parts.push(el('div', { class: 'card scroll', id: 'scrub' },
          el('h3', null, 'Scrubber on this node', scrub.rate_bytes_per_sec > 0 ? el('span', { class: 'badge' + (scrub.running ? ' ok' : '') }, scrub.running ? 'scanning' : 'idle') : el('span', { class: 'badge warn' }, 'off'),
            el('span', { class: 'badge' + (findings.length ? ' bad' : ' ok') }, findings.length + ' findings')),
          el('p', null, `${scrub.passes} passes, ${bytes(scrub.bytes_scrubbed)} read, ${scrub.corrupt_batches} corrupt batches found since start` +
            (scrub.rate_bytes_per_sec > 0 ? `; ${bytes(scrub.rate_bytes_per_sec)}/s every ${scrub.interval}` : '') +
            (scrub.last_pass_end ? `; last pass ended ${new Date(scrub.last_pass_end).toLocaleString('en-GB')}` : '')),
          findings.length
            ? el('table', null, el('thead', null, el('tr', null, ['Kind', 'Partition', 'Found', 'Detail'].map((c) => el('th', null, c)))),
              el('tbody', null, findings.map(([kind, f]) => el('tr', null, el('td', null, kind), el('td', null, f.topic + '/' + f.partition),
                el('td', null, new Date(f.found_at).toLocaleString('en-GB')), el('td', { class: 'wrap' }, detail(f))))))
            : null));
      }
      body.replaceChildren(...parts);
    }

    // detail is a finding's own fields (partition.Corruption's), whatever
    // they are called, but the ones shown in columns already.
    function detail(f) {
      return Object.entries(f).filter(([k]) => !['topic', 'partition', 'found_at'].includes(k))
        .map(([k, v]) => `${k} ${typeof v === 'object' ? JSON.stringify(v) : v}`).join(', ');
    }

    poll(async () => {
      const s = steps();
      await s[turn++ % s.length]();
      render();
    }, signal);
  }

  // ---- routing and the lock --------------------------------------------

  const views = { cluster: clusterView, topics: topicsView, groups: groupsView, operations: operationsView };
  let running = null;
  let locked = false;

  function stop() {
    if (running) running.abort();
    running = null;
  }

  function start() {
    stop();
    if (locked) return;
    const name = views[location.hash.slice(1)] ? location.hash.slice(1) : 'cluster';
    for (const a of document.querySelectorAll('#nav a')) a.classList.toggle('active', a.dataset.view === name);
    document.body.dataset.view = name;
    document.body.dataset.starts = String(Number(document.body.dataset.starts || 0) + 1); // views started in this page
    running = new AbortController();
    views[name](running.signal);
  }

  const login = document.getElementById('login');
  const forget = document.getElementById('forget');

  // lock shows the token form and no data: what a view drew goes.
  function lock(why) {
    locked = true;
    stop();
    main.replaceChildren();
    login.hidden = false;
    document.body.dataset.locked = 'true';
    connState(false, 'token needed');
    const had = sessionStorage.getItem(TOKEN_KEY);
    document.getElementById('login-error').textContent = had ? 'The node refused that token: ' + why : '';
    sessionStorage.removeItem(TOKEN_KEY);
    forget.hidden = true;
    document.getElementById('token').focus();
  }

  document.getElementById('login-form').addEventListener('submit', (e) => {
    e.preventDefault();
    const input = document.getElementById('token');
    sessionStorage.setItem(TOKEN_KEY, input.value.trim());
    input.value = '';
    locked = false;
    login.hidden = true;
    delete document.body.dataset.locked;
    forget.hidden = false;
    start();
  });
  forget.addEventListener('click', () => { sessionStorage.removeItem(TOKEN_KEY); location.reload(); });
  forget.hidden = !sessionStorage.getItem(TOKEN_KEY);

  document.getElementById('where').textContent = location.host;
  window.addEventListener('hashchange', start);
  start();
})();
