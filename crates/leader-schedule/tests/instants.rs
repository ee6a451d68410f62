//! The instants of calendar schedules: time zones, both DST transitions, the missed-instant
//! policies and the errors. Fixed zones and dates, no clock.

use chrono::{DateTime, TimeZone, Utc};
use leader_schedule::{CronSchedule, Missed, Schedule, ScheduleError};

fn utc(y: i32, mo: u32, d: u32, h: u32, mi: u32, s: u32) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(y, mo, d, h, mi, s).unwrap()
}

fn berlin(expr: &str) -> CronSchedule {
    CronSchedule::new(expr, "Europe/Berlin").unwrap()
}

/// The instants of `schedule` after `from`, `count` of them.
fn instants(schedule: &CronSchedule, from: DateTime<Utc>, count: usize) -> Vec<DateTime<Utc>> {
    std::iter::successors(schedule.next_after(from), |t| schedule.next_after(*t))
        .take(count)
        .collect()
}

#[test]
fn a_wall_clock_time_is_read_in_the_schedule_s_zone() {
    let nightly = berlin("0 2 * * *");
    // Summer (UTC+2) and winter (UTC+1).
    assert_eq!(
        nightly.next_after(utc(2026, 7, 1, 12, 0, 0)),
        Some(utc(2026, 7, 2, 0, 0, 0))
    );
    assert_eq!(
        nightly.next_after(utc(2026, 12, 1, 12, 0, 0)),
        Some(utc(2026, 12, 2, 1, 0, 0))
    );
    let utc_nightly = CronSchedule::new("0 2 * * *", "UTC").unwrap();
    assert_eq!(
        utc_nightly.next_after(utc(2026, 12, 1, 12, 0, 0)),
        Some(utc(2026, 12, 2, 2, 0, 0))
    );
}

#[test]
fn spring_forward_runs_a_fixed_time_in_the_gap_once_just_after_it() {
    // Berlin, 2026-03-29: 02:00 CET becomes 03:00 CEST (01:00 UTC); 02:30 does not exist.
    let nightly = berlin("30 2 * * *");
    assert_eq!(
        instants(&nightly, utc(2026, 3, 27, 12, 0, 0), 3),
        vec![
            utc(2026, 3, 28, 1, 30, 0), // 02:30 CET
            utc(2026, 3, 29, 1, 0, 0),  // 03:00 CEST, the first time after the gap
            utc(2026, 3, 30, 0, 30, 0), // 02:30 CEST
        ]
    );
}

#[test]
fn spring_forward_skips_a_stepped_time_in_the_gap() {
    let half_hourly = berlin("*/30 * * * *");
    assert_eq!(
        instants(&half_hourly, utc(2026, 3, 29, 0, 15, 0), 3),
        vec![
            utc(2026, 3, 29, 0, 30, 0), // 01:30 CET
            utc(2026, 3, 29, 1, 0, 0),  // 03:00 CEST: 02:00 and 02:30 do not exist
            utc(2026, 3, 29, 1, 30, 0), // 03:30 CEST
        ]
    );
}

#[test]
fn fall_back_runs_a_fixed_time_that_happens_twice_once_at_the_first() {
    // Berlin, 2026-10-25: 03:00 CEST (01:00 UTC) becomes 02:00 CET; 02:30 happens twice.
    let nightly = berlin("30 2 * * *");
    assert_eq!(
        instants(&nightly, utc(2026, 10, 24, 12, 0, 0), 2),
        vec![
            utc(2026, 10, 25, 0, 30, 0), // 02:30 CEST, the first pass only
            utc(2026, 10, 26, 1, 30, 0), // 02:30 CET the next day
        ]
    );
}

#[test]
fn fall_back_runs_a_stepped_time_in_both_passes() {
    let half_hourly = berlin("*/30 * * * *");
    assert_eq!(
        instants(&half_hourly, utc(2026, 10, 24, 23, 45, 0), 5),
        vec![
            utc(2026, 10, 25, 0, 0, 0),  // 02:00 CEST
            utc(2026, 10, 25, 0, 30, 0), // 02:30 CEST
            utc(2026, 10, 25, 1, 0, 0),  // 02:00 CET
            utc(2026, 10, 25, 1, 30, 0), // 02:30 CET
            utc(2026, 10, 25, 2, 0, 0),  // 03:00 CET
        ]
    );
}

#[test]
fn seconds_are_an_optional_sixth_field_first() {
    let every_two = CronSchedule::new("*/2 * * * * *", "UTC").unwrap();
    assert_eq!(
        instants(&every_two, utc(2026, 1, 1, 0, 0, 1), 2),
        vec![utc(2026, 1, 1, 0, 0, 2), utc(2026, 1, 1, 0, 0, 4)]
    );
}

