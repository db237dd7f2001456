//! The HTML pages of a tree: the list of trees, a directory (its
//! subdirectories and one thumbnail per RRD file, [`PAGE_SIZE`] entries a
//! page, filtered by a substring or a glob), and one graph with its
//! controls.
//!
//! Every name passes [`html`] before it reaches the page and
//! [`pct_encode`] before it reaches a URL, whatever its bytes. Every
//! state (directory, filter, page, range, CF, percentile) is in the URL
//! query, so a link reproduces a view; the page's script
//! (`/tree-assets/tree.js`) adds drag-to-zoom, back, and favourites kept
//! in the browser (localStorage), and changes nothing on the server.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use super::confine::{html, pct_encode, pct_path, shown};
use super::draw::{FileInfo, View, PRESETS};
use super::index::Listing;

/// Entries (directories and files) shown on one page.
pub const PAGE_SIZE: usize = 100;

/// The range and drawing choices a page carries into its links.
fn view_query(v: &View, range: Option<&str>) -> String {
    let r = match range {
        Some(r) => format!("range={r}"),
        None => format!("start={}&end={}", v.start, v.end),
    };
    let pct = v.pct.map_or("0".to_string(), |p| p.to_string());
    format!("{r}&cf={}&pct={pct}", v.cf)
}

fn head(title: &str) -> String {
    format!(
        "<!doctype html><html lang=en><head><meta charset=utf-8>\
         <meta name=viewport content=\"width=device-width, initial-scale=1\">\
         <title>{}</title><link rel=stylesheet href=\"/tree-assets/tree.css\">\
         <script src=\"/tree-assets/tree.js\" defer></script></head><body>",
        html(title)
    )
}

const FOOT: &str = "<section id=favs><h2>Favourites</h2><ul id=fav-list></ul></section></body></html>";

/// The page listing every tree.
pub fn trees(names: &[&str]) -> String {
    let mut out = head("RRD trees");
    out.push_str("<h1>RRD trees</h1><ul class=dirs>");
    for n in names {
        let e = pct_encode(n.as_bytes());
        out.push_str(&format!("<li><a href=\"/tree/{e}\">{}</a></li>", html(n)));
    }
    out.push_str("</ul>");
    out.push_str(FOOT);
    out
}

/// Breadcrumbs: the tree, then each directory of `rel`.
fn crumbs(tree: &str, rel: &Path, q: &str) -> String {
    let t = pct_encode(tree.as_bytes());
    let mut out = format!("<nav class=crumbs><a href=\"/tree/{t}?{q}\">{}</a>", html(tree));
    let mut sofar = std::path::PathBuf::new();
    for c in rel.components() {
        sofar.push(c);
        out.push_str(&format!(
            " / <a href=\"/tree/{t}?dir={}&amp;{q}\">{}</a>",
            pct_path(&sofar),
            html(&shown(c.as_os_str()))
        ));
    }
    out.push_str("</nav>");
    out
}

/// Whether `name` passes `filter`: a glob when it has `*`, `?` or `[`,
/// else a case-insensitive substring.
pub fn passes(filter: &str, name: &OsStr) -> bool {
    if filter.is_empty() {
        return true;
    }
    if filter.contains(['*', '?', '[']) {
        return super::defs::glob(filter.as_bytes(), name.as_bytes());
    }
    name.to_string_lossy().to_lowercase().contains(&filter.to_lowercase())
}

/// Range presets, CF and percentile controls of a page.
fn controls(base: &str, v: &View, cfs: &[String]) -> String {
    let amp = |s: String| s.replace('&', "&amp;");
    let mut out = String::from("<div class=controls>");
    for (name, _) in PRESETS {
        out.push_str(&format!(
            "<a class=preset href=\"{base}&amp;{}\">{name}</a> ",
            amp(view_query(v, Some(name)))
        ));
    }
    let span = v.end - v.start;
    for (label, s, e) in [
        ("◀ pan", v.start - span / 2, v.end - span / 2),
        ("pan ▶", v.start + span / 2, v.end + span / 2),
        ("zoom out", v.start - span / 2, v.end + span / 2),
    ] {
        let w = View { start: s, end: e, ..v.clone() };
        out.push_str(&format!("<a class=pan href=\"{base}&amp;{}\">{label}</a> ", amp(view_query(&w, None))));
    }
    out.push_str("<button type=button id=back>back</button> ");
    for cf in cfs {
        let w = View { cf: cf.clone(), ..v.clone() };
        let cls = if *cf == v.cf { "cf on" } else { "cf" };
        out.push_str(&format!(
            "<a class=\"{cls}\" href=\"{base}&amp;{}\">{cf}</a> ",
            amp(view_query(&w, None))
        ));
    }
    out.push_str("<button type=button id=fav>☆ favourite</button></div>");
    out
}

