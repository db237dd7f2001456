//! Every fuzz target (`rrd_fuzz::TARGETS`, the bodies `fuzz/` runs under
//! cargo-fuzz) on stable: each committed seed, then `RRD_FUZZ_CASES`
//! (default 20,000) inputs per target mutated from the seeds by a fixed-seed
//! generator (`RRD_FUZZ_SEED`, default 1). A target asserts its own
//! invariants (a header re-encodes to its bytes, a journal's intact records
//! come back, a restored dump is a valid file, ...), so a panic is a
//! finding: the input is written under the test's temporary directory, its
//! path and bytes printed, and the test fails. Turn it into a test of its
//! own (crates/rrd-engine/tests/fuzz_regressions.rs) before fixing it.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::time::Instant;

use rrd_fuzz::{Mutator, Target, TARGETS};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// The target's committed seeds (sorted by name, so runs repeat).
fn seeds(t: &Target) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for (dir, suffix) in t.seeds {
        let dir = workspace().join(dir);
        let mut names: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: the seeds of {} are missing: {e}", dir.display(), t.name))
            .map(|e| e.expect("a directory entry").path())
            .filter(|p| p.is_file() && p.to_string_lossy().ends_with(suffix))
            .collect();
        names.sort();
        assert!(!names.is_empty(), "{} holds no seed of {}", dir.display(), t.name);
        out.extend(names.iter().map(|p| std::fs::read(p).expect("a seed")));
    }
    out
}

/// Runs `t` on `input`; on a panic, saves the input and says where.
fn run_one(t: &Target, input: &[u8], what: &str) -> Result<(), String> {
    catch_unwind(AssertUnwindSafe(|| (t.run)(input))).map_err(|e| {
        let msg = e
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default();
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("fuzz-findings").join(t.name);
        let _ = std::fs::create_dir_all(&dir);
        let file = dir.join(what.replace([' ', '/'], "_"));
        let _ = std::fs::write(&file, input);
        format!(
            "{} panicked on {what} ({msg}); the input is in {} (replay: cargo +nightly fuzz run {} {}): {:?}",
            t.name,
            file.display(),
            t.name,
            file.display(),
            String::from_utf8_lossy(&input[..input.len().min(400)])
        )
    })
}

#[test]
fn every_target_holds_on_its_seeds_and_their_mutations() {
    let cases = env_u64("RRD_FUZZ_CASES", 20_000);
    let seed = env_u64("RRD_FUZZ_SEED", 1);
    // Findings are reported, not the panics' own noise.
    std::panic::set_hook(Box::new(|_| {}));
    let mut findings = Vec::new();
    for t in TARGETS {
        let started = Instant::now();
        let corpus = seeds(t);
        for (i, s) in corpus.iter().enumerate() {
            if let Err(f) = run_one(t, s, &format!("seed {i}")) {
                findings.push(f);
            }
        }
        let mut m = Mutator::new(seed ^ t.name.bytes().fold(0u64, |h, b| h.rotate_left(5) ^ u64::from(b)));
        let mut failed = 0;
        for k in 0..cases {
            let input = m.input(&corpus, t.words);
            if let Err(f) = run_one(t, &input, &format!("case {k} of seed {seed}")) {
                failed += 1;
                if failed <= 3 {
                    findings.push(f);
                }
            }
        }
        eprintln!(
            "{}: {} seeds and {cases} generated inputs in {:.2} s, {failed} failed",
            t.name,
            corpus.len(),
            started.elapsed().as_secs_f64()
        );
    }
    let _ = std::panic::take_hook();
    assert!(findings.is_empty(), "{} findings:\n{}", findings.len(), findings.join("\n"));
}

/// The net catches what a target asserts: a body that panics on some
/// input is reported with that input saved.
#[test]
fn a_panicking_target_is_reported_with_its_input() {
    fn picky(data: &[u8]) {
        assert!(!data.starts_with(b"boom"), "found boom");
    }
    let t = Target { name: "picky", run: picky, seeds: &[], words: &["boom"] };
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let ok = run_one(&t, b"fine", "a");
    let err = run_one(&t, b"boom!", "b b");
    std::panic::set_hook(hook);
    assert!(ok.is_ok());
    let err = err.expect_err("boom panics");
    assert!(err.contains("found boom") && err.contains("boom!"), "{err}");
    let saved = Path::new(env!("CARGO_TARGET_TMPDIR")).join("fuzz-findings/picky/b_b");
    assert_eq!(std::fs::read(saved).unwrap(), b"boom!");
    // And the generator does find it from a corpus without it.
    let mut m = Mutator::new(3);
    assert!((0..2000).any(|_| run_one(&t, &m.input(&[b"x".to_vec()], t.words), "c").is_err()));
}
