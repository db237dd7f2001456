//! Splitting a command line into fields as rrdcached's `buffer_get_field`
//! does: fields are separated by single spaces (two spaces make an empty
//! field), a backslash makes the next byte literal (so `a\ b` is one field
//! `a b`), and a trailing lone backslash is an error. The line end counts as
//! a separator, so a line ending in a space has a last, empty field.
//!
//! Invariant: never panics, for any bytes.

use thiserror::Error;

#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum FieldError {
    /// A backslash at the very end of the line escapes nothing.
    #[error("the line ends with a lone backslash")]
    TrailingBackslash,
}

/// An iterator over the fields of one line (without its `\n`).
#[derive(Clone, Debug)]
pub struct Fields<'a> {
    /// What is left to split; `None` once the line end was consumed.
    rest: Option<&'a [u8]>,
}

impl<'a> Fields<'a> {
    pub fn new(line: &'a [u8]) -> Fields<'a> {
        Fields { rest: Some(line) }
    }

    /// The next field, `None` when the line is used up.
    pub fn next_field(&mut self) -> Option<Result<Vec<u8>, FieldError>> {
        let rest = self.rest?;
        let mut field = Vec::new();
        let mut i = 0;
        while i < rest.len() {
            match rest[i] {
                b' ' => {
                    self.rest = Some(&rest[i + 1..]);
                    return Some(Ok(field));
                }
                b'\\' => {
                    let Some(&next) = rest.get(i + 1) else {
                        self.rest = None;
                        return Some(Err(FieldError::TrailingBackslash));
                    };
                    field.push(next);
                    i += 2;
                }
                b => {
                    field.push(b);
                    i += 1;
                }
            }
        }
        self.rest = None;
        Some(Ok(field))
    }

    /// Whether any field is left (even an empty one).
    pub fn has_more(&self) -> bool {
        self.rest.is_some()
    }

    /// The unsplit remainder of the line, if any.
    pub fn remainder(&self) -> Option<&'a [u8]> {
        self.rest
    }
}

impl Iterator for Fields<'_> {
    type Item = Result<Vec<u8>, FieldError>;
    fn next(&mut self) -> Option<Self::Item> {
        self.next_field()
    }
}

/// All fields of a line.
pub fn split_fields(line: &[u8]) -> Result<Vec<Vec<u8>>, FieldError> {
    Fields::new(line).collect()
}

/// The fields of an UPDATE line that need no general splitting (a
/// server's fast path): the command word, any case,
/// one space, then `file value...` with no backslash anywhere (escapes need
/// the general splitter) and valid UTF-8.
/// The values are `None` when the name ends the line (no field follows).
pub fn plain_update(line: &[u8]) -> Option<(&[u8], Option<&str>)> {
    const WORD: &[u8] = b"update ";
    if line.len() <= WORD.len() || !line[..WORD.len()].eq_ignore_ascii_case(WORD) {
        return None;
    }
    let rest = &line[WORD.len()..];
    if memchr::memchr(b'\\', rest).is_some() {
        return None;
    }
    let (name, values) = match memchr::memchr(b' ', rest) {
        Some(i) => (&rest[..i], Some(std::str::from_utf8(&rest[i + 1..]).ok()?)),
        None => (rest, None),
    };
    (!name.is_empty()).then_some((name, values))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plain_update_is_split_as_the_general_splitter_would() {
        assert_eq!(plain_update(b"UPDATE f.rrd 1:2 3:4"), Some((&b"f.rrd"[..], Some("1:2 3:4"))));
        assert_eq!(plain_update(b"uPdate f.rrd"), Some((&b"f.rrd"[..], None)));
        for general in
            [&b"UPDATE a\\ b.rrd 1:2"[..], b"UPDATE  f.rrd 1:2", b"UPDATEf 1:2", b"UPDATE ", b"FLUSH f"]
        {
            assert_eq!(plain_update(general), None, "{}", String::from_utf8_lossy(general));
        }
        assert_eq!(plain_update(b"UPDATE f.rrd \xff:1"), None);
        let line = b"UPDATE /a/b.rrd 1700000000:1:2 1700000300:U:3";
        let (name, values) = plain_update(line).unwrap();
        let mut fields = vec![&b"UPDATE"[..], name];
        fields.extend(values.unwrap().split(' ').map(str::as_bytes));
        assert_eq!(fields, split_fields(line).unwrap());
    }
    use proptest::prelude::*;

    fn strs(line: &str) -> Vec<String> {
        split_fields(line.as_bytes()).unwrap().into_iter().map(|f| String::from_utf8(f).unwrap()).collect()
    }

    #[test]
    fn splits_like_buffer_get_field() {
        assert_eq!(strs("UPDATE a.rrd 1:2"), ["UPDATE", "a.rrd", "1:2"]);
        assert_eq!(strs("UPDATE  a"), ["UPDATE", "", "a"]);
        assert_eq!(strs("PING "), ["PING", ""]);
        assert_eq!(strs(""), [""]);
        assert_eq!(strs(r"a\ b c"), ["a b", "c"]);
        assert_eq!(strs(r"a\\b"), [r"a\b"]);
        assert_eq!(split_fields(br"abc\"), Err(FieldError::TrailingBackslash));
    }

    proptest! {
        #[test]
        fn never_panics_and_joins_back(line in proptest::collection::vec(any::<u8>(), 0..200)) {
            if let Ok(fields) = split_fields(&line) {
                // Without backslashes the fields are exactly the space-split line.
                if !line.contains(&b'\\') {
                    let joined: Vec<u8> = fields.join(&b' ');
                    prop_assert_eq!(joined, line);
                }
            }
        }
    }
}