#[test]
fn latest_runs_the_latest_missed_instant_and_counts_the_skipped() {
    let hourly = CronSchedule::new("0 * * * *", "UTC").unwrap();
    // Completed 05:00; now 09:20: 06:00, 07:00 and 08:00 are skipped, 09:00 runs.
    let plan = hourly
        .plan(Some(utc(2026, 1, 1, 5, 0, 0)), utc(2026, 1, 1, 9, 20, 0))
        .unwrap();
    assert_eq!(plan.instant, utc(2026, 1, 1, 9, 0, 0));
    assert_eq!(plan.following, Some(utc(2026, 1, 1, 10, 0, 0)));
    assert_eq!((plan.skipped, plan.skipped_at_least), (3, false));
    // 09:00 completed: the next tick waits for 10:00.
    let plan = hourly
        .plan(Some(utc(2026, 1, 1, 9, 0, 0)), utc(2026, 1, 1, 9, 20, 0))
        .unwrap();
    assert_eq!((plan.instant, plan.skipped), (utc(2026, 1, 1, 10, 0, 0), 0));
}

#[test]
fn each_runs_every_missed_instant_in_order() {
    let hourly = CronSchedule::new("0 * * * *", "UTC")
        .unwrap()
        .missed(Missed::Each);
    let now = utc(2026, 1, 1, 9, 20, 0);
    let mut last = utc(2026, 1, 1, 5, 0, 0);
    let mut served = Vec::new();
    loop {
        let plan = hourly.plan(Some(last), now).unwrap();
        assert_eq!(plan.skipped, 0);
        if plan.instant > now {
            assert_eq!(
                plan.instant,
                utc(2026, 1, 1, 10, 0, 0),
                "then it waits for the next"
            );
            break;
        }
        served.push(plan.instant.format("%H:%M").to_string());
        last = plan.instant;
    }
    assert_eq!(served, ["06:00", "07:00", "08:00", "09:00"]);
}

#[test]
fn a_role_that_never_completed_serves_its_latest_past_instant() {
    for missed in [Missed::Latest, Missed::Each] {
        let hourly = CronSchedule::new("0 * * * *", "UTC")
            .unwrap()
            .missed(missed);
        let plan = hourly.plan(None, utc(2026, 1, 1, 9, 20, 0)).unwrap();
        assert_eq!(
            (plan.instant, plan.skipped),
            (utc(2026, 1, 1, 9, 0, 0), 0),
            "{missed}"
        );
    }
}

#[test]
fn a_skip_count_stops_at_its_limit_and_says_so() {
    let every_second = CronSchedule::new("* * * * * *", "UTC").unwrap();
    let plan = every_second
        .plan(Some(utc(2026, 1, 1, 0, 0, 0)), utc(2026, 1, 2, 0, 0, 0))
        .unwrap();
    assert_eq!(plan.instant, utc(2026, 1, 2, 0, 0, 0));
    assert_eq!((plan.skipped, plan.skipped_at_least), (10_000, true));
}

#[test]
fn bad_input_names_itself_and_the_fix() {
    let cron = CronSchedule::new("0 25 * * *", "UTC").unwrap_err();
    assert!(matches!(cron, ScheduleError::Cron { ref expr, .. } if expr == "0 25 * * *"));
    assert!(cron.to_string().contains("e.g. \"0 2 * * *\""), "{cron}");
    let zone = CronSchedule::new("0 2 * * *", "Europe/Berln").unwrap_err();
    assert_eq!(
        zone,
        ScheduleError::Zone {
            zone: "Europe/Berln".into()
        }
    );
    assert!(zone.to_string().contains("\"Europe/Berlin\""), "{zone}");
    let never = CronSchedule::new("0 0 30 2 *", "UTC").unwrap_err();
    assert_eq!(
        never,
        ScheduleError::NeverDue {
            expr: "0 0 30 2 *".into()
        }
    );
    let missed = "every".parse::<Missed>().unwrap_err();
    assert!(missed.to_string().contains("\"latest\""), "{missed}");
}

#[test]
fn the_text_says_the_schedule() {
    use std::time::Duration;
    assert_eq!(
        Schedule::every(Duration::from_millis(250)).to_string(),
        "every 250ms"
    );
    assert_eq!(
        Schedule::every(Duration::from_secs(90)).to_string(),
        "every 90s"
    );
    assert_eq!(
        Schedule::every(Duration::from_secs(86_400)).to_string(),
        "every 1d"
    );
    let each = berlin("0 2 * * *").missed(Missed::Each);
    assert_eq!(
        Schedule::from(each).to_string(),
        "cron \"0 2 * * *\" in Europe/Berlin, missed instants: each"
    );
}
