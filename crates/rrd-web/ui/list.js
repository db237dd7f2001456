// The graph list: services → sections → graphs, each graph a card with a
// small image, its current number and description. A filter box narrows
// the list as you type (kept in ?q= so a filtered list can be shared), and
// a range switch changes every thumbnail at once.

import { h, clear, notice, formatNumber } from './dom.js';
import { listAll, pageURL, pngURL, unavailable } from './api.js';

const THUMB_W = 300;
const THUMB_H = 72;
const TERMS = [['h', '2 hours'], ['8h', '8 hours'], ['d', 'Day'], ['w', 'Week'], ['m', 'Month'], ['y', 'Year']];

const enc = encodeURIComponent;

function byOrder(a, b) {
  // GrowthForecast shows higher `sort` first, then names.
  return (b.sort ?? 0) - (a.sort ?? 0) || a.graph_name.localeCompare(b.graph_name);
}

function crumbs(service, section) {
  const parts = [h('a', { href: '/' }, 'All graphs')];
  if (service) parts.push(section ? h('a', { href: `/list/${enc(service)}` }, service) : h('span', { 'aria-current': 'page' }, service));
  if (section) parts.push(h('span', { 'aria-current': 'page' }, section));
  return h('nav', { class: 'crumbs', 'aria-label': 'Breadcrumb' }, h('ol', null, parts.map((p) => h('li', null, p))));
}

function card(g, term) {
  const src = pngURL(g, { t: term, width: THUMB_W, height: THUMB_H, graphonly: 1 });
  const img = h('img', {
    src, width: THUMB_W, height: THUMB_H, loading: 'lazy', decoding: 'async',
    alt: `${g.graph_name}: ${term} graph`, dataset: { live: src },
  });
  // The server draws only a few graphs at once and answers 503 when a
  // thumbnail waited too long for its turn (a long list asks for many at
  // once): try again a little later, a few times, before showing it broken.
  let retries = 0;
  img.addEventListener('error', () => {
    img.classList.add('broken');
    if (retries >= 3) return;
    retries += 1;
    const failed = img.src;
    setTimeout(() => {
      if (img.src !== failed) return; // replaced meanwhile (live refresh, range change)
      const u = new URL(failed, location.href);
      u.searchParams.set('retry', String(retries));
      img.src = u.pathname + u.search;
    }, 1000 * retries + Math.random() * 500);
  });
  img.addEventListener('load', () => { retries = 0; img.classList.remove('broken'); });
  const value = g.complex ? null : h('span', { class: 'value', title: `mode ${g.mode}` }, formatNumber(g.number));
  const li = h('li', { class: 'card', dataset: { id: g.id, name: `${g.service_name}/${g.section_name}/${g.graph_name}`.toLowerCase() } },
    h('a', { href: pageURL(g), class: 'card-link' },
      h('div', { class: 'thumb' }, img),
      h('div', { class: 'card-head' },
        h('span', { class: 'swatch', 'aria-hidden': 'true', dataset: { color: g.color || '' } }),
        h('span', { class: 'name' }, g.graph_name),
        g.complex ? h('span', { class: 'badge' }, 'complex') : value)),
    g.description ? h('p', { class: 'desc' }, g.description) : null);
  li.graph = g;
  return li;
}

