//! The engine's typed refusals through its public API: each test proves
//! that a refusal a caller may act on comes as its own variant (not only
//! as text), and that its `Display` is still the exact sentence rrdtool
//! 1.7.2 prints (the differential tests compare those bytes with rrdtool's
//! stderr; here the texts are pinned so a change of wording fails fast).

use std::path::{Path, PathBuf};

use rrd_engine::batch::{BatchUpdater, UpdateRequest};
use rrd_engine::create::{create, CreateOptions};
use rrd_engine::error::Unknown;
use rrd_engine::tune::{tune, TuneOption};
use rrd_engine::update::{update_file, UpdateError, UpdateOptions};
use rrd_engine::xport::{evaluate, XportRange};
use rrd_engine::Error;
use rrd_lang::attime::AtTimeError;

const T0: i64 = 1_700_000_000;

fn new_rrd(dir: &Path) -> PathBuf {
    let path = dir.join("e.rrd");
    let opts = CreateOptions { start: Some(T0), step_secs: Some(300), ..CreateOptions::default() };
    let defs = ["DS:a:GAUGE:600:U:U".to_string(), "RRA:AVERAGE:0.5:1:10".to_string()];
    create(&path, &opts, &defs, T0).unwrap();
    path
}

fn args(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

/// A value at or before the last update is `Update { TooEarly }`, after
/// the arguments before it were applied; the text names the file first.
#[test]
fn a_value_too_early_is_typed_and_worded_as_rrdtool() {
    let dir = tempfile::tempdir().unwrap();
    let path = new_rrd(dir.path());
    let report =
        update_file(&path, &args(&["1700000300:1", "1700000300:2"]), &UpdateOptions::default(), false)
            .unwrap();
    let e = report.error.expect("the second value is refused");
    assert!(matches!(&e, Error::Update { path: p, source: UpdateError::TooEarly(_) } if *p == path), "{e:?}");
    assert_eq!(
        e.to_string(),
        format!(
            "{}: illegal attempt to update using time 1700000300 when last update time is 1700000300 \
             (minimum one second step)",
            path.display()
        )
    );
}

/// The batch path (pipe mode, daemon flushes, librrd) reports the same
/// variant and text as `update_file`.
#[test]
fn the_batch_path_types_refusals_as_update_file_does() {
    let dir = tempfile::tempdir().unwrap();
    let path = new_rrd(dir.path());
    let mut updater = BatchUpdater::new(4);
    let too_early =
        UpdateRequest { path: path.clone(), args: args(&["1700000000:1"]), opts: UpdateOptions::default() };
    let e = updater.update(&too_early, false).unwrap().error.expect("refused");
    assert!(matches!(&e, Error::Update { source: UpdateError::TooEarly(_), .. }), "{e:?}");
    let malformed =
        UpdateRequest { path: path.clone(), args: args(&["1700000600:1:2"]), opts: UpdateOptions::default() };
    let e = updater.update(&malformed, false).unwrap().error.expect("refused");
    assert!(matches!(&e, Error::Update { source: UpdateError::Refused(_), .. }), "{e:?}");
    assert_eq!(e.to_string(), format!("{}: found extra data on update argument: 2", path.display()));
}

/// Names the file does not have: each command's own wording, one variant.
#[test]
fn unknown_names_are_typed_in_each_commands_words() {
    let dir = tempfile::tempdir().unwrap();
    let path = new_rrd(dir.path());

    let opts = UpdateOptions { template: Some("b".into()), skip_past_updates: false };
    let Err(e) = update_file(&path, &args(&["1700000300:1"]), &opts, false) else { panic!("accepted") };
    assert!(matches!(&e, Error::Unknown(Unknown::TemplateDs(n)) if n == "b"), "{e:?}");
    assert_eq!(e.to_string(), "unknown DS name 'b'");

    let e = tune(&path, &[TuneOption::Heartbeat("b:60".into())], &[]).unwrap_err();
    assert!(matches!(&e, Error::Unknown(Unknown::TuneDs(n)) if n == "b"), "{e:?}");
    assert_eq!(e.to_string(), "unknown data source name 'b'");

    let range = XportRange { start: T0 - 3000, end: T0, step_secs: 0, max_rows: 400, now: T0 };
    let def = format!("DEF:x={}:b:AVERAGE", path.display());
    let e = evaluate(&range, &[def, "XPORT:x".into()]).unwrap_err();
    assert!(matches!(&e, Error::Unknown(Unknown::DefDs { ds, .. }) if ds == "b"), "{e:?}");
    assert_eq!(e.to_string(), format!("No DS called 'b' in '{}'", path.display()));
}

/// A DEF's own times: text that does not parse names which one; a pair
/// rrdtool refuses (each relative to the other) keeps rrd-lang's typed
/// reason.
#[test]
fn bad_def_times_are_typed() {
    let dir = tempfile::tempdir().unwrap();
    let path = new_rrd(dir.path());
    let range = XportRange { start: T0 - 3000, end: T0, step_secs: 0, max_rows: 400, now: T0 };

    let def = format!("DEF:x={}:a:AVERAGE:start=yesterday-xyz", path.display());
    let e = evaluate(&range, &[def, "XPORT:x".into()]).unwrap_err();
    assert!(matches!(&e, Error::Time { which: Some("start"), .. }), "{e:?}");
    assert!(e.to_string().starts_with("start time: "), "{e}");

    let def = format!("DEF:x={}:a:AVERAGE:start=end-1h:end=start+1h", path.display());
    let e = evaluate(&range, &[def, "XPORT:x".into()]).unwrap_err();
    assert!(matches!(&e, Error::Time { which: None, source: AtTimeError::MutualReference }), "{e:?}");
    assert_eq!(e.to_string(), "the start and end times cannot be specified relative to each other");
}

/// `--no-overwrite` on a taken name is `Exists`, worded as rrdtool's
/// "creating 'x': File exists"; the file is left alone.
#[test]
fn no_overwrite_of_a_taken_name_is_typed() {
    let dir = tempfile::tempdir().unwrap();
    let path = new_rrd(dir.path());
    let before = std::fs::read(&path).unwrap();
    let opts = CreateOptions { no_overwrite: true, ..CreateOptions::default() };
    let e = create(&path, &opts, &args(&["DS:b:GAUGE:600:U:U", "RRA:AVERAGE:0.5:1:10"]), T0).unwrap_err();
    assert!(matches!(&e, Error::Exists { path: p } if *p == path), "{e:?}");
    assert_eq!(e.to_string(), format!("creating '{}': File exists", path.display()));
    assert_eq!(std::fs::read(&path).unwrap(), before);
}

/// Updating a directory through the batch path is `NotRegularFile`.
#[test]
fn a_directory_is_not_updated() {
    let dir = tempfile::tempdir().unwrap();
    let sub = dir.path().join("d.rrd");
    std::fs::create_dir(&sub).unwrap();
    let e = rrd_engine::batch::KeptHeader::read(&sub).unwrap_err();
    assert!(matches!(&e, Error::NotRegularFile { path } if *path == sub), "{e:?}");
    assert_eq!(e.to_string(), format!("'{}' is not a regular file", sub.display()));
}
