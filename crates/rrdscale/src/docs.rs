//! `rrdscale generate-docs DIR`: the manual pages and shell completions,
//! made from the same sources as the program's own help, so they cannot
//! drift from it: the command table (names, summaries and rrdtool's help
//! texts, `rrd_cli::cmd`) and, for rrdscale's own commands, what
//! `rrdscale COMMAND --help` prints. The Debian package runs it at build
//! time (`scripts/build-deb.sh`); it is not listed in the usage text.
//!
//! Writes `DIR/man/rrdscale.1` (the overview), `DIR/man/rrdscale-NAME.1`
//! for every command, and `DIR/completions/` for bash, zsh and fish. The
//! options offered for completion are read off each command's synopsis
//! (`[--start|-b start time]`: `--start`/`-b`, taking a value).

use std::io::Write;
use std::path::Path;

use anyhow::{bail, Context, Result};
use clap_complete::Shell;
use roff::{bold, roman, Roff};
use rrd_cli::cmd::{self as cli, Command};

pub fn run(args: &[String], out: &mut dyn Write) -> Result<()> {
    let [dir] = args else { bail!("usage: rrdscale generate-docs DIRECTORY") };
    let dir = Path::new(dir);
    let man = dir.join("man");
    let completions = dir.join("completions");
    std::fs::create_dir_all(&man).with_context(|| format!("creating {}", man.display()))?;
    std::fs::create_dir_all(&completions).with_context(|| format!("creating {}", completions.display()))?;
    write(&man.join("rrdscale.1"), &overview_page())?;
    for c in cli::commands() {
        let page = command_page(c, &help_of(c)?);
        write(&man.join(format!("rrdscale-{}.1", c.name)), &page)?;
    }
    let mut clap_command = completion_command();
    for shell in [Shell::Bash, Shell::Zsh, Shell::Fish] {
        clap_complete::generate_to(shell, &mut clap_command, "rrdscale", &completions)
            .with_context(|| format!("writing the {shell} completions"))?;
    }
    writeln!(out, "manual pages in {}, completions in {}", man.display(), completions.display())?;
    Ok(())
}

fn write(path: &Path, text: &str) -> Result<()> {
    std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))
}

/// A command's help as the program prints it: rrdtool's text for its
/// commands, `rrdscale NAME --help` for rrdscale's own.
fn help_of(c: &Command) -> Result<String> {
    if let Some(help) = c.help {
        return Ok(help.replace("{prog}", "rrdscale"));
    }
    let exe = std::env::current_exe().context("finding the rrdscale binary")?;
    let out = std::process::Command::new(exe)
        .args([c.name, "--help"])
        .output()
        .with_context(|| format!("running rrdscale {} --help", c.name))?;
    let text = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    if text.trim().is_empty() {
        bail!("rrdscale {} --help printed nothing", c.name);
    }
    Ok(text)
}

fn title(name: &str) -> Roff {
    let mut page = Roff::new();
    page.control(
        "TH",
        [name.to_uppercase().as_str(), "1", "", concat!("rrdscale ", env!("CARGO_PKG_VERSION"))],
    );
    page
}

/// Lines kept as printed (tabs and line breaks are the help's layout).
fn preformatted(page: &mut Roff, text: &str) {
    page.control("nf", []);
    for line in text.lines() {
        page.text([roman(line)]);
    }
    page.control("fi", []);
}

fn overview_page() -> String {
    let mut page = title("rrdscale");
    page.control("SH", ["NAME"]);
    page.text([roman("rrdscale - an RRDtool-compatible round robin database")]);
    page.control("SH", ["SYNOPSIS"]);
    page.text([bold("rrdscale"), roman(" [options] command command_options")]);
    page.control("br", []);
    page.text([bold("rrdscale -"), roman(" [directory]")]);
    page.control("SH", ["DESCRIPTION"]);
    page.text([roman(
        "rrdscale reads and writes the files RRDtool 1.7 makes and answers rrdtool's command lines \
         with the same output, byte for byte. Started under one of Debian's program names \
         (a symbolic link is enough) it is that program: rrdtool, rrdupdate, rrdcreate, rrdinfo, \
         or rrdcached (the caching daemon, see rrdscale-daemon(1)).",
    )]);
    page.control("SH", ["COMMANDS"]);
    for c in cli::commands() {
        page.control("TP", []);
        page.text([bold(c.name)]);
        page.text([roman(format!("{} (see rrdscale-{}(1))", c.summary, c.name))]);
    }
    page.control("SH", ["SEE ALSO"]);
    page.text([roman("rrdtool(1), rrdcached(1), rrdscale-switch(8)")]);
    page.render()
}

