//! RPN expressions as RRDtool 1.7.2 parses, stores, prints and evaluates
//! them, for COMPUTE data sources.
//!
//! A COMPUTE data source (`DS:x:COMPUTE:a,b,+,2,*`) stores its expression
//! in the 80 bytes of its DS `par` array, starting at slot 0: an array of
//! 4-byte entries `{ op: u8, pad: u8, val: i16 LE }` ending with an END entry
//! (code 32), the rest zero. Operator numbers are rrdtool's `op_en` order
//! ([`op`]); numbers are stored as an i16 beside code 0 and data sources as
//! their index beside code 1, so a stored expression holds at most 19 nodes
//! and only integer constants in -32768..=32767.
//!
//! What this module owns:
//! - [`Program::parse_compute`]: rrdtool's parser and COMPUTE checks,
//!   accepting and refusing the same expressions (errors in rrdtool's
//!   order: syntax, then operators that need a time series, then length,
//!   then constants);
//! - [`Program::to_par`] / [`Program::from_par`]: the stored bytes, exactly;
//! - [`Program::to_rrd_string`]: rrdtool's `rpn_compact2str` text, printed
//!   by `info` (`ds[x].cdef`) and `dump` (`<cdef>`);
//! - [`Program::eval`]: rrdtool's `rpn_calc` on one step's values.
//!
//! Invariants: a [`Program`] built by `parse_compute` or `from_par` has at
//! most 19 nodes, integer constants that fit an i16 and no operator that
//! needs a time series, so `to_par` succeeds on it. Untrusted bytes never
//! panic: unknown codes, a missing END or a negative index are errors.
//!
//! Deliberately not here: which values a COMPUTE data source sees and when
//! (the update engine calls [`Program::eval`] with the PDPs of the step),
//! and graph CDEFs, whose time-series operators (PREV, TIME, TREND, ...) go
//! through [`eval::Context::series_op`] when someone needs them.
//!
//! rrdtool's unknown value is the negative quiet NaN ([`DNAN`]); results
//! carry NaN bits the way rrdtool's arithmetic does.

pub mod eval;
pub mod op;
mod parse;

#[cfg(test)]
mod rrdtool_tests;

use std::time::{SystemTime, UNIX_EPOCH};

pub use eval::{Context, Stack};
pub use op::Op;
use op::{CODE_END, CODE_NUMBER, CODE_PREV_OTHER, CODE_VARIABLE};
pub use parse::rrd_strtod;

/// rrdtool's unknown value as it stores it (one definition, in numparse).
pub use crate::numparse::DNAN;

/// Entries that fit in a DS `par` array (80 bytes, 4 per entry).
pub const PAR_ENTRIES: usize = 20;
/// Most nodes a COMPUTE expression may have (one entry is the END).
pub const COMPUTE_NODES_MAX: usize = PAR_ENTRIES - 1;

