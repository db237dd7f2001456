//! `rrdscale -`: one command per line on standard input, each answered by
//! its output and an `OK u:… s:… r:…` or `ERROR: …` line, as `rrdtool -`
//! does. Commands run in-process, so a long stream costs no process starts.

use std::io::{BufRead, Write};
use std::time::Instant;

use anyhow::Result;

/// Splits a line into arguments: whitespace separates, single or double
/// quotes group (without the quotes).
pub fn split_line(line: &str) -> Vec<String> {
    let mut args = Vec::new();
    let mut cur = String::new();
    let mut in_arg = false;
    let mut quote: Option<char> = None;
    for c in line.chars() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => cur.push(c),
            None if c == '"' || c == '\'' => {
                quote = Some(c);
                in_arg = true;
            }
            None if c.is_whitespace() => {
                if in_arg {
                    args.push(std::mem::take(&mut cur));
                    in_arg = false;
                }
            }
            None => {
                cur.push(c);
                in_arg = true;
            }
        }
    }
    if in_arg {
        args.push(cur);
    }
    args
}

fn cpu_times() -> (f64, f64) {
    // SAFETY: getrusage fills the struct we pass and has no other effects.
    unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut ru);
        let t = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 / 1e6;
        (t(ru.ru_utime), t(ru.ru_stime))
    }
}

pub fn run(input: &mut dyn BufRead, out: &mut dyn Write) -> Result<()> {
    let start = Instant::now();
    let mut line = String::new();
    loop {
        line.clear();
        if input.read_line(&mut line)? == 0 {
            break;
        }
        let args = split_line(&line);
        if args.is_empty() {
            continue;
        }
        if args[0] == "quit" {
            break;
        }
        // `restore -` reads the XML from the same stream as the commands.
        let result = if args[0] == "restore" {
            super::restore::run_with_input(&args[1..], out, input)
        } else {
            super::dispatch(&args, out)
        };
        match result {
            Ok(()) => {
                let (u, s) = cpu_times();
                writeln!(out, "OK u:{u:.2} s:{s:.2} r:{:.2}", start.elapsed().as_secs_f64())?;
            }
            Err(e) => writeln!(out, "ERROR: {}", super::error_message(&e))?,
        }
        out.flush()?;
    }
    Ok(())
}
