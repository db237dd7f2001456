//! Text to RPN nodes, accepting and refusing exactly what rrdtool 1.7.2's
//! parser does.
//!
//! The grammar is rrdtool's, including its corners (all observed on the
//! 1.7.2 binary):
//! - tokens are separated by single commas; one trailing comma is allowed,
//!   an empty token anywhere else is an error;
//! - a number is a run of at most 40 characters from `0-9 . e + -` that is
//!   *followed by a comma* and that rrdtool's own `strtod` reads whole (so
//!   `1e` is 1, `1E2` and `0x10` are not numbers, and a number as the last
//!   token is not a number but a data source name);
//! - an operator name matches a whole token;
//! - `PREV(name)` is recognised by its name alone: the character where the
//!   closing parenthesis belongs is not checked;
//! - anything else must be a known variable name (`[_A-Za-z0-9-]`).
//!
//! This module does not decide what a COMPUTE data source may contain
//! (see `Program::parse_compute`) and does not evaluate anything.

use super::op::Op;
use super::{Node, RpnError};

/// One parsed token and where it was in the expression (for errors that
/// must name it).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Token {
    pub node: Node,
    pub text: String,
}

/// Longest number token rrdtool reads (`%40[...]`).
const NUMBER_LEN_MAX: usize = 40;
/// Longest variable name rrdtool reads (`%255[...]`).
const NAME_LEN_MAX: usize = 255;

fn is_number_char(c: u8) -> bool {
    matches!(c, b'0'..=b'9' | b'.' | b'e' | b'+' | b'-')
}

fn is_name_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c == b'-'
}

/// Length of the variable name at the start of `s`, as rrdtool scans it.
fn name_len(s: &[u8]) -> usize {
    s.iter().take(NAME_LEN_MAX).take_while(|&&c| is_name_char(c)).count()
}

/// The token starting at `s` up to the next comma, for error messages.
fn token_text(s: &[u8]) -> String {
    let end = s.iter().position(|&c| c == b',').unwrap_or(s.len());
    String::from_utf8_lossy(&s[..end]).into_owned()
}

/// Parses `expr` into nodes. `lookup` maps a variable name to its index.
pub(crate) fn parse(expr: &str, lookup: &dyn Fn(&str) -> Option<usize>) -> Result<Vec<Token>, RpnError> {
    let b = expr.as_bytes();
    if b.is_empty() {
        return Err(RpnError::Empty);
    }
    let mut tokens = Vec::new();
    let mut pos = 0;
    while pos < b.len() {
        let rest = &b[pos..];
        let (node, len) = parse_token(rest, lookup)?;
        tokens.push(Token { node, text: String::from_utf8_lossy(&rest[..len]).into_owned() });
        pos += len;
        match b.get(pos) {
            None => break,
            Some(b',') => pos += 1,
            Some(_) => {
                return Err(RpnError::Garbage { rest: String::from_utf8_lossy(&b[pos..]).into_owned() })
            }
        }
    }
    Ok(tokens)
}

/// Parses the token at the start of `rest`; returns the node and the number
/// of bytes it took.
fn parse_token(rest: &[u8], lookup: &dyn Fn(&str) -> Option<usize>) -> Result<(Node, usize), RpnError> {
    let run = rest.iter().take(NUMBER_LEN_MAX).take_while(|&&c| is_number_char(c)).count();
    if run > 0 && rest.get(run) == Some(&b',') {
        if let Some(value) = strtod_whole(&rest[..run]) {
            return Ok((Node::Number(value), run));
        }
    }
    for op in Op::ALL {
        let name = op.name().as_bytes();
        if rest.starts_with(name) && matches!(rest.get(name.len()), None | Some(b',')) {
            return Ok((Node::Op(op), name.len()));
        }
    }
    if rest.starts_with(b"PREV(") {
        let n = name_len(&rest[5..]);
        if n > 0 {
            // rrdtool skips one character after the name, whatever it is
            // (normally ')'), and wants a comma or the end after that. When
            // the name ends the expression it reads past the terminator and
            // (as observed) accepts; so do we.
            let len = (5 + n + 1).min(rest.len());
            if matches!(rest.get(len), None | Some(b',')) {
                let name = String::from_utf8_lossy(&rest[5..5 + n]).into_owned();
                let index = lookup(&name).ok_or(RpnError::UnknownVariable { name })?;
                return Ok((Node::PrevOf(index), len));
            }
            return Err(RpnError::Garbage { rest: String::from_utf8_lossy(rest).into_owned() });
        }
    }
    let n = name_len(rest);
    if n > 0 {
        if let Some(index) = lookup(&String::from_utf8_lossy(&rest[..n])) {
            return Ok((Node::Variable(index), n));
        }
    }
    Err(RpnError::UnknownToken { token: token_text(rest) })
}

/// Reads a number at the start of `s` as rrdtool 1.7.2's own `strtod`
/// (`rrd_strtod`) does: the value and the bytes read, or `None` where
/// rrdtool reports no conversion (no digits, or a decimal exponent out of
/// range). One implementation serves update values and RPN constants:
/// [`crate::numparse::rrd_strtod_bytes`]. There is no `inf`, `nan` or hex.
pub fn rrd_strtod(s: &[u8]) -> Option<(f64, usize)> {
    let (value, used) = crate::numparse::rrd_strtod_bytes(s);
    (used > 0).then_some((value, used))
}