export async function listView(main, { service, section }, ctx) {
  const params = new URLSearchParams(location.search);
  let term = TERMS.some(([t]) => t === params.get('t')) ? params.get('t') : 'd';
  const title = section ? `${section} · ${service}` : service || 'All graphs';
  document.title = `${title} · rrdscale`;

  const heading = h('h1', null, section || service || 'Graphs');
  const filter = h('input', {
    type: 'search', id: 'filter', placeholder: 'Filter graphs…', value: params.get('q') || '',
    'aria-label': 'Filter graphs by name', autocomplete: 'off', spellcheck: 'false',
  });
  const termButtons = TERMS.map(([t, label]) => h('button', { type: 'button', 'aria-pressed': String(t === term), dataset: { t } }, label));
  const termGroup = h('div', { class: 'seg', role: 'group', 'aria-label': 'Thumbnail time range' }, termButtons);
  const count = h('p', { class: 'count', 'aria-live': 'polite' });
  const body = h('div', { class: 'groups' }, h('p', { class: 'loading', role: 'status' }, 'Loading graphs…'));
  if (service) main.append(crumbs(service, section));
  main.append(h('div', { class: 'page-head' }, heading, h('div', { class: 'tools wide' }, filter, termGroup)), count, body);

  let all;
  try {
    all = await listAll(ctx.signal);
  } catch (e) {
    if (e.name === 'AbortError') throw e;
    clear(body).append(notice('error', unavailable(e) ? 'This server has no graph list endpoint (/json/list/all).' : `Could not load the graph list: ${e.message}`));
    return;
  }
  const graphs = all.filter((g) => (!service || g.service_name === service) && (!section || g.section_name === section));
  clear(body);
  if (!graphs.length) {
    const host = location.host;
    body.append(notice('info',
      h('p', null, service ? 'No graphs here.' : 'No graphs yet. Post a first number and it appears here:'),
      h('pre', null, h('code', null, `curl -d number=42 http://${host}/api/${service || 'myservice'}/${section || 'mysection'}/mygraph`))));
    return;
  }

  // service → section → graphs, services and sections by name.
  const tree = new Map();
  for (const g of graphs) {
    if (!tree.has(g.service_name)) tree.set(g.service_name, new Map());
    const secs = tree.get(g.service_name);
    if (!secs.has(g.section_name)) secs.set(g.section_name, []);
    secs.get(g.section_name).push(g);
  }
  const cards = [];
  const sectionEls = [];
  for (const svc of [...tree.keys()].sort()) {
    const secs = tree.get(svc);
    const svcEl = h('section', { class: 'service', 'aria-labelledby': `svc-${cards.length}` });
    if (!service) svcEl.append(h('h2', { id: `svc-${cards.length}` }, h('a', { href: `/list/${enc(svc)}` }, svc)));
    const svcBody = h('div', { class: 'service-body' });
    svcEl.append(svcBody);
    for (const sec of [...secs.keys()].sort()) {
      const list = secs.get(sec).sort(byOrder);
      const grid = h('ul', { class: 'grid' }, list.map((g) => { const c = card(g, term); cards.push(c); return c; }));
      const secEl = h('section', { class: 'section' },
        section ? null : h('h3', null, h('a', { href: `/list/${enc(svc)}/${enc(sec)}` }, sec), h('span', { class: 'n' }, ` ${list.length}`)),
        grid);
      sectionEls.push(secEl);
      svcBody.append(secEl);
    }
    body.append(svcEl);
  }
  // Colours come from the store; set them through the CSSOM (the CSP
  // forbids style attributes) and only when they are #RRGGBB.
  for (const sw of body.querySelectorAll('.swatch')) {
    if (/^#[0-9a-fA-F]{6}$/.test(sw.dataset.color)) sw.style.background = sw.dataset.color;
  }

  function applyFilter() {
    const q = filter.value.trim().toLowerCase();
    let shown = 0;
    for (const c of cards) {
      const hit = !q || q.split(/\s+/).every((w) => c.dataset.name.includes(w));
      c.hidden = !hit;
      if (hit) shown++;
    }
    for (const s of sectionEls) s.hidden = !s.querySelector('.card:not([hidden])');
    for (const s of body.querySelectorAll('section.service')) s.hidden = !s.querySelector('.card:not([hidden])');
    count.textContent = q ? `${shown} of ${cards.length} graphs match “${filter.value.trim()}”` : `${cards.length} graph${cards.length === 1 ? '' : 's'}`;
    const u = new URL(location.href);
    if (q) u.searchParams.set('q', filter.value.trim()); else u.searchParams.delete('q');
    history.replaceState(null, '', u.pathname + u.search);
  }
  filter.addEventListener('input', applyFilter);
  filter.addEventListener('keydown', (e) => { if (e.key === 'Escape') { filter.value = ''; applyFilter(); } });
  applyFilter();

  termGroup.addEventListener('click', (e) => {
    const b = e.target.closest('button[data-t]');
    if (!b) return;
    term = b.dataset.t;
    for (const x of termButtons) x.setAttribute('aria-pressed', String(x === b));
    for (const c of cards) {
      const img = c.querySelector('img');
      const g = c.graph;
      const src = pngURL(g, { t: term, width: THUMB_W, height: THUMB_H, graphonly: 1 });
      img.dataset.live = src;
      img.src = src;
      img.alt = `${g.graph_name}: ${term} graph`;
    }
    const u = new URL(location.href);
    u.searchParams.set('t', term);
    history.replaceState(null, '', u.pathname + u.search);
  });

  // Numbers move too: refresh them with the images.
  ctx.onRefresh(async () => {
    const fresh = await listAll();
    for (const c of cards) {
      const g = c.graph.complex ? null : fresh.find((x) => x.id === c.graph.id && !x.complex);
      const v = c.querySelector('.value');
      if (g && v) v.textContent = formatNumber(g.number);
    }
  });
}
