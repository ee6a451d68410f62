//! Schedules that cannot be: a cron expression, time zone and policy that do not parse (each
//! spanned at its own string), two schedules at once, and `tz` without `cron`.
use leader_runtime::{TickContext, leader_role};

#[leader_role("billing", cron = "0 25 * * *", tz = "Europe/Berln", missed = "all")]
async fn bad_values(_tick: TickContext) -> Result<(), std::io::Error> {
    Ok(())
}

#[leader_role("dunning", every = "1h", cron = "0 2 * * *")]
async fn two_schedules(_tick: TickContext) -> Result<(), std::io::Error> {
    Ok(())
}

#[leader_role("webhook_outbox", every = "1h", tz = "UTC")]
async fn zone_without_cron(_tick: TickContext) -> Result<(), std::io::Error> {
    Ok(())
}

fn main() {}
