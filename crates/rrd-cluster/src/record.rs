//! The update topic's records: what a node produces for an UPDATE or a
//! CREATE, and what the owner applies.
//!
//! Key: the file's path relative to the base directory (see [`crate::hash`];
//! the key is what the partition is computed from, and what a compacted
//! snapshot topic would be keyed by). Value: one byte for the kind (`U` or
//! `C`), then the command's fields after the file name, each followed by
//! `\n` (a field never contains a newline: the protocol is line based).
//! Values are kept as the client's text, as the single-node journal keeps
//! them: rrdtool's COUNTER arithmetic works on the digits.
//!
//! A group record carries several commands of one partition, in the order
//! they were received (what a BATCH or a pipelining client sent in one
//! read): no key; value `G`, then per command its kind byte, the number of
//! fields in decimal and `\n`, the path and `\n`, then the fields, each
//! followed by `\n`. Kafka's costs (brokers, replication, the producer's
//! and the consumer's threads) are per request and per record, not per
//! byte: one record per partition for a BATCH of 1,000 updates instead of
//! 1,000 records is what lets a node accept more than ~20k values/s on two
//! cores (docs/BENCHMARKS.md, "Cluster"). Nodes older than the group record
//! skip it with an error: upgrade every node before clients send BATCHes.

use thiserror::Error;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    Update,
    Create,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    pub kind: Kind,
    /// Relative to the base directory.
    pub path: String,
    pub args: Vec<String>,
}

#[derive(Debug, Error, PartialEq, Eq)]
pub enum RecordError {
    #[error("a record without a key (file path)")]
    NoKey,
    #[error("a record's key or value is not UTF-8")]
    NotUtf8,
    #[error("a record of unknown kind {0:#04x}")]
    UnknownKind(u8),
    #[error("an empty record")]
    Empty,
    #[error("a group record cut short or with a bad field count")]
    BadGroup,
}

/// A group record's size bound (the brokers' default message limit is
/// 1 MiB; a group is closed before it passes this).
pub const GROUP_BYTES_MAX: usize = 512 * 1024;

/// Appends `record` to a group record's value (`out` starts empty: the `G`
/// is written first).
pub fn push_to_group(out: &mut Vec<u8>, record: &Record) {
    if out.is_empty() {
        out.push(b'G');
    }
    out.push(match record.kind {
        Kind::Update => b'U',
        Kind::Create => b'C',
    });
    out.extend_from_slice(record.args.len().to_string().as_bytes());
    out.push(b'\n');
    out.extend_from_slice(record.path.as_bytes());
    out.push(b'\n');
    for a in &record.args {
        debug_assert!(!a.contains('\n'), "protocol fields never hold a newline");
        out.extend_from_slice(a.as_bytes());
        out.push(b'\n');
    }
}

/// The bytes [`push_to_group`] adds for `record` (at most).
pub fn group_len(record: &Record) -> usize {
    1 + 21 + record.path.len() + 1 + record.args.iter().map(|a| a.len() + 1).sum::<usize>()
}

impl Record {
    pub fn encode_value(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(1 + self.args.iter().map(|a| a.len() + 1).sum::<usize>());
        v.push(match self.kind {
            Kind::Update => b'U',
            Kind::Create => b'C',
        });
        for a in &self.args {
            debug_assert!(!a.contains('\n'), "protocol fields never hold a newline");
            v.extend_from_slice(a.as_bytes());
            v.push(b'\n');
        }
        v
    }

    /// The commands in one record of the update topic: one, or a group's.
    pub fn decode_all(key: Option<&[u8]>, value: Option<&[u8]>) -> Result<Vec<Record>, RecordError> {
        match value {
            Some([b'G', rest @ ..]) => decode_group(rest),
            _ => Record::decode(key, value).map(|r| vec![r]),
        }
    }

    pub fn decode(key: Option<&[u8]>, value: Option<&[u8]>) -> Result<Record, RecordError> {
        let key = key.ok_or(RecordError::NoKey)?;
        let path = std::str::from_utf8(key).map_err(|_| RecordError::NotUtf8)?.to_string();
        let value = value.ok_or(RecordError::Empty)?;
        let (&kind, rest) = value.split_first().ok_or(RecordError::Empty)?;
        let kind = match kind {
            b'U' => Kind::Update,
            b'C' => Kind::Create,
            other => return Err(RecordError::UnknownKind(other)),
        };
        let rest = std::str::from_utf8(rest).map_err(|_| RecordError::NotUtf8)?;
        let args = rest.split_terminator('\n').map(str::to_string).collect();
        Ok(Record { kind, path, args })
    }
}