fn command_page(c: &Command, help: &str) -> String {
    let name = format!("rrdscale-{}", c.name);
    let mut page = title(&name);
    page.control("SH", ["NAME"]);
    page.text([roman(format!("{name} - {}", c.summary))]);
    page.control("SH", ["SYNOPSIS"]);
    // rrdtool's texts open with `* NAME - summary`, said under NAME.
    let synopsis = if c.help.is_some() { help.split_once('\n').map_or("", |(_, rest)| rest) } else { help };
    preformatted(&mut page, synopsis.trim_matches('\n'));
    page.control("SH", ["DESCRIPTION"]);
    match c.help {
        Some(_) => page.text([roman(format!(
            "Behaves as rrdtool {} of RRDtool 1.7.2: the same arguments, output, files and exit status. \
             Its manual page, rrd{}(1) in Debian's rrdtool package, describes the options.",
            c.name,
            c.name.trim_end_matches('v')
        ))]),
        None => page.text([roman(format!("The options above are what rrdscale {} --help prints.", c.name))]),
    };
    page.control("SH", ["SEE ALSO"]);
    page.text([roman("rrdscale(1)")]);
    page.render()
}

/// The command tree the completions are made from: every command, and for
/// rrdtool's the options its synopsis names.
fn completion_command() -> clap::Command {
    let mut root = clap::Command::new("rrdscale").about("An RRDtool-compatible round robin database");
    for c in cli::commands() {
        let mut sub = clap::Command::new(c.name).about(c.summary);
        for option in c.help.map(synopsis_options).unwrap_or_default() {
            let mut arg = clap::Arg::new(option.long).long(option.long);
            if let Some(short) = option.short {
                arg = arg.short(short);
            }
            arg = if option.takes_value {
                arg.action(clap::ArgAction::Set)
            } else {
                arg.action(clap::ArgAction::SetTrue)
            };
            sub = sub.arg(arg);
        }
        sub = sub.arg(clap::Arg::new("operands").num_args(0..).value_hint(clap::ValueHint::FilePath));
        root = root.subcommand(sub);
    }
    root
}

#[derive(Debug, PartialEq)]
struct SynopsisOption {
    long: &'static str,
    short: Option<char>,
    takes_value: bool,
}

/// The options a synopsis names, in either of rrdtool's forms:
/// `[--start|-b start time]`, `[-s|--start seconds]`, `[--no-overwrite]`.
fn synopsis_options(help: &'static str) -> Vec<SynopsisOption> {
    let mut found: Vec<SynopsisOption> = Vec::new();
    for bracket in help.split('[').skip(1) {
        let inner = bracket.split(']').next().unwrap_or_default();
        let mut words = inner.splitn(2, ' ');
        let head = words.next().unwrap_or_default();
        let takes_value = words.next().is_some_and(|w| !w.trim().is_empty());
        let mut long = None;
        let mut short = None;
        for form in head.split('|') {
            if let Some(name) = form.strip_prefix("--") {
                let ok = !name.is_empty() && name.chars().all(|ch| ch.is_ascii_alphanumeric() || ch == '-');
                long = long.or(ok.then_some(name));
            } else if let Some(letter) = form.strip_prefix('-') {
                let mut chars = letter.chars();
                if let (Some(ch), None) = (chars.next(), chars.next()) {
                    short = short.or(ch.is_ascii_alphanumeric().then_some(ch));
                }
            }
        }
        if let Some(long) = long {
            if !found.iter().any(|o| o.long == long || (short.is_some() && o.short == short)) {
                found.push(SynopsisOption { long, short, takes_value });
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_are_read_off_both_synopsis_forms() {
        let opts = synopsis_options(
            "\trrdtool create filename [--start|-b start time]\n\t\t[--no-overwrite|-O]\n\
             \t[-s|--start seconds] [--skip-past-updates] [DS:ds-name:DST:dst arguments]",
        );
        assert_eq!(
            opts,
            vec![
                SynopsisOption { long: "start", short: Some('b'), takes_value: true },
                SynopsisOption { long: "no-overwrite", short: Some('O'), takes_value: false },
                SynopsisOption { long: "skip-past-updates", short: None, takes_value: false },
            ]
        );
    }

    #[test]
    fn every_rrdtool_command_offers_its_options() {
        for c in cli::RRDTOOL_COMMANDS {
            let opts = synopsis_options(c.help.unwrap());
            // `resize` and `last` take none beyond --daemon at most;
            // `create`, `graph`, `fetch`, `tune` take many.
            if ["create", "graph", "fetch", "tune", "update", "dump", "xport"].contains(&c.name) {
                assert!(opts.len() >= 2, "{}: {opts:?}", c.name);
            }
        }
        // The completion tree is valid for clap (no duplicate names).
        completion_command().debug_assert();
    }
}
