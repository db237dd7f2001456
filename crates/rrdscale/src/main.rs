//! The `rrdscale` binary: glue between the command line and the engine.

fn main() {
    eprintln!("rrdscale: no commands yet");
    std::process::exit(1);
}
