//! Differential tests against the real rrdtool 1.7.2: the stored bytes and
//! the `info` text of COMPUTE data sources rrdtool creates, the expressions
//! it refuses, and the values it computes on update, compared bit for bit
//! with this module's.
//!
//! Every test runs `rrdtool` (TZ=UTC) and fails loudly if it is missing.

use std::path::Path;
use std::process::Command;

use super::{Node, Program, RpnError};

/// A file rrdtool wrote: its decoded header, and the values of its first
/// archive in file order.
struct RrdFile {
    header: rrd_format::Header,
    rra0: Vec<f64>,
}

impl RrdFile {
    fn read(path: &Path) -> RrdFile {
        let bytes = std::fs::read(path).unwrap();
        let header = rrd_format::Header::decode(&bytes, bytes.len() as u64).unwrap();
        let layout = header.layout();
        let start = layout.row_off(0, 0) as usize;
        let end = start + (layout.row_counts[0] * layout.row_len()) as usize;
        RrdFile { header, rra0: rrd_format::decode_values(&bytes[start..end]) }
    }
}

const START: i64 = 1_000_000_000;
/// The inputs every COMPUTE expression below may read.
const INPUTS: [&str; 5] = ["a", "b", "c", "d", "e"];

fn rrdtool(args: &[&str]) -> std::process::Output {
    Command::new("rrdtool")
        .args(args)
        .env("TZ", "UTC")
        .output()
        .expect("rrdtool must be installed (/usr/bin/rrdtool, version 1.7.2) for the differential tests")
}