/// What a directory page shows.
pub struct DirPage<'a> {
    pub tree: &'a str,
    pub rel: &'a Path,
    pub listing: &'a Listing,
    pub filter: &'a str,
    pub page: usize,
    pub view: &'a View,
    pub range: Option<&'a str>,
    /// The directory's groups ([`super::defs::Defs::groups`]): index and
    /// name, drawn first on the first page when no filter is set.
    pub groups: &'a [(usize, String)],
}

/// A directory: subdirectories, groups, then one thumbnail per file.
pub fn directory(p: &DirPage) -> String {
    let t = pct_encode(p.tree.as_bytes());
    let dir = pct_path(p.rel);
    let q = view_query(p.view, p.range).replace('&', "&amp;");
    let title = format!("{} / {}", p.tree, shown(p.rel.as_os_str()));
    let mut out = head(&title);
    out.push_str(&crumbs(p.tree, p.rel, &q));
    out.push_str(&format!(
        "<form class=filter method=get action=\"/tree/{t}\"><input type=hidden name=dir value=\"{}\">\
         <input name=filter id=filter placeholder=\"filter: substring or glob (*.rrd)\" value=\"{}\">\
         <button>filter</button></form>",
        html(&p.rel.to_string_lossy()),
        html(p.filter)
    ));
    let base =
        format!("/tree/{t}?dir={dir}&amp;filter={}&amp;page={}", pct_encode(p.filter.as_bytes()), p.page);
    out.push_str(&controls(&base, p.view, &["AVERAGE".into(), "MIN".into(), "MAX".into()]));
    let dirs = p.listing.dirs.iter().filter(|n| passes(p.filter, n)).map(|n| (n, true));
    let files = p.listing.files.iter().filter(|n| passes(p.filter, n)).map(|n| (n, false));
    let all: Vec<(&std::ffi::OsString, bool)> = dirs.chain(files).collect();
    let pages = all.len().div_ceil(PAGE_SIZE).max(1);
    out.push_str(&format!("<p class=count>{} entries</p><ul class=dirs>", all.len()));
    let shown_entries = all.iter().skip(p.page * PAGE_SIZE).take(PAGE_SIZE);
    let mut thumbs = String::from("<div class=thumbs>");
    for (g, name) in p.groups.iter().filter(|_| p.page == 0 && p.filter.is_empty()) {
        let label = html(name);
        thumbs.push_str(&format!(
            "<figure class=\"thumb group\"><a href=\"/tree/{t}/view?dir={dir}&amp;group={g}&amp;{q}\">\
             <img loading=lazy alt=\"{label}\" src=\"/tree/{t}/png?dir={dir}&amp;group={g}&amp;thumb=1&amp;{q}\"></a>\
             <figcaption>{label}</figcaption></figure>"
        ));
    }
    for (name, is_dir) in shown_entries {
        let path = p.rel.join(name);
        let e = pct_path(&path);
        let label = html(&shown(name));
        if *is_dir {
            out.push_str(&format!("<li><a class=dir href=\"/tree/{t}?dir={e}&amp;{q}\">{label}/</a></li>"));
        } else {
            thumbs.push_str(&format!(
                "<figure class=thumb><a href=\"/tree/{t}/view?file={e}&amp;{q}\">\
                 <img loading=lazy alt=\"{label}\" src=\"/tree/{t}/png?file={e}&amp;thumb=1&amp;{q}\"></a>\
                 <figcaption>{label}</figcaption></figure>"
            ));
        }
    }
    out.push_str("</ul>");
    thumbs.push_str("</div>");
    out.push_str(&thumbs);
    out.push_str(&format!("<nav class=pages>page {} of {pages}", p.page + 1));
    let page_link = |n: usize| {
        format!("/tree/{t}?dir={dir}&amp;filter={}&amp;page={n}&amp;{q}", pct_encode(p.filter.as_bytes()))
    };
    if p.page > 0 {
        out.push_str(&format!(" <a rel=prev href=\"{}\">previous</a>", page_link(p.page - 1)));
    }
    if p.page + 1 < pages {
        out.push_str(&format!(" <a rel=next href=\"{}\">next</a>", page_link(p.page + 1)));
    }
    out.push_str("</nav>");
    out.push_str(FOOT);
    out
}

