//! The `rrdscale` binary: glue between the command line and the library
//! crates. rrdtool's commands come from `rrd-cli`, rrdscale's own (daemon,
//! web, bench, ...) from `cmd/`.
//!
//! Like a busybox, the program is what it is called: installed under
//! Debian's program names (a symlink is enough) it behaves as `rrdtool`,
//! `rrdupdate`, `rrdcreate`, `rrdinfo` or `rrdcached`, with their
//! arguments, usage texts and exit statuses (see [`Personality`]).

#![forbid(unsafe_code)]

mod cmd;
mod docs;

use std::io::{self, Write};
use std::process::ExitCode;

use rrd_cli::cmd as cli;
use rrd_cli::programs::SmallProgram;

/// Which program this process is, from the file name it was started as.
#[derive(Debug, PartialEq)]
enum Personality {
    /// `rrdscale`, or any name not below: every command, rrdscale's usage.
    Rrdscale,
    /// `rrdtool`: every command, rrdtool's usage and help texts.
    Rrdtool,
    /// `rrdupdate`, `rrdcreate`, `rrdinfo`.
    Small(SmallProgram),
    /// `rrdcached`: the daemon, with rrdcached's arguments.
    Rrdcached,
}

impl Personality {
    fn of(argv0: &str) -> Personality {
        let name = argv0.rsplit('/').next().unwrap_or(argv0);
        match name {
            "rrdtool" => Personality::Rrdtool,
            "rrdcached" => Personality::Rrdcached,
            other => SmallProgram::named(other).map_or(Personality::Rrdscale, Personality::Small),
        }
    }
}

fn main() -> ExitCode {
    let mut argv = std::env::args();
    let argv0 = argv.next().unwrap_or_default();
    let args: Vec<String> = argv.collect();
    let personality = Personality::of(&argv0);
    let name = match personality {
        Personality::Rrdtool => "rrdtool",
        _ => "rrdscale",
    };
    cli::set_program(cli::Program { name, own: cmd::OWN_COMMANDS });
    let stdout = io::stdout();
    let mut out = io::BufWriter::new(stdout.lock());
    let result = match personality {
        Personality::Small(program) => {
            return finish_small(program.run(&argv0, &args, &mut out), out.flush())
        }
        Personality::Rrdcached => cmd::daemon::run(&args, &mut out),
        // Not one of the commands: the manual pages and completions.
        Personality::Rrdscale if args.first().map(String::as_str) == Some("generate-docs") => {
            docs::run(&args[1..], &mut out)
        }
        Personality::Rrdscale | Personality::Rrdtool => cli::dispatch(&args, &mut out),
    };
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
            eprintln!("ERROR: {}", cli::error_message(&e));
            ExitCode::FAILURE
        }
    }
}

/// The small programs write their errors on standard output themselves.
fn finish_small(status: io::Result<u8>, flushed: io::Result<()>) -> ExitCode {
    match status.and_then(|s| flushed.map(|()| s)) {
        Ok(s) => ExitCode::from(s),
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("ERROR: writing output: {e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_program_is_what_it_is_called() {
        assert_eq!(Personality::of("/usr/bin/rrdtool"), Personality::Rrdtool);
        assert_eq!(Personality::of("rrdcached"), Personality::Rrdcached);
        assert_eq!(Personality::of("./rrdupdate"), Personality::Small(SmallProgram::Update));
        assert_eq!(Personality::of("/x/rrdcreate"), Personality::Small(SmallProgram::Create));
        assert_eq!(Personality::of("rrdinfo"), Personality::Small(SmallProgram::Info));
        assert_eq!(Personality::of("target/release/rrdscale"), Personality::Rrdscale);
        // Names are matched whole: a renamed copy is rrdscale.
        assert_eq!(Personality::of("/usr/bin/rrdtool-1.7"), Personality::Rrdscale);
        assert_eq!(Personality::of(""), Personality::Rrdscale);
    }
}
