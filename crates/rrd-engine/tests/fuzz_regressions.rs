//! What the fuzz targets in `fuzz/` found, one test per finding, so that a
//! finding stays decided after the fuzzer's corpus is gone. Each test says
//! which target found it and what was decided. (How to run the fuzzers:
//! `scripts/fuzz.sh`.)

use rrd_lang::rpn::{Node, Program};

/// fuzz/rpn: `525,` is a COMPUTE program (a number is a number only when a
/// comma follows it), and it prints as `525`, which does not parse: a
/// final number without its comma is read as a data source name. rrdtool
/// 1.7.2 does the same (`create ... DS:c:COMPUTE:525,` succeeds, `info`
/// shows `525`, and its own dump of that file fails to restore with
/// "failed to parse computed data source"), so we keep it: byte
/// compatibility wins. The fuzz target's round trip restores the comma.
#[test]
fn a_compute_program_ending_in_a_number_prints_without_its_comma_like_rrdtool() {
    let p = Program::parse_compute("525,", &["a"]).expect("`525,` is a program");
    assert_eq!(p.nodes(), &[Node::Number(525.0)]);
    assert_eq!(p.to_rrd_string(&["a"]), "525");
    assert!(Program::parse_compute("525", &["a"]).is_err(), "a bare final number is a name");
    let again = Program::parse_compute("525,", &["a"]).unwrap();
    assert_eq!(again.nodes(), p.nodes());
    // It still stores and reads back.
    assert_eq!(Program::from_par(&p.to_par().unwrap()).unwrap().nodes(), p.nodes());
}