/// What a graph page shows: one file, or a group of a directory's files.
pub struct Shown<'a> {
    /// The query naming it (`file=...` or `dir=...&group=N`), encoded.
    pub query: String,
    /// The directory it belongs to (its page gets the range).
    pub dir: &'a Path,
    /// Breadcrumbs: the file's path, or the directory's.
    pub crumbs: &'a Path,
    /// A group's name, shown after the breadcrumbs.
    pub group: Option<&'a str>,
    /// The graph's title (its definition's, or MRTG's `Title[...]`).
    pub title: String,
}

/// One graph with its controls, exports and links.
pub fn graph(tree: &str, shown_: &Shown, info: &FileInfo, view: &View, range: Option<&str>) -> String {
    let t = pct_encode(tree.as_bytes());
    let what = shown_.query.replace('&', "&amp;");
    let q = view_query(view, range).replace('&', "&amp;");
    let fixed = view_query(view, None).replace('&', "&amp;");
    let mut title = format!("{tree} / {}", shown(shown_.crumbs.as_os_str()));
    if let Some(g) = shown_.group {
        title = format!("{title} / {g}");
    }
    let mut out = head(&title);
    out.push_str(&crumbs(tree, shown_.crumbs, &q));
    out.push_str(&format!("<h1 id=title>{}</h1>", html(&shown_.title)));
    if let Some(g) = shown_.group {
        out.push_str(&format!("<p class=group>{}</p>", html(g)));
    }
    out.push_str(&controls(&format!("/tree/{t}/view?{what}"), view, &info.cfs));
    let size = format!("w={}&amp;h={}", view.width, view.height);
    out.push_str(&format!(
        "<div class=zoom><img id=graph alt=\"graph\" data-start={} data-end={} \
         src=\"/tree/{t}/png?{what}&amp;{fixed}&amp;{size}\"><div id=sel></div></div>",
        view.start, view.end
    ));
    out.push_str(&format!(
        "<p class=links><a id=permalink href=\"/tree/{t}/view?{what}&amp;{fixed}\">link to this view</a> · \
         <a href=\"/tree/{t}?dir={}&amp;{fixed}\">apply this range to every graph in the directory</a> · \
         <a href=\"/tree/{t}/export?{what}&amp;format=csv&amp;{fixed}\">CSV</a> · \
         <a href=\"/tree/{t}/export?{what}&amp;format=json&amp;{fixed}\">JSON</a></p>",
        pct_path(shown_.dir)
    ));
    out.push_str(&format!(
        "<p class=meta>DS: {} · step {} s · last update {}</p>",
        html(&info.ds.join(", ")),
        info.step_secs,
        info.last_update
    ));
    out.push_str(FOOT);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_in_names_is_escaped_in_the_page_and_encoded_in_urls() {
        let listing = Listing {
            dirs: vec!["<b>dir".into()],
            files: vec![std::ffi::OsString::from("<script>alert(1).rrd")],
            truncated: false,
        };
        let v = View {
            start: 0,
            end: 100,
            cf: "AVERAGE".into(),
            pct: Some(95.0),
            width: 800,
            height: 250,
            thumb: false,
        };
        let p = DirPage {
            tree: "t",
            rel: Path::new(""),
            listing: &listing,
            filter: "",
            page: 0,
            view: &v,
            range: None,
            groups: &[(3, "<i>group".into())],
        };
        let page = directory(&p);
        assert!(page.contains("&lt;i&gt;group") && page.contains("group=3"));
        assert!(!page.contains("<script>alert"), "{page}");
        assert!(page.contains("&lt;script&gt;alert(1).rrd"));
        assert!(page.contains("file=%3Cscript%3Ealert%281%29.rrd"));
        assert!(!page.contains("<b>dir"));
    }

    #[test]
    fn filters_take_substrings_and_globs() {
        assert!(passes("eth", OsStr::new("if_octets-eth0.rrd")));
        assert!(passes("ETH", OsStr::new("if_octets-eth0.rrd")));
        assert!(passes("if_*.rrd", OsStr::new("if_octets-eth0.rrd")));
        assert!(!passes("cpu*", OsStr::new("if_octets-eth0.rrd")));
    }
}
