// Editing one graph's settings (GrowthForecast's edit page): colour,
// description, how it is drawn, limits and sort order; and deleting it
// after a confirmation. Saves through POST /json/edit/graph/:id with the
// whole graph object, changed fields replaced.

import { h, notice, toast, confirmDialog } from './dom.js';
import { findGraph, postJSON, pngURL, unavailable } from './api.js';

const enc = encodeURIComponent;

/** A labelled field; `hint` is read by screen readers too. */
export function field(id, label, input, hint) {
  input.id = id;
  input.name = id;
  const hintEl = hint ? h('small', { id: `${id}-hint` }, hint) : null;
  if (hintEl) input.setAttribute('aria-describedby', `${id}-hint`);
  const err = h('small', { class: 'field-error', id: `${id}-error`, hidden: true });
  return h('div', { class: 'field' }, h('label', { for: id }, label), input, hintEl, err);
}

export function select(options, value) {
  return h('select', null, options.map((o) => {
    const [v, label] = Array.isArray(o) ? o : [o, o];
    return h('option', { value: v, selected: String(v) === String(value) }, label);
  }));
}

/** Shows GrowthForecast's {messages: {field: text}} beside the fields. */
export function showErrors(form, messages) {
  for (const el of form.querySelectorAll('.field-error')) { el.hidden = true; el.textContent = ''; }
  for (const el of form.querySelectorAll('[aria-invalid]')) el.removeAttribute('aria-invalid');
  let first = null;
  for (const [k, text] of Object.entries(messages || {})) {
    const err = form.querySelector(`#${CSS.escape(k)}-error`);
    const input = form.querySelector(`#${CSS.escape(k)}`);
    if (!err) continue;
    err.textContent = text;
    err.hidden = false;
    if (input) { input.setAttribute('aria-invalid', 'true'); first = first || input; }
  }
  first?.focus();
}

