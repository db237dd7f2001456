// The GrowthForecast JSON API as the UI uses it. Every call throws an
// ApiError that says which endpoint failed and how, so pages can show a
// message instead of breaking; `unavailable(e)` tells "this server does
// not have that endpoint (yet)" apart from real failures.

export class ApiError extends Error {
  constructor(status, method, url, body) {
    const messages = body && typeof body === 'object' && body.messages;
    const detail = messages && typeof messages === 'object'
      ? Object.values(messages).join('; ')
      : (typeof body === 'string' ? body.slice(0, 200) : '');
    super(`${method} ${url} answered ${status}${detail ? `: ${detail}` : ''}`);
    this.status = status;
    this.messages = messages && typeof messages === 'object' ? messages : {};
  }
}

/** The endpoint is not there: 404 for an unknown path, 405 for a known path without this method. */
export function unavailable(e) {
  return e instanceof ApiError && (e.status === 404 || e.status === 405 || e.status === 501);
}

async function parse(res) {
  const text = await res.text();
  try { return JSON.parse(text); } catch { return text; }
}

export async function getJSON(url, signal) {
  const res = await fetch(url, { headers: { Accept: 'application/json' }, signal });
  const body = await parse(res);
  if (!res.ok) throw new ApiError(res.status, 'GET', url, body);
  return body;
}

/** POSTs a JSON body; GrowthForecast answers {error: 0|1, messages}. */
export async function postJSON(url, data) {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Accept: 'application/json' },
    body: data === undefined ? '' : JSON.stringify(data),
  });
  const body = await parse(res);
  if (!res.ok || (body && typeof body === 'object' && body.error && body.error !== 0)) {
    throw new ApiError(res.status, 'POST', url, body);
  }
  return body;
}

const enc = encodeURIComponent;

/** `service/section/graph`, each part escaped. */
export function namePath(g) {
  return `${enc(g.service_name)}/${enc(g.section_name)}/${enc(g.graph_name)}`;
}

export function pageURL(g) {
  return `/${g.complex ? 'view_complex' : 'view_graph'}/${namePath(g)}`;
}

export function editURL(g) {
  return `/${g.complex ? 'edit_complex' : 'edit'}/${namePath(g)}`;
}

export function pngURL(g, params) {
  const base = g.complex ? '/complex/graph/' : '/graph/';
  return `${base}${namePath(g)}?${new URLSearchParams(params)}`;
}

/** GrowthForecast's ad-hoc complex image: `/graph/TYPE:ID:GMODE:STACK:...`. */
export function previewURL(rows, params) {
  const spec = rows.map((r) => `${r.type}:${r.graph_id}:${r.gmode}:${r.stack ? 1 : 0}`).join(':');
  return `/graph/${enc(spec)}?${new URLSearchParams(params)}`;
}

export function listAll(signal) {
  return getJSON('/json/list/all', signal);
}

/** A graph by names: /json/graph/... or /json/complex/...; a complex
 *  falls back to the list where the by-names endpoint is missing. */
export async function findGraph(kind, s, sec, g, signal) {
  const path = `${enc(s)}/${enc(sec)}/${enc(g)}`;
  if (kind === 'graph') return getJSON(`/json/graph/${path}`, signal);
  try {
    return { ...(await getJSON(`/json/complex/${path}`, signal)), complex: true };
  } catch (e) {
    if (!unavailable(e)) throw e;
  }
  const all = await listAll(signal);
  const found = all.find((x) => x.complex && x.service_name === s && x.section_name === sec && x.graph_name === g);
  if (!found) throw new ApiError(404, 'GET', '/json/list/all', { messages: { graph: 'complex graph not found' } });
  return found;
}

/** The graph's series as GrowthForecast's xport JSON. */
export function xportURL(g, params) {
  return `${g.complex ? '/complex/xport/' : '/xport/'}${namePath(g)}?${new URLSearchParams(params)}`;
}
