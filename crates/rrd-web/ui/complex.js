// The complex-graph builder (GrowthForecast's add_complex/edit_complex):
// pick graphs, how each is drawn (AREA/LINE1/LINE2), gauge or subtract,
// stacked or not, in which order; preview; save through
// POST /json/create/complex or /json/edit/complex/:id.

import { h, notice, toast, confirmDialog } from './dom.js';
import { listAll, postJSON, previewURL, findGraph, unavailable } from './api.js';
import { field, select, showErrors } from './edit.js';

const enc = encodeURIComponent;

export async function complexView(main, { names }, ctx) {
  const editing = Array.isArray(names);
  const [s0, sec0, name0] = editing ? names : ['', '', ''];
  document.title = `${editing ? `Edit ${name0}` : 'New complex graph'} · rrdscale`;
  main.append(h('nav', { class: 'crumbs', 'aria-label': 'Breadcrumb' }, h('ol', null,
    h('li', null, h('a', { href: '/' }, 'All graphs')),
    editing ? h('li', null, h('a', { href: `/view_complex/${enc(s0)}/${enc(sec0)}/${enc(name0)}` }, name0)) : null,
    h('li', null, h('span', { 'aria-current': 'page' }, editing ? 'Edit' : 'New complex graph')))),
  h('div', { class: 'page-head' }, h('h1', null, editing ? `Edit complex graph ${name0}` : 'New complex graph')));

  let all;
  let existing = null;
  try {
    all = (await listAll(ctx.signal)).filter((g) => !g.complex);
    if (editing) existing = await findGraph('complex', s0, sec0, name0, ctx.signal);
  } catch (e) {
    if (e.name === 'AbortError') throw e;
    main.append(notice('error', unavailable(e) && editing ? `There is no complex graph ${s0}/${sec0}/${name0}.` : `Could not load the graphs: ${e.message}`));
    return;
  }
  if (!all.length) {
    main.append(notice('info', 'A complex graph combines existing graphs, and there are none yet. Post some numbers first.'));
    return;
  }
  all.sort((a, b) => `${a.service_name}/${a.section_name}/${a.graph_name}`.localeCompare(`${b.service_name}/${b.section_name}/${b.graph_name}`));

  const inputs = {
    service_name: h('input', { type: 'text', required: true, value: existing?.service_name ?? all[0].service_name, autocomplete: 'off' }),
    section_name: h('input', { type: 'text', required: true, value: existing?.section_name ?? all[0].section_name, autocomplete: 'off' }),
    graph_name: h('input', { type: 'text', required: true, value: existing?.graph_name ?? '', autocomplete: 'off' }),
    description: h('textarea', { rows: 2, value: existing?.description ?? '' }),
    sort: select([...Array(20).keys()].reverse(), existing?.sort ?? 19),
    sumup: h('input', { type: 'checkbox', checked: Boolean(existing?.sumup) }),
  };

  // The series, in drawing order.
  const rowsEl = h('ol', { class: 'rows', 'aria-label': 'Series, drawn in this order' });
  function graphSelect(value) {
    const groups = new Map();
    for (const g of all) {
      const k = `${g.service_name} / ${g.section_name}`;
      if (!groups.has(k)) groups.set(k, []);
      groups.get(k).push(g);
    }
    return h('select', { class: 'graph-id', 'aria-label': 'Graph' }, [...groups].map(([k, gs]) =>
      h('optgroup', { label: k }, gs.map((g) => h('option', { value: g.id, selected: String(g.id) === String(value) }, g.graph_name)))));
  }
  function addRow(d = {}) {
    const idSel = graphSelect(d.graph_id ?? all[Math.min(rowsEl.children.length, all.length - 1)].id);
    const typeSel = select(['AREA', 'LINE1', 'LINE2'], d.type ?? (rowsEl.children.length ? 'LINE1' : 'AREA'));
    typeSel.className = 'type';
    typeSel.setAttribute('aria-label', 'Drawn as');
    const gmodeSel = select([['gauge', 'gauge'], ['subtract', 'subtract']], d.gmode ?? 'gauge');
    gmodeSel.className = 'gmode';
    gmodeSel.setAttribute('aria-label', 'Plot');
    const stack = h('input', { type: 'checkbox', class: 'stack', checked: d.stack === undefined ? rowsEl.children.length > 0 : Boolean(Number(d.stack)) });
    const li = h('li', { class: 'row' },
      idSel, typeSel, gmodeSel,
      h('label', { class: 'check' }, stack, 'stack'),
      h('span', { class: 'row-buttons' },
        h('button', { type: 'button', class: 'icon', 'aria-label': 'Move up', title: 'Move up', onclick: () => { li.previousElementSibling?.before(li); changed(); li.querySelector('button').focus(); } }, '↑'),
        h('button', { type: 'button', class: 'icon', 'aria-label': 'Move down', title: 'Move down', onclick: () => { li.nextElementSibling?.after(li); changed(); li.querySelectorAll('button')[1].focus(); } }, '↓'),
        h('button', { type: 'button', class: 'icon', 'aria-label': 'Remove', title: 'Remove', onclick: () => { if (rowsEl.children.length > 1) { li.remove(); changed(); } } }, '×')));
    li.addEventListener('change', changed);
    rowsEl.append(li);
  }
  const rows = () => [...rowsEl.children].map((li) => ({
    graph_id: Number(li.querySelector('.graph-id').value),
    type: li.querySelector('.type').value,
    gmode: li.querySelector('.gmode').value,
    stack: li.querySelector('.stack').checked,
  }));

  // Hidden until the first preview arrives, so no broken-image icon shows.
  const img = h('img', { class: 'preview', width: 487, height: 217, alt: 'Preview of the complex graph', hidden: true });
  const previewNote = h('p', { class: 'muted' }, 'Drawing the preview…');
  img.addEventListener('error', () => {
    img.hidden = true;
    previewNote.hidden = false;
    previewNote.textContent = 'No preview for this combination; the graph is drawn once saved.';
  });
  img.addEventListener('load', () => { img.hidden = false; previewNote.hidden = true; img.width = img.naturalWidth; img.height = img.naturalHeight; });
  let timer = 0;
  function changed() {
    clearTimeout(timer);
    timer = setTimeout(() => { img.src = previewURL(rows(), { t: 'd', width: 390, height: 110 }); }, 250);
  }

  for (const d of existing?.data ?? [{}, {}].slice(0, Math.min(2, all.length))) addRow(d);

  const status = h('div', { class: 'form-status', 'aria-live': 'polite' });
  const save = h('button', { type: 'submit', class: 'primary', id: 'save-complex' }, editing ? 'Save' : 'Create complex graph');
  const del = editing ? h('button', { type: 'button', class: 'danger' }, 'Delete…') : null;
  const form = h('form', { class: 'edit complex', novalidate: true },
    h('div', { class: 'form-grid' },
      field('service_name', 'Service', inputs.service_name),
      field('section_name', 'Section', inputs.section_name),
      field('graph_name', 'Graph name', inputs.graph_name),
      field('sort', 'Sort (higher first)', inputs.sort),
      field('description', 'Description', inputs.description)),
    h('div', { class: 'field' }, h('label', { class: 'check' }, inputs.sumup, 'Show the sum of all series in the legend')),
    h('h2', null, 'Series'),
    rowsEl,
    h('small', { class: 'field-error', id: 'data-error', hidden: true }),
    h('p', null, h('button', { type: 'button', id: 'add-row', onclick: () => { addRow(); changed(); rowsEl.lastElementChild.querySelector('select').focus(); } }, '+ Add a series')),
    h('h2', null, 'Preview'),
    h('figure', { class: 'graph' }, img, previewNote),
    h('div', { class: 'actions' }, save, h('span', { class: 'spacer' }), del),
    status);
  main.append(form);
  changed();

  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    const body = {
      service_name: inputs.service_name.value.trim(),
      section_name: inputs.section_name.value.trim(),
      graph_name: inputs.graph_name.value.trim(),
      description: inputs.description.value,
      sort: Number(inputs.sort.value),
      sumup: inputs.sumup.checked,
      data: rows(),
    };
    const local = {};
    for (const k of ['service_name', 'section_name', 'graph_name']) {
      if (!body[k]) local[k] = 'Required.';
      else if (/[/\\]|\.\./.test(body[k])) local[k] = 'Must not contain /, \\ or “..”.';
    }
    if (!body.data.length) local.data = 'Add at least one series.';
    showErrors(form, local);
    if (Object.keys(local).length) return;
    save.disabled = true;
    status.replaceChildren('Saving…');
    const url = editing ? `/json/edit/complex/${existing.id}` : '/json/create/complex';
    try {
      await postJSON(url, body);
      toast(editing ? 'Saved.' : 'Complex graph created.');
      window.rrdNavigate(`/view_complex/${enc(body.service_name)}/${enc(body.section_name)}/${enc(body.graph_name)}`);
    } catch (err) {
      status.replaceChildren(notice('error', unavailable(err)
        ? `Complex graphs cannot be saved on this server yet (POST ${editing ? '/json/edit/complex/:id' : '/json/create/complex'} is missing).`
        : `Not saved: ${err.message}`));
      showErrors(form, err.messages);
    } finally {
      save.disabled = false;
    }
  });

  del?.addEventListener('click', async () => {
    const ok = await confirmDialog(`Delete ${name0}?`, 'The complex graph is removed; the graphs it combines stay.', 'Delete');
    if (!ok) { del.focus(); return; }
    try {
      await postJSON(`/json/delete/complex/${existing.id}`);
      toast(`Deleted ${name0}.`);
      window.rrdNavigate(`/list/${enc(s0)}/${enc(sec0)}`);
    } catch (err) {
      status.replaceChildren(notice('error', unavailable(err)
        ? 'Deleting is not available on this server yet (POST /json/delete/complex/:id is missing).'
        : `Not deleted: ${err.message}`));
    }
  });
}
