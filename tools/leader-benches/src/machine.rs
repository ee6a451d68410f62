//! Facts about the machine and the server a benchmark ran on, for the report's Machine section.

use sqlx::PgConnection;

use crate::Res;

/// Runs `program` with `args` and returns its trimmed stdout, or `None` if it failed to run or
/// exited unsuccessfully.
pub fn command_output(program: &str, args: &[&str]) -> Option<String> {
    let out = std::process::Command::new(program)
        .args(args)
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

/// Reads the CPU's model name from `/proc/cpuinfo` (`"unknown"` when it cannot).
pub fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_owned())
        })
        .unwrap_or_else(|| "unknown".into())
}

/// Reads the total memory from `/proc/meminfo`, formatted as `"23.5 GiB"` (`"unknown"` when it
/// cannot).
pub fn memory() -> String {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|s| {
            let line = s.lines().find(|l| l.starts_with("MemTotal:"))?;
            let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
            Some(format!("{:.1} GiB", kib as f64 / 1024.0 / 1024.0))
        })
        .unwrap_or_else(|| "unknown".into())
}

/// Reads the 1, 5 and 15 minute load averages from `/proc/loadavg`, space-separated
/// (`"unknown"` when it cannot).
pub fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|| "unknown".into())
}

/// The server's `version()` and, for each of `names`, `` `name=value` `` as the report's Machine
/// section quotes it.
pub async fn server_facts(conn: &mut PgConnection, names: &[&str]) -> Res<(String, Vec<String>)> {
    let version: String = sqlx::query_scalar("SELECT version()")
        .fetch_one(&mut *conn)
        .await?;
    let mut settings = Vec::with_capacity(names.len());
    for name in names {
        settings.push(format!("`{name}={}`", setting(&mut *conn, name).await?));
    }
    Ok((version, settings))
}

/// Asks the server for the current value of the setting `name` (`SELECT current_setting($1)`).
pub async fn setting(conn: &mut PgConnection, name: &str) -> Res<String> {
    Ok(sqlx::query_scalar("SELECT current_setting($1)")
        .bind(name)
        .fetch_one(&mut *conn)
        .await?)
}
