//! Munin's own words for its files: munin-update keeps every plugin's
//! configuration in `DBDIR/datafile` (`group;host:service.graph_title
//! Load average`, `group;host:service.field.label load`, `.draw AREA`,
//! `.colour 00cc00`), and names each file
//! `DBDIR/group/host-service-field-t.rrd` (`t` its type's letter). A file
//! drawn with the Munin definition takes its field's label, draw type and
//! colour, and its service's title and vertical label, from there when
//! the datafile has them.
//!
//! The datafile is read through the tree's root (so a link out of the tree
//! is refused as any file is), bounded ([`MAX_BYTES`]), and parsed again
//! only when its length or modification time changes.

use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use rrd_engine::root::Root;

/// The largest datafile read (a Munin master with thousands of nodes
/// writes a few MB).
pub const MAX_BYTES: u64 = 64 << 20;

/// Datafiles kept parsed.
const KEPT: usize = 16;

/// What the datafile says of one field, and of its service.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Field {
    pub label: Option<String>,
    /// The definition's draw type (LINE1, LINE2, LINE3, AREA, STACK).
    pub draw: Option<String>,
    /// RRGGBB.
    pub colour: Option<String>,
    pub title: Option<String>,
    pub vlabel: Option<String>,
}

#[derive(Debug, Default)]
struct Service {
    title: Option<String>,
    vlabel: Option<String>,
    fields: HashMap<String, Field>,
}

/// A parsed datafile: services by `group` and `host-service`.
#[derive(Debug, Default)]
pub struct Datafile {
    services: HashMap<(String, String), Service>,
}

impl Datafile {
    pub fn parse(text: &str) -> Datafile {
        let mut d = Datafile::default();
        for line in text.lines() {
            let Some((key, value)) = line.split_once(' ') else { continue };
            let Some((node, rest)) = key.split_once(':') else { continue };
            let Some((group, host)) = node.split_once(';') else { continue };
            let Some((path, attr)) = rest.rsplit_once('.') else { continue };
            let value = value.trim().to_string();
            // Munin writes a multigraph child `a.b` as `a-b` in file names.
            let service_key =
                |service: &str| (group.to_string(), format!("{host}-{}", service.replace('.', "-")));
            if let Some(a) = attr.strip_prefix("graph_") {
                let s = d.services.entry(service_key(path)).or_default();
                match a {
                    "title" => s.title = Some(value),
                    "vlabel" => s.vlabel = Some(value.replace("${graph_period}", "second")),
                    _ => {}
                }
                continue;
            }
            let Some((service, field)) = path.rsplit_once('.') else { continue };
            let f = d
                .services
                .entry(service_key(service))
                .or_default()
                .fields
                .entry(field.to_string())
                .or_default();
            match attr {
                "label" => f.label = Some(value),
                "draw" => f.draw = draw(&value),
                "colour" if value.len() == 6 && value.bytes().all(|b| b.is_ascii_hexdigit()) => {
                    f.colour = Some(value.to_ascii_lowercase())
                }
                _ => {}
            }
        }
        d
    }

    /// The field of file `file` (its name without `.rrd`) in directory
    /// `group`, with its service's title and vertical label.
    pub fn find(&self, group: &str, file: &str) -> Option<Field> {
        let (rest, kind) = file.rsplit_once('-')?;
        if kind.len() != 1 {
            return None;
        }
        let (service, field) = rest.rsplit_once('-')?;
        let s = self.services.get(&(group.to_string(), service.to_string()))?;
        let f = s.fields.get(field)?;
        Some(Field { title: s.title.clone(), vlabel: s.vlabel.clone(), ..f.clone() })
    }
}

/// Munin's draw types as the definitions' (a stacked line drawn as a
/// line: the definitions stack areas only).
fn draw(munin: &str) -> Option<String> {
    Some(
        match munin {
            "LINE" | "LINE0" | "LINE1" | "LINESTACK1" => "LINE1",
            "LINE2" | "LINESTACK2" => "LINE2",
            "LINE3" | "LINESTACK3" => "LINE3",
            "AREA" => "AREA",
            "STACK" | "AREASTACK" => "STACK",
            _ => return None,
        }
        .to_string(),
    )
}

/// A parsed datafile with the length and modification time it had.
type Kept = (u64, SystemTime, Arc<Datafile>);

/// Parsed datafiles, by path.
#[derive(Default)]
pub struct Datafiles {
    kept: Mutex<HashMap<PathBuf, Kept>>,
}

impl Datafiles {
    /// What the datafile beside the group directory of `rrd` (a path in
    /// the tree `root` confines) says of it; `None` without a datafile or
    /// an entry.
    pub fn field_of(&self, root: &Root, rrd: &Path, file: &str) -> Option<Field> {
        let group_dir = rrd.parent()?;
        let group = group_dir.file_name()?.to_str()?;
        let datafile = group_dir.parent()?.join("datafile");
        let parsed = self.load(root, &datafile)?;
        parsed.find(group, file)
    }

    fn load(&self, root: &Root, path: &Path) -> Option<Arc<Datafile>> {
        let file = root.open(path, false).ok()?;
        let meta = file.metadata().ok()?;
        let (len, mtime) = (meta.len(), meta.modified().ok()?);
        if len > MAX_BYTES {
            return None;
        }
        if let Some((l, m, d)) = self.kept.lock().expect("datafiles lock").get(path) {
            if *l == len && *m == mtime {
                return Some(d.clone());
            }
        }
        let mut text = String::new();
        file.take(MAX_BYTES).read_to_string(&mut text).ok()?;
        let parsed = Arc::new(Datafile::parse(&text));
        let mut kept = self.kept.lock().expect("datafiles lock");
        if kept.len() >= KEPT {
            kept.clear();
        }
        kept.insert(path.to_path_buf(), (len, mtime, parsed.clone()));
        Some(parsed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_take_their_labels_draw_types_and_colours() {
        let d = Datafile::parse(
            "version 2.0.67\n\
             g;web-1:load.graph_title Load average\n\
             g;web-1:load.graph_vlabel load per ${graph_period}\n\
             g;web-1:load.load.label 5-minute load\n\
             g;web-1:load.load.draw AREA\n\
             g;web-1:load.load.colour 00AA00\n\
             g;web-1:diskstats_iops.sda.rdio.label reads\n\
             g;web-1:diskstats_iops.sda.rdio.draw LINESTACK2\n\
             g;web-1:cpu.user.colour COLOUR3\n",
        );
        let load = d.find("g", "web-1-load-load-g").unwrap();
        assert_eq!(load.label.as_deref(), Some("5-minute load"));
        assert_eq!(load.draw.as_deref(), Some("AREA"));
        assert_eq!(load.colour.as_deref(), Some("00aa00"));
        assert_eq!(load.title.as_deref(), Some("Load average"));
        assert_eq!(load.vlabel.as_deref(), Some("load per second"));
        let io = d.find("g", "web-1-diskstats_iops-sda-rdio-d").unwrap();
        assert_eq!((io.label.as_deref(), io.draw.as_deref()), (Some("reads"), Some("LINE2")));
        // A palette reference is not a colour; other groups and files miss.
        assert_eq!(d.find("g", "web-1-cpu-user-d").unwrap().colour, None);
        assert!(d.find("h", "web-1-load-load-g").is_none());
        assert!(d.find("g", "web-1-load-load").is_none());
    }
}
