//! Fuzzes rrdcached's line protocol as the daemon reads it (rrd-protocol):
//! a command line split into fields, the command lookup and permission
//! lists, and listen addresses. Nothing may panic; `split_fields` must
//! agree with the `Fields` iterator it is built on; a line that splits
//! cleanly must split the same way again after its fields are re-escaped
//! (backslash before every space and backslash), so the escaping the
//! client side writes is the inverse of what the daemon reads.

use rrd_protocol::{split_fields, Command, Fields, ListenAddress, Permissions};

fn escape(fields: &[Vec<u8>]) -> Vec<u8> {
    let mut out = Vec::new();
    for (i, f) in fields.iter().enumerate() {
        if i > 0 {
            out.push(b' ');
        }
        for &c in f {
            if c == b' ' || c == b'\\' {
                out.push(b'\\');
            }
            out.push(c);
        }
    }
    out
}

/// The target: one input.
pub fn run(data: &[u8]) {
    let line = data.strip_suffix(b"\n").unwrap_or(data);
    let mut iterated = Vec::new();
    let mut failed = false;
    let mut fields = Fields::new(line);
    let _ = fields.remainder();
    while let Some(f) = fields.next_field() {
        match f {
            Ok(f) => iterated.push(f),
            Err(_) => {
                failed = true;
                break;
            }
        }
        let _ = fields.has_more();
    }
    match split_fields(line) {
        Ok(split) => {
            assert!(!failed, "split_fields accepted a line the iterator refused");
            assert_eq!(split, iterated);
            if let Some(name) = split.first() {
                if let Some(c) = Command::find(name) {
                    assert!(c.name().as_bytes().eq_ignore_ascii_case(name));
                }
            }
            let again = split_fields(&escape(&split)).expect("a re-escaped line splits");
            assert_eq!(again, split);
        }
        Err(_) => assert!(failed, "split_fields refused a line the iterator accepted"),
    }
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = Permissions::parse(text);
        if let Ok(a) = ListenAddress::parse(text) {
            let _ = a.display();
        }
    }
}