export async function editView(main, { names }, ctx) {
  const [s, sec, name] = names;
  document.title = `Edit ${name} · rrdscale`;
  const back = `/view_graph/${enc(s)}/${enc(sec)}/${enc(name)}`;
  main.append(h('nav', { class: 'crumbs', 'aria-label': 'Breadcrumb' }, h('ol', null,
    h('li', null, h('a', { href: '/' }, 'All graphs')),
    h('li', null, h('a', { href: `/list/${enc(s)}/${enc(sec)}` }, `${s} / ${sec}`)),
    h('li', null, h('a', { href: back }, name)),
    h('li', null, h('span', { 'aria-current': 'page' }, 'Edit')))));

  let g;
  try {
    g = await findGraph('graph', s, sec, name, ctx.signal);
  } catch (e) {
    if (e.name === 'AbortError') throw e;
    main.append(h('h1', null, `Edit ${name}`), notice('error', unavailable(e) ? 'There is no such graph.' : e.message));
    return;
  }

  const color = h('input', { type: 'color', value: /^#[0-9a-fA-F]{6}$/.test(g.color) ? g.color.toLowerCase() : '#3366cc' });
  const colorText = h('input', { type: 'text', value: g.color, pattern: '#[0-9A-Fa-f]{6}', size: 8, 'aria-label': 'Colour as #RRGGBB', spellcheck: 'false' });
  color.addEventListener('input', () => { colorText.value = color.value.toUpperCase(); preview(); });
  colorText.addEventListener('input', () => { if (/^#[0-9a-fA-F]{6}$/.test(colorText.value)) { color.value = colorText.value.toLowerCase(); preview(); } });

  const inputs = {
    description: h('textarea', { rows: 3, value: g.description || '' }),
    type: select(['AREA', 'LINE1', 'LINE2'], g.type || 'AREA'),
    gmode: select([['gauge', 'gauge (values)'], ['subtract', 'subtract (change per step)'], ['both', 'both']], g.gmode || 'gauge'),
    sort: select([...Array(20).keys()].reverse(), g.sort ?? 0),
    ulimit: h('input', { type: 'number', step: 1, value: g.ulimit ?? 1000000000000000 }),
    llimit: h('input', { type: 'number', step: 1, value: g.llimit ?? 0 }),
    unit: h('input', { type: 'text', value: g.unit || '', maxlength: 32 }),
  };
  const colorField = field('color', 'Colour', color);
  colorField.querySelector('input').after(colorText);

  const img = h('img', { width: 390, height: 110, alt: `Preview of ${name}`, class: 'preview' });
  function preview() { img.src = pngURL(g, { t: 'd', width: 390, height: 110, graphonly: 1 }); }
  preview();

  const status = h('div', { class: 'form-status', 'aria-live': 'polite' });
  const save = h('button', { type: 'submit', class: 'primary' }, 'Save');
  const del = h('button', { type: 'button', class: 'danger' }, 'Delete graph…');
  const form = h('form', { class: 'edit', novalidate: true },
    h('div', { class: 'form-grid' },
      field('description', 'Description', inputs.description),
      colorField,
      field('type', 'Drawn as', inputs.type),
      field('gmode', 'Plot', inputs.gmode),
      field('sort', 'Sort (higher first)', inputs.sort),
      field('unit', 'Unit', inputs.unit),
      field('llimit', 'Lower limit', inputs.llimit, 'Values below are not drawn'),
      field('ulimit', 'Upper limit', inputs.ulimit, 'Values above are not drawn')),
    h('div', { class: 'actions' }, save, h('a', { href: back, class: 'button' }, 'Cancel'), h('span', { class: 'spacer' }), del),
    status);

  main.append(h('div', { class: 'page-head' }, h('h1', null, `Edit ${name}`)),
    h('p', { class: 'muted' }, `${s} / ${sec} · mode ${g.mode} · id ${g.id}`),
    h('figure', { class: 'graph small' }, img), form);

  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    const changes = {
      description: inputs.description.value,
      color: colorText.value.toUpperCase(),
      type: inputs.type.value,
      gmode: inputs.gmode.value,
      sort: Number(inputs.sort.value),
      unit: inputs.unit.value,
      ulimit: Number(inputs.ulimit.value),
      llimit: Number(inputs.llimit.value),
    };
    const local = {};
    if (!/^#[0-9A-F]{6}$/.test(changes.color)) local.color = 'Colour must be #RRGGBB.';
    if (!Number.isInteger(changes.ulimit)) local.ulimit = 'Upper limit must be a whole number.';
    if (!Number.isInteger(changes.llimit)) local.llimit = 'Lower limit must be a whole number.';
    if (Number.isInteger(changes.ulimit) && Number.isInteger(changes.llimit) && changes.llimit >= changes.ulimit) local.llimit = 'Lower limit must be below the upper limit.';
    showErrors(form, local);
    if (Object.keys(local).length) return;
    save.disabled = true;
    status.replaceChildren('Saving…');
    try {
      await postJSON(`/json/edit/graph/${g.id}`, changes);
      toast('Saved.');
      window.rrdNavigate(back);
    } catch (err) {
      status.replaceChildren(notice('error', unavailable(err)
        ? 'Editing is not available on this server yet (POST /json/edit/graph/:id is missing).'
        : `Not saved: ${err.message}`));
      showErrors(form, err.messages);
    } finally {
      save.disabled = false;
    }
  });

  del.addEventListener('click', async () => {
    const ok = await confirmDialog(`Delete ${name}?`, `The graph ${s}/${sec}/${name} and all its data will be removed. This cannot be undone.`, 'Delete');
    if (!ok) { del.focus(); return; }
    try {
      await postJSON(`/json/delete/graph/${g.id}`);
      toast(`Deleted ${name}.`);
      window.rrdNavigate(`/list/${enc(s)}/${enc(sec)}`);
    } catch (err) {
      status.replaceChildren(notice('error', unavailable(err)
        ? 'Deleting is not available on this server yet (POST /json/delete/graph/:id is missing).'
        : `Not deleted: ${err.message}`));
    }
  });
}
