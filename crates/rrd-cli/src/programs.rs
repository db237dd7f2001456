//! The small programs Debian's rrdtool package ships beside `rrdtool`:
//! `rrdupdate`, `rrdcreate` and `rrdinfo`, each one of rrdtool's commands
//! as a program of its own. They print everything on standard output: the
//! command's own output, and on failure the banner, the program's usage and
//! `ERROR: message`, with exit status 1 (rrdtool 1.7.2's behaviour, checked
//! against Debian's programs by `crates/rrdscale/tests/program_names.rs`).

use std::io::Write;

use anyhow::{bail, Result};

use crate::cmd;

/// One of the small programs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SmallProgram {
    Update,
    Create,
    Info,
}

impl SmallProgram {
    /// The program a file name (the last component of `argv[0]`) names.
    pub fn named(name: &str) -> Option<SmallProgram> {
        match name {
            "rrdupdate" => Some(SmallProgram::Update),
            "rrdcreate" => Some(SmallProgram::Create),
            "rrdinfo" => Some(SmallProgram::Info),
            _ => None,
        }
    }

    /// The usage text printed before an error (the program's layout, which
    /// is not `rrdtool help`'s).
    fn usage(self) -> &'static str {
        match self {
            SmallProgram::Update => {
                "Usage: rrdupdate <filename>\n\
                 \t\t\t[--template|-t ds-name[:ds-name]...]\n\
                 \t\t\t[--skip-past-updates]\n\
                 \t\t\ttime|N:value[:value...]\n\
                 \n\
                 \t\t\tat-time@value[:value...]\n\
                 \n\
                 \t\t\t[ time:value[:value...] ..]\n\
                 \n"
            }
            SmallProgram::Create => {
                "Usage: rrdcreate <filename>\n\
                 \t\t\t[--start|-b start time]\n\
                 \t\t\t[--step|-s step]\n\
                 \t\t\t[--no-overwrite]\n\
                 \t\t\t[DS:ds-name:DST:dst arguments]\n\
                 \t\t\t[RRA:CF:cf arguments]\n\
                 \n"
            }
            SmallProgram::Info => "Usage: rrdinfo <filename>\n",
        }
    }

    fn execute(self, argv0: &str, args: &[String], out: &mut dyn Write) -> Result<()> {
        match self {
            // Options are checked first, then that a file and a value
            // are left (where `rrdtool update` would print its help).
            SmallProgram::Update => match cmd::update::parse(args, false)? {
                None => bail!("Not enough arguments"),
                Some(_) => cmd::update::run(args, out, false),
            },
            // The library's answer to no arguments (`rrdtool create` alone
            // prints its help instead).
            SmallProgram::Create if args.is_empty() => bail!("need name of an rrd file to create"),
            SmallProgram::Create => cmd::create::run(args, out),
            // Its usage error names the program as it was started.
            SmallProgram::Info => cmd::info::run_as(argv0, args, out),
        }
    }

    /// Runs the program started as `argv0` on its arguments; the exit
    /// status.
    pub fn run(self, argv0: &str, args: &[String], out: &mut dyn Write) -> std::io::Result<u8> {
        match self.execute(argv0, args, out) {
            Ok(()) => Ok(0),
            Err(e) => {
                writeln!(out, "{}", cmd::version_line())?;
                writeln!(out)?;
                out.write_all(self.usage().as_bytes())?;
                writeln!(out, "ERROR: {}", cmd::error_message(&e))?;
                Ok(1)
            }
        }
    }
}
