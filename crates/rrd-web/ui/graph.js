// One graph (plain or complex): the image large, range buttons that swap
// the image without reloading the page, a custom from/to range, the
// current number and description, and links to the JSON behind it.

import { h, notice, formatNumber, gfDatetime } from './dom.js';
import { findGraph, listAll, pngURL, xportURL, editURL, namePath, unavailable } from './api.js';

export const TERMS = [
  ['h', 'Hour'], ['4h', '4 hours'], ['8h', '8 hours'], ['n', 'Half day'], ['d', 'Day'],
  ['3d', '3 days'], ['w', 'Week'], ['m', 'Month'], ['y', 'Year'],
];

// The image is the plot area plus rrdtool's axes, title and legend; these
// margins reserve its space before the first image arrives, and are
// replaced by the real size once it has (no layout jump on range switch).
const EXTRA_W = 97;
const EXTRA_H = 107;

const enc = encodeURIComponent;

function plotSize(main) {
  const avail = Math.max(320, main.clientWidth || 800) - EXTRA_W - 8;
  const width = Math.max(200, Math.min(900, Math.floor(avail / 10) * 10));
  const height = width < 400 ? 150 : 220;
  return { width, height };
}

function dtLocal(d) {
  const p = (n) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}T${p(d.getHours())}:${p(d.getMinutes())}`;
}

export async function graphView(main, { kind, names }, ctx) {
  const [s, sec, name] = names;
  document.title = `${name} · ${sec} · ${s} · rrdscale`;
  const crumbs = h('nav', { class: 'crumbs', 'aria-label': 'Breadcrumb' }, h('ol', null,
    h('li', null, h('a', { href: '/' }, 'All graphs')),
    h('li', null, h('a', { href: `/list/${enc(s)}` }, s)),
    h('li', null, h('a', { href: `/list/${enc(s)}/${enc(sec)}` }, sec)),
    h('li', null, h('span', { 'aria-current': 'page' }, name))));
  main.append(crumbs);

  let g;
  try {
    g = await findGraph(kind, s, sec, name, ctx.signal);
  } catch (e) {
    if (e.name === 'AbortError') throw e;
    main.append(h('h1', null, name), notice('error', unavailable(e)
      ? `There is no ${kind === 'complex' ? 'complex graph' : 'graph'} ${s}/${sec}/${name} here (it may have been deleted). `
      : `Could not load the graph: ${e.message} `, h('a', { href: `/list/${enc(s)}/${enc(sec)}` }, `Back to ${sec}`)));
    return;
  }
  if (kind === 'complex') g.complex = true;

  const params = new URLSearchParams(location.search);
  const state = {
    t: params.get('t') === 'c' || TERMS.some(([t]) => t === params.get('t')) ? params.get('t') : 'd',
    gmode: params.get('gmode') === 'subtract' ? 'subtract' : 'gauge',
    from: params.get('from') || '',
    to: params.get('to') || '',
  };
  const size = plotSize(main);

  const img = h('img', {
    id: 'graph-img', width: size.width + EXTRA_W, height: size.height + EXTRA_H,
    alt: `Graph of ${s}/${sec}/${name}`, decoding: 'async',
  });
  const imgError = h('div', { class: 'img-error', hidden: true });
  const imgLink = h('a', { class: 'png-link' }, 'PNG');
  const xportLink = h('a', { class: 'xport-link' }, 'xport JSON');

  function query() {
    const q = { t: state.t, width: size.width, height: size.height };
    if (state.gmode !== 'gauge' && !g.complex) q.gmode = state.gmode;
    if (state.t === 'c') { q.from = state.from; q.to = state.to; }
    return q;
  }
  function show(push) {
    const q = query();
    const src = pngURL(g, q);
    img.dataset.live = src;
    img.src = src;
    img.alt = `Graph of ${s}/${sec}/${name}, ${state.t === 'c' ? `from ${state.from} to ${state.to}` : (TERMS.find(([t]) => t === state.t) || [])[1]}`;
    imgLink.href = src;
    const xq = { ...q };
    delete xq.width; delete xq.height;
    xportLink.href = xportURL(g, xq);
    for (const b of rangeButtons) b.setAttribute('aria-pressed', String(b.dataset.t === state.t));
    customForm.hidden = state.t !== 'c';
    if (push) {
      const u = new URL(location.href);
      for (const k of ['t', 'gmode', 'from', 'to']) u.searchParams.delete(k);
      u.searchParams.set('t', state.t);
      if (q.gmode) u.searchParams.set('gmode', q.gmode);
      if (state.t === 'c') { u.searchParams.set('from', state.from); u.searchParams.set('to', state.to); }
      history.replaceState(null, '', u.pathname + u.search);
    }
  }

  img.addEventListener('load', () => {
    imgError.hidden = true;
    img.classList.remove('broken');
    // Keep the real size so the next range keeps the same box.
    img.width = img.naturalWidth;
    img.height = img.naturalHeight;
  });
  img.addEventListener('error', async () => {
    img.classList.add('broken');
    let why = 'the server did not return an image';
    try {
      const r = await fetch(img.src);
      const body = await r.json().catch(() => null);
      if (body && body.messages) why = Object.values(body.messages).join('; ');
      else why = `${r.status} ${r.statusText}`;
    } catch { /* keep the generic reason */ }
    imgError.hidden = false;
    imgError.textContent = `No image for this range: ${why}.`;
  });

  const rangeButtons = [...TERMS, ['c', 'Custom…']].map(([t, label]) =>
    h('button', { type: 'button', dataset: { t }, 'aria-pressed': 'false' }, label));
  const ranges = h('div', { class: 'seg ranges', role: 'group', 'aria-label': 'Time range' }, rangeButtons);
  ranges.addEventListener('click', (e) => {
    const b = e.target.closest('button[data-t]');
    if (!b) return;
    state.t = b.dataset.t;
    if (state.t === 'c') {
      if (!state.from) { fromIn.value = dtLocal(new Date(Date.now() - 2 * 86400e3)); toIn.value = dtLocal(new Date()); }
      state.from = gfDatetime(fromIn.value); state.to = gfDatetime(toIn.value);
    }
    show(true);
    if (state.t === 'c') fromIn.focus();
  });
  // Arrow keys move along the range buttons, as in a toolbar.
  ranges.addEventListener('keydown', (e) => {
    const i = rangeButtons.indexOf(document.activeElement);
    if (i < 0 || !['ArrowLeft', 'ArrowRight'].includes(e.key)) return;
    const j = (i + (e.key === 'ArrowRight' ? 1 : -1) + rangeButtons.length) % rangeButtons.length;
    rangeButtons[j].focus();
    e.preventDefault();
  });

  const fromIn = h('input', { type: 'datetime-local', id: 'from', required: true });
  const toIn = h('input', { type: 'datetime-local', id: 'to', required: true });
  if (state.from) fromIn.value = state.from.replaceAll('/', '-').replace(' ', 'T').slice(0, 16);
  if (state.to) toIn.value = state.to.replaceAll('/', '-').replace(' ', 'T').slice(0, 16);
  const customForm = h('form', { class: 'custom', hidden: true },
    h('label', { for: 'from' }, 'From'), fromIn,
    h('label', { for: 'to' }, 'To'), toIn,
    h('button', { type: 'submit' }, 'Show'));
  customForm.addEventListener('submit', (e) => {
    e.preventDefault();
    state.t = 'c';
    state.from = gfDatetime(fromIn.value);
    state.to = gfDatetime(toIn.value);
    show(true);
  });

  const gmodeSel = g.complex ? null : h('select', { id: 'gmode', 'aria-label': 'Plot' },
    h('option', { value: 'gauge', selected: state.gmode === 'gauge' }, 'Values (gauge)'),
    h('option', { value: 'subtract', selected: state.gmode === 'subtract' }, 'Change per step (subtract)'));
  gmodeSel?.addEventListener('change', () => { state.gmode = gmodeSel.value; show(true); });

  const number = h('span', { class: 'big-number', 'aria-live': 'polite' }, g.complex ? '' : formatNumber(g.number));
  const updated = h('span', { class: 'updated' }, g.updated_at ? `updated ${g.updated_at}` : '');
  const swatch = h('span', { class: 'swatch', 'aria-hidden': 'true' });
  if (/^#[0-9a-fA-F]{6}$/.test(g.color || '')) swatch.style.background = g.color;

  const facts = h('dl', { class: 'facts' });
  const fact = (k, v) => { if (v !== undefined && v !== null && v !== '') facts.append(h('dt', null, k), h('dd', null, v)); };
  if (!g.complex) {
    fact('Mode', g.mode);
    fact('Drawn as', g.type);
    fact('Limits', g.llimit !== undefined ? `${g.llimit} … ${g.ulimit}` : '');
    fact('Unit', g.unit);
  } else {
    fact('Sum up', g.sumup ? 'yes' : 'no');
  }
  fact('Created', g.created_at);

  const head = h('div', { class: 'page-head' },
    h('h1', null, swatch, name),
    h('div', { class: 'tools' },
      h('a', { class: 'button', href: editURL(g) }, 'Edit'),
    ));
  const infoKids = [
    g.complex ? null : h('p', { class: 'current' }, number, ' ', updated),
    g.description ? h('p', { class: 'description' }, g.description) : null,
    facts,
    h('p', { class: 'links' }, 'Data: ', xportLink, ' · ', imgLink,
      g.complex ? null : [' · ', h('a', { href: `/api/${namePath(g)}` }, 'graph JSON')]),
  ];
  const series = g.complex && Array.isArray(g.data) ? h('ol', { class: 'series' }) : null;
  main.append(head,
    h('div', { class: 'controls' }, ranges, gmodeSel),
    customForm,
    h('figure', { class: 'graph' }, img, imgError),
    h('div', { class: 'info' }, infoKids, series ? [h('h2', null, 'Series'), series] : null));
  show(false);

  if (series) {
    let names = new Map();
    try { names = new Map((await listAll(ctx.signal)).filter((x) => !x.complex).map((x) => [x.id, x])); } catch { /* ids only */ }
    for (const d of g.data) {
      const src = names.get(Number(d.graph_id));
      series.append(h('li', null,
        src ? h('a', { href: `/view_graph/${namePath(src)}` }, `${src.service_name}/${src.section_name}/${src.graph_name}`) : `graph #${d.graph_id}`,
        ` — ${d.type || 'AREA'}, ${d.gmode || 'gauge'}${d.stack ? ', stacked' : ''}`));
    }
  }

  if (!g.complex) {
    ctx.onRefresh(async () => {
      const fresh = await findGraph('graph', s, sec, name);
      number.textContent = formatNumber(fresh.number);
      updated.textContent = fresh.updated_at ? `updated ${fresh.updated_at}` : '';
    });
  }
}
