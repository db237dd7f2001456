// rrdscale web --tree: drag-to-zoom, back, favourites (localStorage).
// Changes nothing on the server; every view is a URL.
"use strict";

// The range a drag from pixel x0 to x1 selects, given the plot area
// (rrdtool's graphv geometry: graph_left, graph_width, graph_start,
// graph_end). Pixels are clamped to the plot area; returns [start, end]
// in epoch seconds, or null for a drag narrower than 3 pixels.
function rrdZoomRange(x0, x1, g) {
  const lo = Math.max(g.left, Math.min(x0, x1));
  const hi = Math.min(g.left + g.width, Math.max(x0, x1));
  if (hi - lo < 3) return null;
  const spp = (g.end - g.start) / g.width;
  return [Math.round(g.start + (lo - g.left) * spp), Math.round(g.start + (hi - g.left) * spp)];
}
window.rrdZoomRange = rrdZoomRange;

// The URL of this page showing [start, end] (the preset dropped).
function withRange(href, start, end) {
  const u = new URL(href, location.href);
  u.searchParams.delete("range");
  u.searchParams.set("start", String(start));
  u.searchParams.set("end", String(end));
  return u.toString();
}
window.rrdWithRange = withRange;

async function setupZoom() {
  const img = document.getElementById("graph");
  if (!img) return;
  const sel = document.getElementById("sel");
  // Fetch the picture once more to read its plot-area headers (the <img>
  // already shows it; the browser's cache serves this).
  const r = await fetch(img.src);
  const h = (k) => Number(r.headers.get("x-graph-" + k));
  const g = { left: h("left"), top: h("top"), width: h("width"), height: h("height"), start: h("start"), end: h("end") };
  img.dataset.geometry = JSON.stringify(g);
  let x0 = null;
  const px = (ev) => (ev.clientX - img.getBoundingClientRect().left) * (img.naturalWidth / img.clientWidth);
  img.addEventListener("mousedown", (ev) => { ev.preventDefault(); x0 = px(ev); });
  img.addEventListener("mousemove", (ev) => {
    if (x0 === null) return;
    const scale = img.clientWidth / img.naturalWidth;
    const a = Math.min(x0, px(ev)), b = Math.max(x0, px(ev));
    sel.style.display = "block";
    sel.style.left = (a * scale) + "px";
    sel.style.width = ((b - a) * scale) + "px";
    sel.style.top = (g.top * scale) + "px";
    sel.style.height = (g.height * scale) + "px";
  });
  window.addEventListener("mouseup", (ev) => {
    if (x0 === null) return;
    const range = rrdZoomRange(x0, px(ev), g);
    x0 = null;
    sel.style.display = "none";
    if (range) location.href = withRange(location.href, range[0], range[1]);
  });
}

const FAV_KEY = "rrdscale.tree.favourites";
function favourites() {
  try { return JSON.parse(localStorage.getItem(FAV_KEY) || "[]"); } catch (e) { return []; }
}
function showFavourites() {
  const list = document.getElementById("fav-list");
  if (!list) return;
  list.textContent = "";
  for (const f of favourites()) {
    const li = document.createElement("li");
    const a = document.createElement("a");
    a.href = f.url;
    a.textContent = f.title;
    li.appendChild(a);
    list.appendChild(li);
  }
}
function toggleFavourite() {
  const here = location.pathname + location.search;
  let favs = favourites();
  if (favs.some((f) => f.url === here)) favs = favs.filter((f) => f.url !== here);
  else favs.push({ url: here, title: document.title });
  localStorage.setItem(FAV_KEY, JSON.stringify(favs));
  showFavourites();
}

document.addEventListener("DOMContentLoaded", () => {
  const back = document.getElementById("back");
  if (back) back.addEventListener("click", () => history.back());
  const fav = document.getElementById("fav");
  if (fav) fav.addEventListener("click", toggleFavourite);
  showFavourites();
  setupZoom();
});