fn ok(args: &[&str]) -> String {
    let out = rrdtool(args);
    assert!(out.status.success(), "rrdtool {args:?} failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// `rrdtool create` with the five GAUGE inputs, then the given COMPUTE data
/// sources, step 1, one AVERAGE archive of `rows` single-PDP rows.
fn create_args(path: &Path, computes: &[(String, &str)], rows: usize) -> Vec<String> {
    let mut args: Vec<String> = vec![
        "create".into(),
        path.to_str().unwrap().into(),
        "-s".into(),
        "1".into(),
        "-b".into(),
        START.to_string(),
    ];
    args.extend(INPUTS.iter().map(|n| format!("DS:{n}:GAUGE:10:U:U")));
    args.extend(computes.iter().map(|(name, expr)| format!("DS:{name}:COMPUTE:{expr}")));
    args.push(format!("RRA:AVERAGE:0.5:1:{rows}"));
    args
}

fn run_owned(args: &[String]) -> std::process::Output {
    rrdtool(&args.iter().map(String::as_str).collect::<Vec<_>>())
}

/// Expressions rrdtool accepts, covering every operator COMPUTE allows and
/// the parser's corners.
const ACCEPTED: &[&str] = &[
    "a,b,+,2,*",
    "a,b,-,c,/,d,%",
    "a,b,ADDNAN,2,POW",
    "a,SIN,b,COS,c,LOG,d,EXP,+,+,+",
    "a,SQRT,b,ATAN,c,d,ATAN2,+,+",
    "a,FLOOR,b,CEIL,c,DEG2RAD,d,RAD2DEG,+,+,+,ABS",
    "a,b,LT,a,b,LE,a,b,GT,a,b,GE,+,+,+",
    "a,b,EQ,a,b,NE,+",
    "a,UN,b,ISINF,+",
    "a,b,c,IF",
    "a,b,MIN,c,MAX,d,MINNAN,e,MAXNAN",
    "a,0,100,LIMIT",
    "a,b,c,d,e,5,SORT,POP,POP,POP,POP",
    "a,b,c,3,REV,POP,POP",
    "a,b,c,d,e,5,AVG",
    "a,b,c,d,e,5,MEDIAN",
    "a,b,c,3,SMIN,d,e,2,SMAX,-",
    "a,b,c,d,e,5,STDEV",
    "a,b,c,d,e,4,PERCENT",
    "UNKN,INF,NEGINF,3,AVG",
    "a,DUP,*,b,EXC,-,c,POP",
    "a,b,DEPTH,+,+",
    "a,b,c,2,COPY,+,+,+,+",
    "a,b,c,d,3,INDEX,+,+,+,+",
    "a,b,c,3,1,ROLL,-,-",
    "NOW,a,+",
    "-32768,32767,+",
    "1e3,a,+,1.5e2,-,+5,*,5.,/,-0,+,1e,-",
    "a,",
    "e,d,+",
    "a,a,+,a,+,a,+,a,+,a,+,a,+,a,+,a,+,a,+",
    "a,b,PREV(c),+,+",
    "a,a,a,+",
    "a,+",
];

/// The stored bytes and the `info` text of every accepted expression are
/// rrdtool's, and the bytes read back give the same program.
#[test]
fn par_bytes_and_info_text_match_rrdtool() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("accepted.rrd");
    let computes: Vec<(String, &str)> =
        ACCEPTED.iter().enumerate().map(|(i, e)| (format!("x{i}"), *e)).collect();
    let out = run_owned(&create_args(&path, &computes, 5));
    assert!(out.status.success(), "rrdtool create: {}", String::from_utf8_lossy(&out.stderr));
    let rrd = RrdFile::read(&path);
    let info = ok(&["info", path.to_str().unwrap()]);
    let mut names: Vec<&str> = INPUTS.to_vec();
    names.extend(computes.iter().map(|(n, _)| n.as_str()));
    for (i, (name, expr)) in computes.iter().enumerate() {
        let ds_index = INPUTS.len() + i;
        let program = Program::parse_compute(expr, &names[..ds_index])
            .unwrap_or_else(|e| panic!("{expr}: rrdtool accepts it, we say: {e}"));
        let rrdtool_par = rrd.header.ds()[ds_index].par;
        assert_eq!(program.to_par().unwrap(), rrdtool_par, "stored bytes of {expr}");
        assert_eq!(Program::from_par(&rrdtool_par).unwrap(), program, "reading back {expr}");
        let text = program.to_rrd_string(&names);
        let line = format!("ds[{name}].cdef = \"{text}\"");
        assert!(info.lines().any(|l| l == line), "info of {expr}: want line {line:?} in\n{info}");
    }
}

/// `PREV(name)` first: rrdtool stores it (with any character for the
/// closing parenthesis) but its `info` and `dump` crash on it, so only the
/// bytes can be compared.
#[test]
fn leading_prev_of_bytes_match_rrdtool() {
    let dir = tempfile::tempdir().unwrap();
    for expr in ["PREV(a],b,+", "PREV(b)", "PREV(e),a,+"] {
        let path = dir.path().join("prev.rrd");
        let _ = std::fs::remove_file(&path);
        let out = run_owned(&create_args(&path, &[("x".into(), expr)], 5));
        assert!(out.status.success(), "{expr}: {}", String::from_utf8_lossy(&out.stderr));
        let rrd = RrdFile::read(&path);
        let program = Program::parse_compute(expr, &INPUTS).unwrap();
        assert!(matches!(program.nodes()[0], Node::PrevOf(_)));
        assert_eq!(program.to_par().unwrap(), rrd.header.ds()[5].par, "{expr}");
    }
}

/// Expressions rrdtool refuses, and the message it prints: we refuse the
/// same ones, and `rrdtool_message` is its message.
#[test]
fn rejections_match_rrdtool() {
    let rejected = [
        "a,x0,+",
        "a,f,+",
        "a,2",
        "5",
        ",a",
        "a,,b,+",
        "a, b,+",
        "a,b,+,,",
        "a,b,add",
        "a,0x10,+",
        "a,1E2,+",
        "a,nan,+",
        "a,1-2,+",
        "a,1e2000,+",
        "a,0.5,+",
        "a,-0.5,+",
        "a,.5,+",
        "a,32768,+",
        "a,-32769,+",
        "a,100000,+",
        "a,1e400,+",
        "a,0e1024,+",
        "a,12.00000000000000000000000000001,+",
        "a,TIME,+",
        "LTIME",
        "STEPWIDTH",
        "PREV",
        "NEWDAY",
        "NEWWEEK",
        "NEWMONTH",
        "NEWYEAR",
        "COUNT",
        "a,1,TREND",
        "a,1,TRENDNAN",
        "1,1,1,a,PREDICT",
        "1,1,1,a,PREDICTSIGMA",
        "1,1,1,1,a,PREDICTPERC",
        "a,a,+,a,+,a,+,a,+,a,+,a,+,a,+,a,+,a,+,a,+",
        "a,a,+,a,+,a,+,a,+,a,+,a,+,a,+,a,+,a,+,a,+,0.5,+",
        "a,0.5,+,TIME",
        "PREV(zz)",
        "a,PREV(a)x",
        "a,ROUND",
    ];
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rejected.rrd");
    for expr in rejected {
        let ours = Program::parse_compute(expr, &INPUTS);
        let out = run_owned(&create_args(&path, &[("x".into(), expr)], 5));
        let theirs = String::from_utf8_lossy(&out.stderr).trim().to_string();
        if out.status.success() {
            panic!("{expr}: rrdtool accepts it (we say {ours:?})");
        }
        let err = ours.err().unwrap_or_else(|| panic!("{expr}: rrdtool says {theirs}, we accept it"));
        assert_eq!(theirs, format!("ERROR: {}", err.rrdtool_message()), "{expr}: we say {err}");
    }
}

/// Rows of inputs a..e; `None` is unknown (`U`).
type Row = [Option<f64>; 5];

fn standard_rows() -> Vec<Row> {
    let u = None;
    let s = Some;
    vec![
        [s(1.0), s(2.0), s(3.0), s(4.0), s(5.0)],
        [s(0.1), s(0.2), s(0.7), s(-3.3), s(50.0)],
        [u, s(2.0), s(3.0), u, s(0.0)],
        [s(-1.5), u, s(2.5), s(1e300), s(100.0)],
        [s(0.0), s(0.0), s(0.0), s(0.0), s(0.0)],
        [s(1e300), s(-1e300), s(1e-300), s(7.0), s(13.0)],
        [u, u, u, u, u],
        [s(3.0), s(3.0), s(-3.0), s(3.0), s(38.0)],
        [s(2.5), s(-2.5), s(1e10), s(-1e-10), s(62.0)],
        [s(7.0), s(1.0), s(4.0), s(4.0), s(99.0)],
        [s(-7.25), s(0.5), s(-0.5), s(12345.678), s(1.0)],
        [s(100.0), s(-100.0), u, s(50.0), s(25.0)],
    ]
}

/// Updates a fresh file holding `expr` with `rows` (one step each) and
/// returns, per row, the stored inputs and the stored COMPUTE value.
fn rrdtool_eval(dir: &Path, expr: &str, rows: &[Row]) -> Result<Vec<([f64; 5], f64)>, String> {
    let path = dir.join("eval.rrd");
    let _ = std::fs::remove_file(&path);
    let out = run_owned(&create_args(&path, &[("x".into(), expr)], rows.len() + 2));
    assert!(out.status.success(), "create {expr}: {}", String::from_utf8_lossy(&out.stderr));
    let mut args = vec!["update".to_string(), path.to_str().unwrap().to_string()];
    for (k, row) in rows.iter().enumerate() {
        let vals: Vec<String> = row.iter().map(|v| v.map_or("U".to_string(), |v| format!("{v:e}"))).collect();
        args.push(format!("{}:{}", START + 1 + k as i64, vals.join(":")));
    }
    let out = run_owned(&args);
    if !out.status.success() {
        let msg = String::from_utf8_lossy(&out.stderr).trim().to_string();
        let prefix = format!("ERROR: {}: ", path.display());
        return Err(msg.strip_prefix(&prefix).map(str::to_string).unwrap_or(msg));
    }
    let rrd = RrdFile::read(&path);
    let data = &rrd.rra0;
    let row_count = rrd.header.rra()[0].row_count as usize;
    let cur = rrd.header.rra_ptr()[0] as usize;
    let n = rows.len();
    Ok((0..n)
        .map(|k| {
            let r = (cur + row_count - (n - 1 - k)) % row_count;
            let v = &data[r * 6..r * 6 + 6];
            ([v[0], v[1], v[2], v[3], v[4]], v[5])
        })
        .collect())
}

/// Compares our evaluation with rrdtool's stored values, bit for bit
/// (NaN sign included: rrdtool stores the negative NaN for unknown).
fn assert_same_values(dir: &Path, expr: &str, rows: &[Row]) {
    let program = Program::parse_compute(expr, &INPUTS).unwrap_or_else(|e| panic!("{expr}: {e}"));
    let stored = rrdtool_eval(dir, expr, rows).unwrap_or_else(|e| panic!("rrdtool update with {expr}: {e}"));
    for ((inputs, theirs), row) in stored.iter().zip(rows) {
        for (got, sent) in inputs.iter().zip(row) {
            match sent {
                // rrdtool reads decimals with its own strtod, so the stored
                // input may differ in the last bits; we evaluate on what it stored.
                Some(v) => {
                    assert!((got - v).abs() <= v.abs() * 1e-12, "{expr}: rrdtool stored input {got} for {v}")
                }
                None => assert!(got.is_nan(), "{expr}: rrdtool stored {got} for U"),
            }
        }
        let ours = program.eval(inputs).unwrap_or_else(|e| panic!("{expr} on {inputs:?}: {e}"));
        assert!(
            ours.to_bits() == theirs.to_bits(),
            "{expr} on {inputs:?}: rrdtool {theirs} ({:#x}), we {ours} ({:#x})",
            theirs.to_bits(),
            ours.to_bits()
        );
    }
}

/// Every operator COMPUTE allows, on inputs with unknowns, zeros, signs,
/// fractions and near-overflow values, gives rrdtool's bits.
#[test]
fn evaluation_matches_rrdtool() {
    let dir = tempfile::tempdir().unwrap();
    let rows = standard_rows();
    let exprs = [
        "a,b,+",
        "a,b,-",
        "a,b,*",
        "a,b,/",
        "a,b,%",
        "a,b,ADDNAN",
        "a,b,POW",
        "a,b,ATAN2",
        "a,SIN",
        "a,COS",
        "a,LOG",
        "a,EXP",
        "a,SQRT",
        "a,ATAN",
        "a,FLOOR",
        "a,CEIL",
        "a,DEG2RAD",
        "a,RAD2DEG",
        "b,ABS",
        "a,b,LT",
        "a,b,LE",
        "a,b,GT",
        "a,b,GE",
        "a,b,EQ",
        "a,b,NE",
        "a,UN",
        "d,10,*,ISINF",
        "a,b,c,IF",
        "a,b,MIN",
        "a,b,MAX",
        "a,b,MINNAN",
        "a,b,MAXNAN",
        "a,b,c,LIMIT",
        "a,0,INF,LIMIT",
        "d,10,*,NEGINF,INF,LIMIT",
        "a,UNKN,ADDNAN,INF,MIN,NEGINF,MAX",
        "a,b,c,d,e,5,SORT,POP,POP,POP,POP",
        "a,b,c,d,e,5,SORT,POP,POP,EXC,POP,EXC,POP",
        "a,INF,b,NEGINF,c,5,SORT,POP,EXC,POP,EXC,POP,EXC,POP",
        "a,INF,b,NEGINF,c,5,SORT,POP,POP,EXC,POP,EXC,POP",
        "a,b,c,d,4,REV,POP,POP,EXC,POP",
        "a,b,c,d,e,5,AVG",
        "a,b,c,d,e,5,MEDIAN",
        "a,b,c,d,4,MEDIAN",
        "a,INF,b,NEGINF,c,5,MEDIAN",
        "a,b,c,d,e,5,SMIN",
        "a,b,c,d,e,5,SMAX",
        "a,b,c,d,e,5,STDEV",
        "a,b,c,d,4,STDEV",
        "a,b,c,d,50,4,PERCENT",
        "a,INF,NEGINF,b,75,4,PERCENT",
        "e,a,b,c,d,25,4,PERCENT,+",
        "a,DUP,*",
        "a,b,POP",
        "a,b,EXC,-",
        "a,b,DEPTH,+,+",
        "a,b,c,d,2,COPY,-,-,-,-,-",
        "a,b,c,d,3,INDEX,-,-,-,-",
        "a,b,c,d,3,1,ROLL,-,-,-",
        "a,b,c,d,3,-1,ROLL,-,-,-",
        "a,b,c,d,3,2,ROLL,-,-,-",
        "a,b,c,3,3,ROLL,-,-",
        "a,b,0,EQ,1,b,IF,/",
        "a,b,+,2,*",
    ];
    for expr in exprs {
        assert_same_values(dir.path(), expr, &rows);
    }
}

/// Counts and indices taken from an input (so one expression covers many
/// cases): INDEX and ROLL with every in-range value, PERCENT at each rank,
/// fractional counts truncated like C's (int).
#[test]
fn evaluation_with_counts_from_inputs_matches_rrdtool() {
    let dir = tempfile::tempdir().unwrap();
    let with_e = |values: &[f64]| -> Vec<Row> {
        values.iter().map(|&e| [Some(1.5), Some(-20.0), Some(300.25), Some(-4000.0), Some(e)]).collect()
    };
    assert_same_values(dir.path(), "a,b,c,d,e,INDEX,-,-,-,-", &with_e(&[0.0, 1.0, 2.0, 3.0, 4.0, 3.9, -1.0]));
    assert_same_values(
        dir.path(),
        "a,b,c,d,3,e,ROLL,-,-,-",
        &with_e(&[-7.0, -2.0, -1.0, 0.0, 1.0, 2.0, 5.0, 1e12]),
    );
    assert_same_values(
        dir.path(),
        "a,b,c,d,e,3,PERCENT,-",
        &with_e(&[0.0, 16.0, 17.0, 49.9, 50.0, 83.0, 84.0, 100.0]),
    );
    assert_same_values(dir.path(), "a,b,c,d,e,SORT,POP,POP,-", &with_e(&[2.0, 2.9, 0.0]));
    assert_same_values(dir.path(), "a,b,c,d,e,AVG,-", &with_e(&[3.0, 3.5, 3.99]));
    assert_same_values(dir.path(), "a,b,c,d,e,AVG,-,-", &with_e(&[2.0, 2.5]));
    assert_same_values(dir.path(), "a,b,c,d,e,REV,-,-,-", &with_e(&[0.0, 2.0, 4.0, -1.0]));
}

/// Quirks that read stack slots rrdtool never wrote, checked on a fresh
/// process each (where that memory is still zero) and the update errors,
/// with rrdtool's messages.
#[test]
fn single_step_quirks_and_errors_match_rrdtool() {
    let dir = tempfile::tempdir().unwrap();
    let row = |e: f64| -> Vec<Row> { vec![[Some(1.0), Some(2.0), Some(3.0), Some(4.0), Some(e)]] };
    // 4,1,ROLL copies a never-written slot; 0 percent reads below the stack.
    assert_same_values(dir.path(), "a,b,c,d,4,1,ROLL,POP,EXC,POP,EXC,POP", &row(0.0));
    assert_same_values(dir.path(), "a,b,c,d,e,4,PERCENT", &row(0.0));
    assert_same_values(dir.path(), "a,b,c,POP,POP,e,INDEX,+", &row(-2.0));

    let errors: [(&str, f64); 12] = [
        ("a,+", 0.0),
        ("a,a", 0.0),
        ("a,POP", 0.0),
        ("a,b,c,IF,IF", 0.0),
        ("a,b,c,d,e,4,PERCENT", 101.0),
        ("a,b,c,d,e,4,PERCENT", -1.0),
        ("a,b,c,d,e,SORT", 6.0),
        ("a,b,e,ROLL", -1.0),
        ("a,b,e,AVG", 0.0),
        ("a,e,COPY", 2.0),
        ("PREV(a),a,+", 0.0),
        ("a,b,c,d,e,MEDIAN", 0.0),
    ];
    for (expr, e) in errors {
        let program = Program::parse_compute(expr, &INPUTS).unwrap();
        let theirs = rrdtool_eval(dir.path(), expr, &row(e)).err();
        let theirs = theirs.unwrap_or_else(|| panic!("{expr} with e={e}: rrdtool computed a value"));
        let ours = program.eval(&[1.0, 2.0, 3.0, 4.0, e]).err();
        let ours =
            ours.unwrap_or_else(|| panic!("{expr} with e={e}: rrdtool says {theirs}, we compute a value"));
        assert_eq!(theirs, ours.rrdtool_message(), "{expr} with e={e}: we say {ours}");
    }
    // Where rrdtool crashes we refuse.
    for expr in ["a,b,c,d,e,SORT", "a,b,c,d,e,SMIN", "a,e,COPY"] {
        let program = Program::parse_compute(expr, &INPUTS).unwrap();
        assert!(matches!(program.eval(&[1.0, 2.0, 3.0, 4.0, -1.0]), Err(RpnError::NegativeCount { .. })));
    }
}

/// NOW is the wall clock at update time.
#[test]
fn now_matches_rrdtool_clock() {
    let dir = tempfile::tempdir().unwrap();
    let before = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() as f64;
    let stored = rrdtool_eval(dir.path(), "NOW,a,+", &[[Some(0.5), None, None, None, None]]).unwrap();
    let after = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() as f64;
    let program = Program::parse_compute("NOW,a,+", &INPUTS).unwrap();
    let theirs = stored[0].1;
    assert!(
        (program.eval_at(&stored[0].0, before).unwrap()..=program.eval_at(&stored[0].0, after).unwrap())
            .contains(&theirs),
        "rrdtool NOW gave {theirs}, outside [{before}, {after}] + 0.5"
    );
}
