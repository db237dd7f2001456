// The single-page shell: routes GrowthForecast's page paths to views,
// intercepts same-origin links (history.pushState, no reloads), and runs
// the live refresh of graph images.
//
// A view is `async (main, params, ctx) => void`; it may register
// ctx.onRefresh(fn) for live updates and ctx.onLeave(fn) for cleanup.
// ctx.signal aborts when the user navigates away.

import { h, clear, notice } from './dom.js';
import { listView } from './list.js';

const REFRESH_MS = 60_000;
const main = document.getElementById('main');

const dec = (m) => m.slice(1).map(decodeURIComponent);
const lazy = (file, name) => async (...a) => (await import(`./${file}`))[name](...a);
const graphView = lazy('graph.js', 'graphView');
const editView = lazy('edit.js', 'editView');
const complexView = lazy('complex.js', 'complexView');

const ROUTES = [
  [/^\/$/, () => [listView, {}]],
  [/^\/list\/([^/]+)$/, (m) => { const [service] = dec(m); return [listView, { service }]; }],
  [/^\/list\/([^/]+)\/([^/]+)$/, (m) => { const [service, section] = dec(m); return [listView, { service, section }]; }],
  [/^\/view_graph\/([^/]+)\/([^/]+)\/([^/]+)$/, (m) => [graphView, { kind: 'graph', names: dec(m) }]],
  [/^\/view_complex\/([^/]+)\/([^/]+)\/([^/]+)$/, (m) => [graphView, { kind: 'complex', names: dec(m) }]],
  [/^\/edit\/([^/]+)\/([^/]+)\/([^/]+)$/, (m) => [editView, { names: dec(m) }]],
  [/^\/add_complex$/, () => [complexView, {}]],
  [/^\/edit_complex\/([^/]+)\/([^/]+)\/([^/]+)$/, (m) => [complexView, { names: dec(m) }]],
];

function match(path) {
  for (const [re, make] of ROUTES) {
    const m = path.match(re);
    if (m) return make(m);
  }
  return null;
}

let current = null; // { ctrl, refreshers, leavers }

async function render(focus) {
  if (current) {
    current.ctrl.abort();
    for (const f of current.leavers) { try { f(); } catch { /* a view's cleanup must not stop navigation */ } }
  }
  const ctx = { ctrl: new AbortController(), refreshers: [], leavers: [] };
  current = ctx;
  const view = match(location.pathname);
  clear(main);
  document.querySelectorAll('nav a').forEach((a) => {
    a.toggleAttribute('aria-current', a.getAttribute('href') === location.pathname);
  });
  if (!view) {
    main.append(h('h1', null, 'Page not found'), notice('error', 'There is no page at this address. ', h('a', { href: '/', 'data-nav': '' }, 'See all graphs')));
    return;
  }
  const [fn, params] = view;
  try {
    await fn(main, params, {
      signal: ctx.ctrl.signal,
      onRefresh: (f) => ctx.refreshers.push(f),
      onLeave: (f) => ctx.leavers.push(f),
    });
  } catch (e) {
    if (e.name === 'AbortError' || current !== ctx) return;
    clear(main).append(h('h1', null, 'Something went wrong'), notice('error', String(e.message || e)));
  }
  if (focus && current === ctx) {
    const h1 = main.querySelector('h1');
    if (h1) { h1.tabIndex = -1; h1.focus({ preventScroll: true }); }
  }
}

/** Goes to `url` inside the app. */
export function navigate(url, replace = false) {
  if (replace) history.replaceState(null, '', url);
  else history.pushState(null, '', url);
  window.scrollTo(0, 0);
  render(true);
}
window.rrdNavigate = navigate;

document.addEventListener('click', (e) => {
  if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
  const a = e.target.closest('a[href]');
  if (!a || a.target || a.hasAttribute('download')) return;
  const url = new URL(a.href, location.href);
  if (url.origin !== location.origin || !match(url.pathname)) return;
  e.preventDefault();
  navigate(url.pathname + url.search + url.hash);
});
window.addEventListener('popstate', () => render(false));

// Live refresh: every image with data-live reloads with a fresh cache
// buster; views can refresh their numbers too. Paused while the tab is
// hidden, caught up when it becomes visible again.
const liveButton = document.getElementById('live');
let live = localStorage.getItem('rrd-live') !== 'off';
let lastRefresh = Date.now();

function setLive(on) {
  live = on;
  localStorage.setItem('rrd-live', on ? 'on' : 'off');
  liveButton.setAttribute('aria-pressed', String(on));
  liveButton.title = on ? 'Live: graphs reload every 60 seconds (click to pause)' : 'Paused: click to reload graphs every 60 seconds';
}

export function refreshNow() {
  lastRefresh = Date.now();
  for (const img of document.querySelectorAll('img[data-live]')) {
    const base = img.dataset.live;
    img.src = `${base}${base.includes('?') ? '&' : '?'}_=${Math.floor(lastRefresh / 1000)}`;
  }
  if (current) for (const f of current.refreshers) { try { f(); } catch { /* next tick retries */ } }
}

// For the browser test and the console: refresh without waiting a minute.
window.rrdRefresh = refreshNow;

liveButton.addEventListener('click', () => { setLive(!live); if (live) refreshNow(); });
setLive(live);
setInterval(() => {
  if (live && !document.hidden && Date.now() - lastRefresh >= REFRESH_MS - 1000) refreshNow();
}, 5000);
document.addEventListener('visibilitychange', () => {
  if (live && !document.hidden && Date.now() - lastRefresh >= REFRESH_MS) refreshNow();
});

render(false);