fn decode_group(mut rest: &[u8]) -> Result<Vec<Record>, RecordError> {
    let text = |b: &[u8]| std::str::from_utf8(b).map(str::to_string).map_err(|_| RecordError::NotUtf8);
    let line = |rest: &mut &[u8]| -> Result<String, RecordError> {
        let end = rest.iter().position(|&b| b == b'\n').ok_or(RecordError::BadGroup)?;
        let t = text(&rest[..end])?;
        *rest = &rest[end + 1..];
        Ok(t)
    };
    let mut out = Vec::new();
    if rest.is_empty() {
        return Err(RecordError::Empty);
    }
    while let Some((&kind, after)) = rest.split_first() {
        let kind = match kind {
            b'U' => Kind::Update,
            b'C' => Kind::Create,
            other => return Err(RecordError::UnknownKind(other)),
        };
        rest = after;
        let count: usize = line(&mut rest)?.parse().map_err(|_| RecordError::BadGroup)?;
        let path = line(&mut rest)?;
        if path.is_empty() || count > rest.len() {
            return Err(RecordError::BadGroup);
        }
        let mut args = Vec::with_capacity(count);
        for _ in 0..count {
            args.push(line(&mut rest)?);
        }
        out.push(Record { kind, path, args });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_and_bad_ones_are_refused() {
        let r = Record {
            kind: Kind::Update,
            path: "a/b.rrd".into(),
            args: vec!["1000:1:2".into(), "1300:U:3".into()],
        };
        let v = r.encode_value();
        assert_eq!(v, b"U1000:1:2\n1300:U:3\n");
        assert_eq!(Record::decode(Some(b"a/b.rrd"), Some(&v)), Ok(r.clone()));
        let c = Record { kind: Kind::Create, path: "x.rrd".into(), args: vec![] };
        assert_eq!(Record::decode(Some(b"x.rrd"), Some(&c.encode_value())), Ok(c));
        assert_eq!(Record::decode(None, Some(b"U")), Err(RecordError::NoKey));
        assert_eq!(Record::decode(Some(b"x"), Some(b"")), Err(RecordError::Empty));
        assert_eq!(Record::decode(Some(b"x"), Some(b"Z1\n")), Err(RecordError::UnknownKind(b'Z')));
        assert_eq!(Record::decode(Some(b"x"), Some(b"U\xff\n")), Err(RecordError::NotUtf8));
        // A single record through decode_all.
        assert_eq!(Record::decode_all(Some(b"a/b.rrd"), Some(&v)), Ok(vec![r]));
    }

    #[test]
    fn group_records_round_trip_in_order_and_bad_ones_are_refused() {
        let rs = vec![
            Record { kind: Kind::Create, path: "d/x.rrd".into(), args: vec!["-b".into(), "1000".into()] },
            Record {
                kind: Kind::Update,
                path: "d/x.rrd".into(),
                args: vec!["1300:1".into(), "1600:2".into()],
            },
            Record { kind: Kind::Update, path: "y.rrd".into(), args: vec!["1300:U".into()] },
        ];
        let mut v = Vec::new();
        for r in &rs {
            let before = v.len();
            push_to_group(&mut v, r);
            assert!(v.len() - before <= group_len(r) + 1);
        }
        assert_eq!(v, b"GC2\nd/x.rrd\n-b\n1000\nU2\nd/x.rrd\n1300:1\n1600:2\nU1\ny.rrd\n1300:U\n");
        assert_eq!(Record::decode_all(None, Some(&v)), Ok(rs));
        // Cut anywhere inside the last command: refused, never half read.
        for cut in [v.len() - 1, v.len() - 8, v.len() - 12] {
            assert!(Record::decode_all(None, Some(&v[..cut])).is_err(), "cut at {cut}");
        }
        assert_eq!(Record::decode_all(None, Some(b"G")), Err(RecordError::Empty));
        assert_eq!(Record::decode_all(None, Some(b"GU9999999999\nx\n")), Err(RecordError::BadGroup));
        assert_eq!(Record::decode_all(None, Some(b"GUx\ny\n")), Err(RecordError::BadGroup));
        assert_eq!(Record::decode_all(None, Some(b"GQ1\ny\n1:1\n")), Err(RecordError::UnknownKind(b'Q')));
    }
}
