//! One rule for how many fields a cron expression has: what [`CronSchedule::new`] accepts (and so
//! `#[leader_role(cron = …)]`, which calls it), what its errors say, and what the docs say.

use leader_schedule::{CronSchedule, ScheduleError};

/// What every cron error tells the user to write.
const FIX: &str = "write 5 fields (minute hour day-of-month month day-of-week), or 6 with seconds \
                   first";

/// An expression of `n` fields that croner would take for any `n` from 5 to 7.
fn fields(n: usize) -> String {
    std::iter::once("0")
        .chain(std::iter::repeat_n("*", n - 1))
        .collect::<Vec<_>>()
        .join(" ")
}

#[test]
fn five_or_six_fields_are_accepted_and_every_other_count_is_refused_saying_so() {
    for n in 1..=9 {
        let expr = fields(n);
        match CronSchedule::new(&expr, "UTC") {
            Ok(_) => assert!(
                CronSchedule::FIELD_COUNTS.contains(&n),
                "{expr:?} ({n} fields) was accepted"
            ),
            Err(error) => {
                assert!(
                    !CronSchedule::FIELD_COUNTS.contains(&n),
                    "{expr:?} was refused: {error}"
                );
                assert_eq!(
                    error,
                    ScheduleError::FieldCount {
                        expr: expr.clone(),
                        fields: n
                    }
                );
                let text = error.to_string();
                assert!(
                    text.contains(&format!("has {n} field(s), not 5 or 6: {FIX}")),
                    "{text}"
                );
                assert!(!text.contains("between 5 and 7"), "{text}");
            }
        }
    }
    assert_eq!(CronSchedule::FIELD_COUNTS, [5, 6]);
}

#[test]
fn a_nickname_is_refused_as_one_field() {
    let error = CronSchedule::new("@daily", "UTC").unwrap_err();
    assert!(
        matches!(error, ScheduleError::FieldCount { fields: 1, .. }),
        "{error}"
    );
}

#[test]
fn a_field_that_does_not_parse_gets_the_same_fix() {
    let text = CronSchedule::new("0 25 * * *", "UTC")
        .unwrap_err()
        .to_string();
    assert!(
        text.starts_with("cron expression \"0 25 * * *\" does not parse (") && text.contains(FIX),
        "{text}"
    );
}

/// The roles page, the macro's docs and [`CronSchedule`]'s docs state the counts the code accepts.
#[test]
fn the_docs_state_the_accepted_counts() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
    for (file, says) in [
        (
            "docs/roles.md",
            "Expressions have 5 fields (minute hour day-of-month month day-of-week) or 6 with \
             seconds first",
        ),
        (
            "leader-macros/src/lib.rs",
            "a cron expression of 5 fields or 6 with seconds first",
        ),
        (
            "crates/leader-schedule/src/cron.rs",
            "The expression has 5 fields (minute hour day-of-month month day-of-week) or 6 with \
             seconds",
        ),
    ] {
        let text = std::fs::read_to_string(format!("{root}/{file}")).unwrap();
        let text = text
            .lines()
            .map(|line| line.trim_start_matches([' ', '/', '!']).trim())
            .collect::<Vec<_>>()
            .join(" ");
        assert!(text.contains(says), "{file} should say: {says}");
        assert!(!text.contains("7 fields"), "{file} mentions 7 fields");
    }
}
