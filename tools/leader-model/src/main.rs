//! `cargo run -p leader-model --release -- [--replicas N] [--threads N] [BUG ...|--all-bugs]`:
//! checks the correct protocol, or each seeded bug, and prints what it found.

use std::process::ExitCode;

use leader_model::state::{MAX_KEYS, MAX_SHARDS};
use leader_model::{Bug, Config, check};

fn usage() -> String {
    let bugs: Vec<&str> = Bug::ALL.iter().map(|b| b.name()).collect();
    format!(
        "usage: leader-model [--replicas 1|2|3] [--threads N] [--clocks | --all-faults | --late-answers | --scheduled | --sharded | --dead-holders] [--shards N] [--keys N] [--anchors] [--crashes N] [--anchor-losses N] [--horizon T] [--delays N] [--no-freeze] \
         [--no-failover | --failover] [--no-pause | --pause] [--no-clock-drift] [--clock-drift-every N] [--fast-clocks] [--all-bugs | BUG ...]\n  BUG: {}",
        bugs.join(", ")
    )
}

fn main() -> ExitCode {
    let mut replicas = 2u8;
    let mut threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut bugs = Vec::new();
    let mut late_answers = false;
    let mut base = Config::operator_and_failover(2);
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let number = |value: Option<String>| value.and_then(|v| v.parse::<usize>().ok());
        match arg.as_str() {
            "--replicas" => match number(args.next()) {
                Some(n @ 1..=3) => replicas = n as u8,
                _ => {
                    eprintln!("--replicas takes 1, 2 or 3\n{}", usage());
                    return ExitCode::from(2);
                }
            },
            "--threads" => match number(args.next()) {
                Some(n) if n > 0 => threads = n,
                _ => {
                    eprintln!("--threads takes a positive number\n{}", usage());
                    return ExitCode::from(2);
                }
            },
            "--horizon" => match number(args.next()) {
                Some(n @ 2..=20) => base.horizon = n as u8,
                _ => {
                    eprintln!("--horizon takes 2 to 20\n{}", usage());
                    return ExitCode::from(2);
                }
            },
            "--clocks" => base = Config::clocks_and_delays(base.replicas),
            "--all-faults" => base = Config::all_faults(base.replicas),
            "--scheduled" => base = Config::scheduled(base.replicas),
            "--sharded" => base = Config::sharded(base.replicas),
            "--dead-holders" => base = Config::dead_holders(base.replicas),
            "--anchors" => base.anchors = true,
            "--crashes" => match number(args.next()) {
                Some(n @ 0..=3) => base.crashes = n as u8,
                _ => {
                    eprintln!("--crashes takes 0 to 3\n{}", usage());
                    return ExitCode::from(2);
                }
            },
            "--anchor-losses" => match number(args.next()) {
                Some(n @ 0..=3) => base.anchor_losses = n as u8,
                _ => {
                    eprintln!("--anchor-losses takes 0 to 3\n{}", usage());
                    return ExitCode::from(2);
                }
            },
            "--shards" => match number(args.next()) {
                Some(n) if (1..=MAX_SHARDS).contains(&n) => base.shards = n as u8,
                _ => {
                    eprintln!("--shards takes 1 to {MAX_SHARDS}\n{}", usage());
                    return ExitCode::from(2);
                }
            },
            "--keys" => match number(args.next()) {
                Some(n) if n <= MAX_KEYS => base.keys = n as u8,
                _ => {
                    eprintln!("--keys takes 0 to {MAX_KEYS}\n{}", usage());
                    return ExitCode::from(2);
                }
            },
            "--late-answers" => {
                base = Config::late_answers(base.replicas);
                late_answers = true;
            }
            "--no-freeze" => base.freezes = 0,
            "--delays" => match number(args.next()) {
                Some(n @ 0..=5) => base.delays = n as u8,
                _ => {
                    eprintln!("--delays takes 0 to 5\n{}", usage());
                    return ExitCode::from(2);
                }
            },
            "--no-failover" => base.failovers = 0,
            "--failover" => base.failovers = 1,
            "--no-pause" => base.pause = false,
            "--pause" => base.pause = true,
            "--no-clock-drift" => base.clock_drift_every = None,
            "--fast-clocks" => base.fast_clocks = true,
            "--clock-drift-every" => match number(args.next()) {
                Some(n @ 2..=20) => base.clock_drift_every = Some(n as u8),
                _ => {
                    eprintln!("--clock-drift-every takes 2 to 20\n{}", usage());
                    return ExitCode::from(2);
                }
            },
            "--all-bugs" => bugs.extend(Bug::ALL),
            "-h" | "--help" => {
                println!("{}", usage());
                return ExitCode::SUCCESS;
            }
            name => match Bug::from_name(name) {
                Some(bug) => bugs.push(bug),
                None => {
                    eprintln!("unknown seeded bug `{name}`\n{}", usage());
                    return ExitCode::from(2);
                }
            },
        }
    }
    base.replicas = replicas;
    let runs: Vec<(Config, Option<&'static str>)> = if bugs.is_empty() {
        vec![(base, None)]
    } else {
        bugs.iter()
            .map(|bug| {
                let config = if late_answers {
                    Config::late_answers(replicas).with_bug(*bug)
                } else {
                    bug.scenario()
                };
                (config, Some(bug.breaks()))
            })
            .collect()
    };
    let mut as_expected = true;
    for (config, stop_at) in runs {
        match check(config, threads, stop_at) {
            Ok(report) => {
                println!("{}\n", report.render());
                as_expected &= report.as_expected(stop_at);
            }
            Err(err) => {
                eprintln!("{err}");
                return ExitCode::FAILURE;
            }
        }
    }
    if as_expected {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
