//! The `rrdscale` binary: glue between the command line and the engine.
//!
//! Subcommands mirror `rrdtool`'s (same names, options, output and exit
//! status) so that scripts switch by changing the program name. Each command
//! lives in its own module under `cmd/` and writes to the stdout it is given,
//! so that pipe mode (`rrdscale -`) can run them in-process.

#![forbid(unsafe_code)]

use rrdscale::cmd;
use std::io::{self, Write};
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let stdout = io::stdout();
    let mut out = io::BufWriter::new(stdout.lock());
    let result = cmd::dispatch(&args, &mut out);
    let flushed = out.flush();
    match (result, flushed) {
        (Ok(()), Ok(())) => ExitCode::SUCCESS,
        // A closed pipe (`rrdscale dump f | head`) is not an error.
        (Ok(()), Err(e)) if e.kind() == io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        (Ok(()), Err(e)) => {
            eprintln!("ERROR: writing output: {e}");
            ExitCode::FAILURE
        }
        (Err(e), _) => {
            eprintln!("ERROR: {}", cmd::error_message(&e));
            ExitCode::FAILURE
        }
    }
}
