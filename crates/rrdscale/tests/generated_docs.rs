//! `rrdscale generate-docs DIR` (what the Debian package ships as manual
//! pages and completions) says what the program's own help says: a page for
//! every command the usage text lists, holding that command's synopsis as
//! `rrdscale help COMMAND` prints it, and completions that offer every
//! command and the options the synopses name.

use std::process::Command;

const RRDSCALE: &str = env!("CARGO_BIN_EXE_rrdscale");

fn stdout(args: &[&str]) -> String {
    let out = Command::new(RRDSCALE).args(args).output().unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The commands the usage text lists, one per line after `Commands:`.
fn listed() -> Vec<String> {
    stdout(&[])
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .collect()
}

#[test]
fn pages_and_completions_follow_the_help() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(RRDSCALE).arg("generate-docs").arg(dir.path()).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let commands = listed();
    assert!(commands.len() >= 23, "{commands:?}");
    let overview = std::fs::read_to_string(dir.path().join("man/rrdscale.1")).unwrap().replace("\\-", "-");
    let bash = std::fs::read_to_string(dir.path().join("completions/rrdscale.bash")).unwrap();
    for c in &commands {
        assert!(overview.contains(&format!("rrdscale-{c}(1)")), "rrdscale.1 lacks {c}");
        assert!(bash.contains(c.as_str()), "the bash completions lack {c}");
        let page = std::fs::read_to_string(dir.path().join(format!("man/rrdscale-{c}.1")))
            .unwrap_or_else(|e| panic!("no page for {c}: {e}"));
        // Every option line of the help is in the page (roff escapes `-`
        // as `\-`, so compare with it undone).
        let page = page.replace("\\-", "-");
        let help = stdout(&["help", c]);
        let options: Vec<&str> = help.lines().filter(|l| l.trim_start().starts_with("[--")).collect();
        for line in options {
            assert!(page.contains(line.trim()), "rrdscale-{c}.1 lacks {line:?}");
        }
    }
    // Options read off the synopses.
    for option in ["--no-overwrite", "--template", "--rraindex", "--heartbeat"] {
        assert!(bash.contains(option), "the bash completions lack {option}");
    }
    assert!(dir.path().join("completions/_rrdscale").exists());
    assert!(dir.path().join("completions/rrdscale.fish").exists());
}
