//! The open-file cache under a descriptor limit lower than its bound: an
//! open that runs out of descriptors gives kept files back and succeeds, as
//! rrdtool's, which keeps none, would. Its own test binary, because it
//! lowers the process's limit.

use std::fs::File;

use rrd_engine::batch::{is_out_of_descriptors, OpenFiles};
use rustix::process::{getrlimit, setrlimit, Resource};

/// Descriptors open in this process now.
fn in_use() -> usize {
    std::fs::read_dir("/proc/self/fd").unwrap().count() - 1
}

#[test]
fn kept_files_are_given_back_when_descriptors_run_out() {
    let dir = tempfile::tempdir().unwrap();
    let paths: Vec<_> = (0..64).map(|i| dir.path().join(format!("f{i}.rrd"))).collect();
    for p in &paths {
        File::create(p).unwrap();
    }
    let limit = in_use() as u64 + 24;
    let mut lim = getrlimit(Resource::Nofile);
    lim.current = Some(limit);
    setrlimit(Resource::Nofile, lim).unwrap();

    let mut files = OpenFiles::new(1000);
    for (i, p) in paths.iter().enumerate() {
        files.get(p).unwrap_or_else(|e| panic!("file {i} of 64 under a limit of {limit}: {e}"));
        assert!(files.contains(p), "file {i} is kept");
    }
    assert!(files.len() < 24, "{} kept under a limit of {limit}", files.len());

    // Someone else takes every free descriptor (another thread's opens):
    // the next open gives back what is kept, and succeeds.
    let fresh = dir.path().join("fresh.rrd");
    File::create(&fresh).unwrap();
    let kept = files.len();
    let mut taken = take_every_descriptor();
    files.get(&fresh).unwrap_or_else(|e| panic!("with {kept} kept to give back: {e}"));
    assert!(files.contains(&fresh));
    assert!(files.len() <= kept / 2 + 1, "{} kept, {kept} before", files.len());

    // With nothing kept, running out is the open's error, naming the file.
    while !files.is_empty() {
        files.evict_one();
    }
    taken.extend(take_every_descriptor());
    let e = files.get(&paths[1]).unwrap_err().to_string();
    assert!(e.contains("f1.rrd") && e.contains("Too many open files"), "{e}");
}

/// Opens `/dev/null` until the process is out of descriptors.
fn take_every_descriptor() -> Vec<File> {
    let mut taken = Vec::new();
    loop {
        match File::open("/dev/null") {
            Ok(f) => taken.push(f),
            Err(e) => {
                assert!(is_out_of_descriptors(&e), "{e}");
                return taken;
            }
        }
    }
}
