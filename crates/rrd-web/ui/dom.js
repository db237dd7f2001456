// Small DOM helpers: build elements without innerHTML (names and
// descriptions come from whoever posted them, so text is always text).

const PROPS = new Set(['value', 'checked', 'selected', 'disabled', 'indeterminate']);

/** h('a', {href: '/', class: 'x', onclick: fn}, 'text', child, [more]) */
export function h(tag, props, ...kids) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(props || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === 'class') el.className = v;
    else if (k === 'dataset') Object.assign(el.dataset, v);
    else if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (PROPS.has(k)) el[k] = v;
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  append(el, kids);
  return el;
}

export function append(el, kids) {
  for (const k of kids.flat(Infinity)) {
    if (k === null || k === undefined || k === false) continue;
    el.append(k instanceof Node ? k : document.createTextNode(String(k)));
  }
  return el;
}

export function clear(el) {
  while (el.firstChild) el.firstChild.remove();
  return el;
}

/** A visible message; kind is info, error or warn. */
export function notice(kind, ...kids) {
  return h('div', { class: `notice ${kind}`, role: kind === 'error' ? 'alert' : 'status' }, ...kids);
}

let toastTimer = 0;
/** A short message at the bottom of the screen, read by screen readers. */
export function toast(text, kind = 'info') {
  const t = document.getElementById('toast');
  t.textContent = text;
  t.className = `toast show ${kind}`;
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => { t.className = 'toast'; }, 4000);
}

const fmt = new Intl.NumberFormat(undefined, { maximumFractionDigits: 3 });
export function formatNumber(n) {
  return typeof n === 'number' ? fmt.format(n) : String(n ?? '');
}

/** A modal yes/no question; resolves true on confirm. Esc or Cancel is no. */
export function confirmDialog(title, text, confirmLabel) {
  return new Promise((resolve) => {
    const yes = h('button', { type: 'submit', class: 'danger', value: 'yes' }, confirmLabel);
    const no = h('button', { type: 'button', onclick: () => dlg.close('no') }, 'Cancel');
    const dlg = h('dialog', { class: 'confirm', 'aria-labelledby': 'dlg-title' },
      h('form', { method: 'dialog' },
        h('h2', { id: 'dlg-title' }, title),
        h('p', null, text),
        h('div', { class: 'actions' }, no, yes)));
    dlg.addEventListener('close', () => { dlg.remove(); resolve(dlg.returnValue === 'yes'); });
    document.body.append(dlg);
    dlg.showModal();
    no.focus();
  });
}

/** GrowthForecast's `YYYY/MM/DD HH:MM:SS` from an <input type=datetime-local> value. */
export function gfDatetime(local) {
  if (!local) return '';
  const [d, t = '00:00'] = local.split('T');
  const time = t.length === 5 ? `${t}:00` : t;
  return `${d.replaceAll('-', '/')} ${time}`;
}