/// The message rrdtool prints for any operator a COMPUTE data source refuses.
const RRDTOOL_NOT_IN_COMPUTE: &str = "operators TIME LTIME STEPWIDTH PREV NEW* COUNT TREND TRENDNAN PREDICT \
     PREDICTSIGMA PREDICTPERC are not supported with DS COMPUTE";

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RpnError {
    #[error("the RPN expression is empty")]
    Empty,
    #[error("don't understand '{token}' in the RPN expression: it is not a number, an operator or the name of an earlier data source")]
    UnknownToken { token: String },
    #[error("variable '{name}' not found")]
    UnknownVariable { name: String },
    #[error("garbage in RPN: '{rest}'")]
    Garbage { rest: String },
    #[error("operator {op} is not supported with DS COMPUTE (TIME, LTIME, STEPWIDTH, PREV, NEW*, COUNT, TREND, TRENDNAN, PREDICT, PREDICTSIGMA and PREDICTPERC need a time series)")]
    NotAllowedInCompute { op: &'static str },
    #[error("Maximum {COMPUTE_NODES_MAX} RPN nodes permitted. Got {count} RPN nodes at present.")]
    TooManyNodes { count: usize },
    #[error("constant '{token}' is not an integer in the interval (-32768, 32767), which is all a COMPUTE data source can store")]
    BadConstant { token: String },
    #[error("data source index {index} cannot be stored in a COMPUTE data source (at most 32767)")]
    IndexTooLarge { index: usize },
    #[error("the stored COMPUTE expression has no END among its {PAR_ENTRIES} entries")]
    MissingEnd,
    #[error("the stored COMPUTE expression has unknown operator code {code} at entry {entry}")]
    UnknownOpCode { code: u8, entry: usize },
    #[error("the stored COMPUTE expression refers to data source index {value} at entry {entry}")]
    NegativeIndex { value: i16, entry: usize },
    #[error("RPN stack underflow at {op}")]
    StackUnderflow { op: &'static str },
    #[error("RPN final stack size != 1 (the expression leaves {depth} values)")]
    FinalStackSize { depth: usize },
    #[error("percentile argument must be between 0 and 100 (got {value})")]
    PercentRange { value: f64 },
    #[error("RPN out of memory (allocating {count} objects): ROLL needs a non-negative count")]
    RollCount { count: i32 },
    #[error("{op} with the negative count {count} is refused (it crashes rrdtool)")]
    NegativeCount { op: &'static str, count: i32 },
    #[error("the expression reads data source index {index} but only {available} values were given")]
    MissingValue { index: usize, available: usize },
    #[error(
        "PREV(name) cannot be evaluated in a COMPUTE data source (VDEF made it into rpn_calc... aborting)"
    )]
    PrevOfInCompute,
    #[error("operator {op} needs a time series, which this evaluation does not have")]
    NeedsTimeSeries { op: &'static str },
    #[error("the RPN stack grew beyond {limit} values")]
    StackOverflow { limit: usize },
    /// TREND/TRENDNAN whose variable is not the node two before it.
    #[error("malformed trend arguments")]
    MalformedTrend,
    #[error("unsupported percentile: {value:.6}")]
    PredictPercentile { value: f64 },
    #[error("negative shift step not allowed: {step}")]
    NegativeShiftStep { step: i32 },
}

impl RpnError {
    /// The text rrdtool 1.7.2 prints for this error (after `ERROR: ` and,
    /// for update, the file name), for a CLI that must print the same.
    /// Syntax errors in `create` all read "failed to parse computed data
    /// source" there.
    pub fn rrdtool_message(&self) -> String {
        match self {
            RpnError::Empty
            | RpnError::UnknownToken { .. }
            | RpnError::UnknownVariable { .. }
            | RpnError::Garbage { .. } => "failed to parse computed data source".into(),
            RpnError::NotAllowedInCompute { .. } => RRDTOOL_NOT_IN_COMPUTE.into(),
            RpnError::TooManyNodes { .. } => self.to_string(),
            RpnError::BadConstant { .. } | RpnError::IndexTooLarge { .. } => {
                "constants must be integers in the interval (-32768, 32767)".into()
            }
            RpnError::StackUnderflow { .. } => "RPN stack underflow".into(),
            RpnError::FinalStackSize { .. } => "RPN final stack size != 1".into(),
            RpnError::PercentRange { .. } => "percentile argument must be between 0 and 100".into(),
            RpnError::RollCount { count } => format!("RPN out of memory (allocating {count} objects)"),
            RpnError::PrevOfInCompute => "VDEF made it into rpn_calc... aborting".into(),
            _ => self.to_string(),
        }
    }
}

/// One element of an expression.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Node {
    /// A constant.
    Number(f64),
    /// The value of a data source (or, later, a graph variable) by index.
    Variable(usize),
    /// `PREV(name)`: the previous value of a variable. rrdtool stores it in
    /// COMPUTE data sources but cannot evaluate it there.
    PrevOf(usize),
    Op(Op),
}

/// A parsed, validated expression.
#[derive(Clone, Debug, PartialEq)]
pub struct Program {
    nodes: Vec<Node>,
}

/// Whether a constant can be stored (rrdtool: integral and within a short).
fn storable_constant(v: f64) -> bool {
    v.floor() == v && (-32768.0..=32767.0).contains(&v)
}

impl Program {
    /// Parses a COMPUTE expression as `rrdtool create` does.
    ///
    /// `ds_names` are the names a COMPUTE data source may reference: those
    /// of the data sources defined *before* it, in file order (rrdtool
    /// refuses itself and later ones). Pass `&all_names[..ds_index]`.
    /// `Node::Variable(i)` then means `ds_names[i]`, which is also the DS
    /// index in the file. A name is looked up after numbers and operator
    /// names, so a DS called `MIN` or `7` is shadowed, as in rrdtool.
    pub fn parse_compute(expr: &str, ds_names: &[&str]) -> Result<Program, RpnError> {
        let lookup = |name: &str| ds_names.iter().position(|n| *n == name);
        let tokens = parse::parse(expr, &lookup)?;
        for t in &tokens {
            if let Node::Op(op) = t.node {
                if op.needs_time_series() {
                    return Err(RpnError::NotAllowedInCompute { op: op.name() });
                }
            }
        }
        if tokens.len() > COMPUTE_NODES_MAX {
            return Err(RpnError::TooManyNodes { count: tokens.len() });
        }
        for t in &tokens {
            if let Node::Number(v) = t.node {
                if !storable_constant(v) {
                    return Err(RpnError::BadConstant { token: t.text.clone() });
                }
            }
        }
        Ok(Program { nodes: tokens.into_iter().map(|t| t.node).collect() })
    }

    /// Parses any RPN expression as rrdtool's `rpn_parse` does (graph CDEFs
    /// included), with `lookup` mapping a variable name to its index. No
    /// COMPUTE checks are made; [`Program::to_par`] makes them.
    pub fn parse(expr: &str, lookup: &dyn Fn(&str) -> Option<usize>) -> Result<Program, RpnError> {
        Ok(Program { nodes: parse::parse(expr, lookup)?.into_iter().map(|t| t.node).collect() })
    }

    /// Builds a program from nodes (for tests and future CDEF parsing); no
    /// COMPUTE checks are made, [`Program::to_par`] makes them.
    pub fn from_nodes(nodes: Vec<Node>) -> Program {
        Program { nodes }
    }

    pub fn nodes(&self) -> &[Node] {
        &self.nodes
    }

    /// Indices of the data sources the expression reads (with repeats).
    pub fn referenced_ds(&self) -> impl Iterator<Item = usize> + '_ {
        self.nodes.iter().filter_map(|n| match *n {
            Node::Variable(i) | Node::PrevOf(i) => Some(i),
            _ => None,
        })
    }

    /// Compacts into a DS `par` array exactly as rrdtool stores it: 4-byte
    /// entries from byte 0, an END entry, zeros after.
    pub fn to_par(&self) -> Result<rrd_format::Par, RpnError> {
        if let Some(op) = self.nodes.iter().find_map(|n| match n {
            Node::Op(op) if op.needs_time_series() => Some(*op),
            _ => None,
        }) {
            return Err(RpnError::NotAllowedInCompute { op: op.name() });
        }
        if self.nodes.len() > COMPUTE_NODES_MAX {
            return Err(RpnError::TooManyNodes { count: self.nodes.len() });
        }
        let mut bytes = [0u8; PAR_ENTRIES * 4];
        for (entry, node) in self.nodes.iter().enumerate() {
            let (code, val) = match *node {
                Node::Number(v) => {
                    if !storable_constant(v) {
                        return Err(RpnError::BadConstant { token: v.to_string() });
                    }
                    (CODE_NUMBER, v as i16)
                }
                Node::Variable(i) => (CODE_VARIABLE, index_to_i16(i)?),
                Node::PrevOf(i) => (CODE_PREV_OTHER, index_to_i16(i)?),
                Node::Op(op) => (op.code(), 0),
            };
            bytes[entry * 4] = code;
            bytes[entry * 4 + 2..entry * 4 + 4].copy_from_slice(&val.to_le_bytes());
        }
        bytes[self.nodes.len() * 4] = CODE_END;
        let mut par = [0u64; 10];
        for (slot, chunk) in par.iter_mut().zip(bytes.chunks_exact(8)) {
            *slot = u64::from_le_bytes(chunk.try_into().expect("chunk of 8"));
        }
        Ok(par)
    }

    /// Reads a stored expression back (untrusted bytes: a missing END, an
    /// unknown code, an operator a COMPUTE data source cannot hold or a
    /// negative index is an error). The padding byte, the value of entries
    /// that have none and everything after END are ignored, as rrdtool
    /// ignores them.
    pub fn from_par(par: &rrd_format::Par) -> Result<Program, RpnError> {
        let mut bytes = [0u8; PAR_ENTRIES * 4];
        for (chunk, slot) in bytes.chunks_exact_mut(8).zip(par.iter()) {
            chunk.copy_from_slice(&slot.to_le_bytes());
        }
        let mut nodes = Vec::new();
        for (entry, e) in bytes.chunks_exact(4).enumerate() {
            let code = e[0];
            let val = i16::from_le_bytes([e[2], e[3]]);
            let index = || usize::try_from(val).map_err(|_| RpnError::NegativeIndex { value: val, entry });
            let node = match code {
                CODE_END => return Ok(Program { nodes }),
                CODE_NUMBER => Node::Number(f64::from(val)),
                CODE_VARIABLE => Node::Variable(index()?),
                CODE_PREV_OTHER => Node::PrevOf(index()?),
                _ => match Op::from_code(code) {
                    Some(op) if op.needs_time_series() => {
                        return Err(RpnError::NotAllowedInCompute { op: op.name() })
                    }
                    Some(op) => Node::Op(op),
                    None => return Err(RpnError::UnknownOpCode { code, entry }),
                },
            };
            nodes.push(node);
        }
        Err(RpnError::MissingEnd)
    }

    /// rrdtool's `rpn_compact2str`: nodes joined by commas, constants as
    /// integers, variables by name. `PREV(name)` prints as nothing at all,
    /// as in rrdtool (whose `info` and `dump` crash when it comes first;
    /// here it just prints nothing). An index outside `ds_names` also prints
    /// as nothing. Constants that a COMPUTE data source cannot hold (only in
    /// programs built with [`Program::from_nodes`]) print in Rust's shortest
    /// form.
    pub fn to_rrd_string(&self, ds_names: &[&str]) -> String {
        let mut out = String::new();
        for (i, node) in self.nodes.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            match *node {
                Node::Number(v) if storable_constant(v) => out.push_str(&(v as i16).to_string()),
                Node::Number(v) => out.push_str(&v.to_string()),
                Node::Variable(i) => out.push_str(ds_names.get(i).copied().unwrap_or("")),
                Node::PrevOf(_) => {}
                Node::Op(op) => out.push_str(op.name()),
            }
        }
        out
    }

    /// Evaluates with `values[i]` the value of DS `i` (for COMPUTE: the
    /// PDPs of this step) and returns the single value left on the stack.
    /// NOW reads the system clock.
    pub fn eval(&self, values: &[f64]) -> Result<f64, RpnError> {
        let now = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0.0, |d| d.as_secs() as f64);
        self.eval_at(values, now)
    }

    /// [`Program::eval`] with NOW fixed to `now_secs`.
    pub fn eval_at(&self, values: &[f64], now_secs: f64) -> Result<f64, RpnError> {
        self.eval_with(&mut ComputeContext { values, now_secs })
    }

    /// Evaluates against any context (the extension point for graph CDEFs).
    pub fn eval_with(&self, ctx: &mut dyn Context) -> Result<f64, RpnError> {
        eval::run(&self.nodes, ctx)
    }
}

