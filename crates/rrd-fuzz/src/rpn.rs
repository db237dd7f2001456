//! Fuzzes RPN expressions (COMPUTE data sources, graph CDEFs) and the
//! stored form of a COMPUTE program. The first byte picks the mode.
//! Text: parse with variables `a`, `b`, `c`; evaluate what parses; a
//! COMPUTE program must store (`to_par`), read back to the same nodes
//! (`from_par`) and print (`to_rrd_string`) as text that parses to the
//! same program (given back the trailing comma a final number needs). Stored bytes: `from_par` on any 80 bytes; what it accepts
//! must store again and read back unchanged. Nothing may panic.

use rrd_lang::rpn::{Node, Program};

const NAMES: [&str; 3] = ["a", "b", "c"];

fn stores_and_reads_back(p: &Program) {
    let par = p.to_par().expect("a COMPUTE program stores");
    let back = Program::from_par(&par).expect("a stored program reads back");
    assert_eq!(back.nodes(), p.nodes());
}

/// The target: one input.
pub fn run(data: &[u8]) {
    let Some((&mode, rest)) = data.split_first() else { return };
    if mode % 2 == 0 {
        let expr = String::from_utf8_lossy(rest);
        let lookup = |name: &str| NAMES.iter().position(|n| *n == name);
        if let Ok(p) = Program::parse(&expr, &lookup) {
            let _ = p.eval_at(&[1.5, f64::NAN, -3.0], 1e9);
            let _ = p.to_par();
            let _ = p.to_rrd_string(&NAMES);
        }
        if let Ok(p) = Program::parse_compute(&expr, &NAMES) {
            let _ = p.eval_at(&[2.0, 0.0, f64::INFINITY], 1e9);
            stores_and_reads_back(&p);
            if !p.nodes().iter().any(|n| matches!(n, Node::PrevOf(_))) {
                // A number is a number only when a comma follows it, and
                // the printed form has no trailing comma: rrdtool 1.7.2
                // too prints `525,` as `525`, which it cannot read back
                // (its dump of such a file does not restore). So the
                // comma goes back before the text is read again.
                let mut text = p.to_rrd_string(&NAMES);
                if matches!(p.nodes().last(), Some(Node::Number(_))) {
                    text.push(',');
                }
                let again = Program::parse_compute(&text, &NAMES).expect("printed program parses");
                assert_eq!(again.nodes(), p.nodes(), "{text}");
            }
        }
    } else {
        let mut bytes = [0u8; 80];
        let n = rest.len().min(80);
        bytes[..n].copy_from_slice(&rest[..n]);
        let mut par = [0u64; 10];
        for (slot, chunk) in par.iter_mut().zip(bytes.chunks_exact(8)) {
            *slot = u64::from_le_bytes(chunk.try_into().unwrap());
        }
        if let Ok(p) = Program::from_par(&par) {
            let _ = p.eval_at(&[1.0, 2.0, 3.0], 1e9);
            let _ = p.to_rrd_string(&NAMES);
            stores_and_reads_back(&p);
        }
    }
}