/// [`rrd_strtod`] of the whole of `s` (rrdtool's `rrd_strtodbl` returning
/// "fully converted"), else `None`.
pub(crate) fn strtod_whole(s: &[u8]) -> Option<f64> {
    rrd_strtod(s).filter(|&(_, used)| used == s.len()).map(|(v, _)| v)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lookup_ab(name: &str) -> Option<usize> {
        ["a", "b", "e", "b-c"].iter().position(|n| *n == name)
    }

    fn nodes(expr: &str) -> Result<Vec<Node>, RpnError> {
        parse(expr, &lookup_ab).map(|t| t.into_iter().map(|t| t.node).collect())
    }

    /// The number reader agrees with rrdtool on the corners observed with
    /// `rrdtool create` (see the module docs): partial reads, exponents
    /// without digits, range limits and 32-bit wrap-around of the exponent.
    #[test]
    fn strtod_matches_rrdtool_corners() {
        let v = |s: &str| strtod_whole(s.as_bytes());
        assert_eq!(v("12"), Some(12.0));
        assert_eq!(v("+5"), Some(5.0));
        assert_eq!(v("5."), Some(5.0));
        assert_eq!(v("1e"), Some(1.0));
        assert_eq!(v("1e+"), Some(1.0));
        assert_eq!(v("-1e"), Some(-1.0));
        assert_eq!(v("1.5e2"), Some(150.0));
        assert_eq!(v("100000e-1"), Some(10000.0));
        assert_eq!(v("1e-400"), Some(0.0));
        assert_eq!(v("1e400"), Some(f64::INFINITY));
        assert_eq!(v("1e1024"), Some(f64::INFINITY));
        assert_eq!(v("1e4294967297"), Some(10.0));
        assert_eq!(v("1e-4294967295"), Some(10.0));
        assert!(v("0e1024").unwrap().is_nan());
        assert_eq!(v("0e511"), Some(0.0));
        for bad in [
            "", "-", "+", ".", "-.", "e5", "1-2", "--5", "1.2.3", "1ee", "1e1e", "1+", "1e2000", "1e1025",
            "1e-1022",
        ] {
            assert_eq!(v(bad), None, "{bad:?}");
        }
        // Not the correctly rounded value: rrdtool's digit accumulation
        // makes this not an integer, which is why create refuses it.
        assert_ne!(v("12.00000000000000000000000000001"), Some(12.0));
        assert_eq!(v("32767.00000000000000001"), Some(32767.0));
        // The prefix form, as update values are read.
        assert_eq!(rrd_strtod(b" 12.5xyz"), Some((12.5, 5)));
        assert_eq!(rrd_strtod(b"1E2"), Some((100.0, 3)));
        assert_eq!(rrd_strtod(b"inf"), None);
        assert_eq!(rrd_strtod(b"1e2000"), None);
    }

    #[test]
    fn numbers_need_a_following_comma() {
        assert_eq!(nodes("2,a,+").unwrap(), vec![Node::Number(2.0), Node::Variable(0), Node::Op(Op::Add)]);
        // A trailing number is looked up as a name, and "2" is not one.
        assert_eq!(nodes("a,2"), Err(RpnError::UnknownToken { token: "2".into() }));
        // A trailing comma makes it a number again.
        assert_eq!(nodes("a,2,").unwrap(), vec![Node::Variable(0), Node::Number(2.0)]);
        // "-" and "+" are not numbers, so they are operators.
        assert_eq!(nodes("a,-,+").unwrap(), vec![Node::Variable(0), Node::Op(Op::Sub), Node::Op(Op::Add)]);
        // "e" is not a number either, so it is a variable name here.
        assert_eq!(nodes("e,a,+").unwrap()[0], Node::Variable(2));
        // 40 characters is the longest number.
        let forty = format!("{}12", "0".repeat(38));
        assert_eq!(nodes(&format!("a,{forty},+")).unwrap()[1], Node::Number(12.0));
        let forty_one = format!("{}12", "0".repeat(39));
        assert!(nodes(&format!("a,{forty_one},+")).is_err());
    }

    #[test]
    fn separators_and_garbage() {
        assert_eq!(nodes(""), Err(RpnError::Empty));
        assert_eq!(nodes("a,").unwrap(), vec![Node::Variable(0)]);
        assert!(nodes(",a").is_err());
        assert!(nodes("a,,b,+").is_err());
        assert!(nodes("a,b,+,,").is_err());
        assert!(nodes("a, b,+").is_err());
        assert!(nodes("a,b,+ ").is_err());
        assert!(matches!(nodes("a.b"), Err(RpnError::Garbage { .. })));
        assert_eq!(nodes("ab"), Err(RpnError::UnknownToken { token: "ab".into() }));
        assert_eq!(nodes("a,b,add"), Err(RpnError::UnknownToken { token: "add".into() }));
        assert_eq!(nodes("a,b-c,-").unwrap()[1], Node::Variable(3));
    }

    #[test]
    fn prev_of_name_is_as_loose_as_rrdtool() {
        assert_eq!(nodes("PREV(a),b,+").unwrap()[0], Node::PrevOf(0));
        assert_eq!(nodes("PREV(b)").unwrap(), vec![Node::PrevOf(1)]);
        // Any character stands for the closing parenthesis.
        assert_eq!(nodes("PREV(a],b,+").unwrap()[0], Node::PrevOf(0));
        assert_eq!(nodes("PREV(b-c),a,+").unwrap()[0], Node::PrevOf(3));
        assert!(matches!(nodes("a,PREV(a)x"), Err(RpnError::Garbage { .. })));
        assert_eq!(nodes("a,PREV(a").unwrap()[1], Node::PrevOf(0));
        assert_eq!(nodes("PREV(zz)"), Err(RpnError::UnknownVariable { name: "zz".into() }));
        assert_eq!(nodes("a,PREV,+").unwrap()[1], Node::Op(Op::Prev));
    }
}