fn index_to_i16(i: usize) -> Result<i16, RpnError> {
    i16::try_from(i).map_err(|_| RpnError::IndexTooLarge { index: i })
}

/// A COMPUTE data source's view: the PDPs of one step, and the clock.
struct ComputeContext<'a> {
    values: &'a [f64],
    now_secs: f64,
}

impl Context for ComputeContext<'_> {
    fn variable(&mut self, index: usize) -> Result<f64, RpnError> {
        self.values.get(index).copied().ok_or(RpnError::MissingValue { index, available: self.values.len() })
    }

    fn prev_of(&mut self, _index: usize) -> Result<f64, RpnError> {
        Err(RpnError::PrevOfInCompute)
    }

    fn now(&mut self) -> f64 {
        self.now_secs
    }

    fn series_op(&mut self, op: Op, _: usize, _: &[Node], _: &mut Stack) -> Result<(), RpnError> {
        Err(RpnError::NotAllowedInCompute { op: op.name() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NAMES: [&str; 4] = ["a", "b", "c", "d"];

    fn par_bytes(par: &rrd_format::Par) -> Vec<u8> {
        par.iter().flat_map(|s| s.to_le_bytes()).collect()
    }

    /// The bytes rrdtool 1.7.2 wrote for `DS:c:COMPUTE:a,b,+,2,*` (after
    /// DS a and b), copied from the file.
    #[test]
    fn to_par_matches_rrdtool_bytes() {
        let p = Program::parse_compute("a,b,+,2,*", &NAMES[..2]).unwrap();
        let want = hex("010000000100010008000000000002000b00000020000000");
        let got = par_bytes(&p.to_par().unwrap());
        assert_eq!(&got[..want.len()], &want[..]);
        assert!(got[want.len()..].iter().all(|&b| b == 0));
        let neg = Program::parse_compute("a,-32768,+", &NAMES[..1]).unwrap();
        assert_eq!(&par_bytes(&neg.to_par().unwrap())[4..8], &[0, 0, 0x00, 0x80]);
    }

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
    }

    #[test]
    fn round_trips_through_par_and_text() {
        for expr in [
            "a,b,+,2,*",
            "a,b,c,d,4,MEDIAN",
            "-5,a,MAX,NOW,%",
            "a,UN,0,a,IF,b,ADDNAN",
            "a,b,c,3,SORT,POP,POP",
            "a,b,c,d,60,4,PERCENT",
            "a,b,ATAN2,RAD2DEG,DEG2RAD,SIN,COS,LOG,EXP,SQRT,ATAN,FLOOR,CEIL,ABS",
            "a,b,LT,a,b,LE,a,b,GT,a,b,GE,a,b,EQ,a,b,NE",
            "a,INF,NEGINF,UNKN,ISINF,POP,LIMIT",
            "a,DUP,EXC,POP,DEPTH,COPY,2,1,ROLL,1,INDEX",
            "a,b,MINNAN,c,MAXNAN,d,MIN,1,MAX,2,POW",
            "a,b,c,3,AVG,a,b,2,SMIN,a,b,2,SMAX,a,b,2,STDEV",
        ] {
            let p = Program::parse_compute(expr, &NAMES).unwrap();
            assert_eq!(p.to_rrd_string(&NAMES), expr);
            let back = Program::from_par(&p.to_par().unwrap()).unwrap();
            assert_eq!(back, p, "{expr}");
            assert_eq!(back.to_rrd_string(&NAMES), expr);
        }
        // rrdtool normalises constants and drops a trailing comma.
        let p = Program::parse_compute("a,1e3,+,+5,-,5.,*,-0,/,", &NAMES).unwrap();
        assert_eq!(p.to_rrd_string(&NAMES), "a,1000,+,5,-,5,*,0,/");
        // PREV(name) prints as nothing.
        let p = Program::parse_compute("a,b,PREV(a),+,+", &NAMES).unwrap();
        assert_eq!(p.to_rrd_string(&NAMES), "a,b,,+,+");
        assert_eq!(Program::from_par(&p.to_par().unwrap()).unwrap(), p);
    }

    #[test]
    fn compute_checks_in_rrdtool_order() {
        let parse = |e: &str| Program::parse_compute(e, &NAMES[..2]);
        assert_eq!(parse("a,c,+"), Err(RpnError::UnknownToken { token: "c".into() }));
        assert_eq!(parse("a,TIME,+"), Err(RpnError::NotAllowedInCompute { op: "TIME" }));
        for op in ["TIME", "LTIME", "STEPWIDTH", "PREV", "NEWDAY", "NEWWEEK", "NEWMONTH", "NEWYEAR", "COUNT"]
        {
            assert!(matches!(parse(op), Err(RpnError::NotAllowedInCompute { .. })), "{op}");
        }
        for op in ["TREND", "TRENDNAN", "PREDICT", "PREDICTSIGMA", "PREDICTPERC"] {
            assert!(matches!(parse(&format!("a,{op}")), Err(RpnError::NotAllowedInCompute { .. })), "{op}");
        }
        let long = format!("a{}", ",a,+".repeat(9));
        assert!(parse(&long).is_ok());
        let too_long = format!("a{}", ",a,+".repeat(10));
        assert_eq!(parse(&too_long), Err(RpnError::TooManyNodes { count: 21 }));
        // The length check comes before the constant check, the operator
        // check before both.
        assert_eq!(parse(&format!("{too_long},0.5,+")), Err(RpnError::TooManyNodes { count: 23 }));
        assert!(matches!(
            parse(&format!("{too_long},0.5,+,TIME")),
            Err(RpnError::NotAllowedInCompute { .. })
        ));
        for bad in ["0.5", "-0.5", ".5", "32768", "-32769", "100000", "1e5", "1e-2", "1e400", "0e1024"] {
            assert_eq!(
                parse(&format!("a,{bad},+")),
                Err(RpnError::BadConstant { token: bad.into() }),
                "{bad}"
            );
        }
        for good in ["32767", "-32768", "1e3", "1.5e2", "-0", "1e-400", "32767.00000000000000001"] {
            assert!(parse(&format!("a,{good},+")).is_ok(), "{good}");
        }
        assert_eq!(
            RpnError::TooManyNodes { count: 23 }.rrdtool_message(),
            "Maximum 19 RPN nodes permitted. Got 23 RPN nodes at present."
        );
    }

    #[test]
    fn from_par_rejects_bad_bytes() {
        let good = Program::parse_compute("a,b,+", &NAMES).unwrap().to_par().unwrap();
        let mut bytes = par_bytes(&good);
        let to_par = |b: &[u8]| -> rrd_format::Par {
            let mut p = [0u64; 10];
            for (s, c) in p.iter_mut().zip(b.chunks_exact(8)) {
                *s = u64::from_le_bytes(c.try_into().unwrap());
            }
            p
        };
        // Garbage after END and in padding is ignored.
        bytes[13] = 0xff;
        bytes[1] = 0x7f;
        bytes[40] = 0xee;
        assert!(Program::from_par(&to_par(&bytes)).is_ok());
        let mut no_end = bytes.clone();
        for e in 0..PAR_ENTRIES {
            no_end[e * 4] = Op::Dup.code();
        }
        assert_eq!(Program::from_par(&to_par(&no_end)), Err(RpnError::MissingEnd));
        let mut unknown = bytes.clone();
        unknown[8] = 70;
        assert_eq!(Program::from_par(&to_par(&unknown)), Err(RpnError::UnknownOpCode { code: 70, entry: 2 }));
        unknown[8] = 0xff;
        assert!(Program::from_par(&to_par(&unknown)).is_err());
        let mut time = bytes.clone();
        time[8] = Op::Time.code();
        assert!(matches!(Program::from_par(&to_par(&time)), Err(RpnError::NotAllowedInCompute { .. })));
        let mut neg = bytes.clone();
        neg[6..8].copy_from_slice(&(-1i16).to_le_bytes());
        assert_eq!(Program::from_par(&to_par(&neg)), Err(RpnError::NegativeIndex { value: -1, entry: 1 }));
        // Every possible first entry decodes or fails, never panics.
        for code in 0..=255u8 {
            let mut b = [0u8; 80];
            b[0] = code;
            b[2] = 0xff;
            b[3] = 0xff;
            let _ = Program::from_par(&to_par(&b));
        }
    }

    #[test]
    fn dnan_is_rrdtools_unknown() {
        assert_eq!(DNAN.to_bits(), 0xfff8_0000_0000_0000);
    }

    #[test]
    fn generic_parse_keeps_series_operators_for_cdefs() {
        let p = Program::parse("a,TIME,+,PREV,MAX,0.5,*", &|n| (n == "a").then_some(0)).unwrap();
        assert_eq!(p.nodes()[1], Node::Op(Op::Time));
        assert_eq!(p.nodes()[5], Node::Number(0.5));
        assert!(matches!(p.to_par(), Err(RpnError::NotAllowedInCompute { op: "TIME" })));
    }

    fn storable_node() -> impl proptest::strategy::Strategy<Value = Node> {
        use proptest::prelude::*;
        let ops: Vec<Op> = Op::ALL.iter().copied().filter(|op| !op.needs_time_series()).collect();
        prop_oneof![
            any::<i16>().prop_map(|v| Node::Number(f64::from(v))),
            (0usize..=32767).prop_map(Node::Variable),
            (0usize..=32767).prop_map(Node::PrevOf),
            proptest::sample::select(ops).prop_map(Node::Op),
        ]
    }

    proptest::proptest! {
        /// Any storable program survives the trip through the par bytes.
        #[test]
        fn par_round_trip(nodes in proptest::collection::vec(storable_node(), 0..=COMPUTE_NODES_MAX)) {
            let p = Program::from_nodes(nodes);
            let par = p.to_par().unwrap();
            proptest::prop_assert_eq!(Program::from_par(&par).unwrap(), p);
        }

        /// Arbitrary bytes decode or fail, and what decodes evaluates or
        /// fails, without panicking.
        #[test]
        fn hostile_par_never_panics(par in proptest::array::uniform10(proptest::prelude::any::<u64>()),
                                    values in proptest::collection::vec(proptest::prelude::any::<f64>(), 0..4)) {
            if let Ok(p) = Program::from_par(&par) {
                let _ = p.eval_at(&values, 0.0);
                let _ = p.to_rrd_string(&["a", "b"]);
                proptest::prop_assert_eq!(Program::from_par(&p.to_par().unwrap()).unwrap(), p);
            }
        }

        /// Parsing arbitrary text never panics.
        #[test]
        fn hostile_text_never_panics(expr in "[-a-eA-Z0-9.,+*/%()\\]]{0,40}") {
            if let Ok(p) = Program::parse_compute(&expr, &NAMES) {
                let _ = p.eval_at(&[1.0, -2.0, DNAN, 0.0], 0.0);
                proptest::prop_assert_eq!(Program::from_par(&p.to_par().unwrap()).unwrap(), p);
            }
        }
    }

    #[test]
    fn eval_values_and_errors() {
        let p = Program::parse_compute("a,b,+,2,*", &NAMES[..2]).unwrap();
        assert_eq!(p.eval(&[3.0, 4.0]).unwrap(), 14.0);
        assert!(p.eval(&[3.0, DNAN]).unwrap().is_nan());
        assert_eq!(p.eval(&[3.0]), Err(RpnError::MissingValue { index: 1, available: 1 }));
        let prev = Program::parse_compute("PREV(a),a,+", &NAMES[..1]).unwrap();
        assert_eq!(prev.eval(&[1.0]), Err(RpnError::PrevOfInCompute));
        let now = Program::parse_compute("NOW", &[]).unwrap();
        assert_eq!(now.eval_at(&[], 1234.0).unwrap(), 1234.0);
        assert!(now.eval(&[]).unwrap() > 1.6e9);
        assert_eq!(
            Program::from_nodes(vec![Node::Op(Op::Time)]).eval(&[]),
            Err(RpnError::NotAllowedInCompute { op: "TIME" })
        );
        assert!(Program::from_nodes(vec![Node::Number(0.5)]).to_par().is_err());
        assert!(Program::from_nodes(vec![Node::Variable(40000)]).to_par().is_err());
    }
}
