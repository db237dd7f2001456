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
        assert_eq!(Record::decode(Some(b"a/b.rrd"), Some(&v)), Ok(r));
        let c = Record { kind: Kind::Create, path: "x.rrd".into(), args: vec![] };
        assert_eq!(Record::decode(Some(b"x.rrd"), Some(&c.encode_value())), Ok(c));
        assert_eq!(Record::decode(None, Some(b"U")), Err(RecordError::NoKey));
        assert_eq!(Record::decode(Some(b"x"), Some(b"")), Err(RecordError::Empty));
        assert_eq!(Record::decode(Some(b"x"), Some(b"Z1\n")), Err(RecordError::UnknownKind(b'Z')));
        assert_eq!(Record::decode(Some(b"x"), Some(b"U\xff\n")), Err(RecordError::NotUtf8));
    }
}
