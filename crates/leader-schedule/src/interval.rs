//! The interval grammar, written once: `#[leader_role(every = "1h")]` parses it at compile time
//! ([`parse_interval`]) and a schedule's text writes it ([`format_interval`], as
//! [`Schedule`](crate::Schedule)'s `every 1h` and the lease row's `schedule` column show it), so
//! what one writes the other reads.

use std::time::Duration;

use crate::ScheduleError;

/// The forms an interval may take, for error messages.
pub const INTERVAL_FORMS: &str = "a positive whole number and a unit: ms, s, m, h or d, e.g. \
                                  \"250ms\", \"90s\", \"5m\", \"1h\", \"1d\"";

/// Each unit and its length in milliseconds, largest first (the order [`format_interval`] tries
/// them in).
const UNITS: [(&str, u64); 5] = [
    ("d", 86_400_000),
    ("h", 3_600_000),
    ("m", 60_000),
    ("s", 1_000),
    ("ms", 1),
];

/// Parses `"<whole number><unit>"`, the unit `ms`, `s`, `m`, `h` or `d`: `"250ms"`, `"90s"`,
/// `"1h"`.
///
/// ```
/// use std::time::Duration;
/// use leader_schedule::parse_interval;
///
/// assert_eq!(parse_interval("90s"), Ok(Duration::from_secs(90)));
/// assert!(parse_interval("1.5h").is_err());
/// ```
///
/// # Errors
///
/// [`ScheduleError::Interval`] for zero, a sign, a space, a fraction, another unit, more than one
/// unit, or more milliseconds than a `u64` holds.
pub fn parse_interval(text: &str) -> Result<Duration, ScheduleError> {
    let refused = || ScheduleError::Interval {
        text: text.to_owned(),
    };
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .ok_or_else(refused)?;
    let (number, unit) = text.split_at(split);
    let count: u64 = number.parse().map_err(|_| refused())?;
    let unit_millis = UNITS
        .iter()
        .find(|(name, _)| *name == unit)
        .map(|(_, millis)| *millis)
        .ok_or_else(refused)?;
    match count.checked_mul(unit_millis) {
        Some(millis) if millis > 0 => Ok(Duration::from_millis(millis)),
        _ => Err(refused()),
    }
}

/// Writes `interval` in the grammar [`parse_interval`] reads, in the largest unit that divides
/// it: `1h`, `90s`, `1500ms`. The grammar counts whole milliseconds, so a finer part is dropped;
/// a zero interval is written `0ms`, which [`parse_interval`] refuses.
///
/// ```
/// use std::time::Duration;
/// use leader_schedule::format_interval;
///
/// assert_eq!(format_interval(Duration::from_secs(3600)), "1h");
/// assert_eq!(format_interval(Duration::from_millis(1500)), "1500ms");
/// ```
pub fn format_interval(interval: Duration) -> String {
    let millis = interval.as_millis();
    let (count, unit) = UNITS
        .iter()
        .find(|(_, unit_millis)| millis > 0 && millis.is_multiple_of(u128::from(*unit_millis)))
        .map_or((millis, "ms"), |(unit, unit_millis)| {
            (millis / u128::from(*unit_millis), *unit)
        });
    format!("{count}{unit}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn ms(text: &str) -> Option<u128> {
        parse_interval(text).ok().map(|d| d.as_millis())
    }

    #[test]
    fn accepted_forms() {
        assert_eq!(ms("250ms"), Some(250));
        assert_eq!(ms("90s"), Some(90_000));
        assert_eq!(ms("5m"), Some(300_000));
        assert_eq!(ms("1h"), Some(3_600_000));
        assert_eq!(ms("1d"), Some(86_400_000));
        assert_eq!(ms("007s"), Some(7_000));
    }

    #[test]
    fn refused_forms() {
        for bad in [
            "",
            "h",
            "1",
            "0s",
            "0ms",
            "-1s",
            "+1s",
            "1.5h",
            "1 h",
            " 1h",
            "1h ",
            "1H",
            "1hr",
            "1sec",
            "1w",
            "1y",
            "ms",
            "1h30m",
            "99999999999999999999s",
            "18446744073709551615d",
        ] {
            assert_eq!(ms(bad), None, "{bad:?} should be refused");
            assert_eq!(
                parse_interval(bad),
                Err(ScheduleError::Interval {
                    text: bad.to_owned()
                })
            );
        }
    }

    #[test]
    fn written_in_the_largest_unit_that_divides_it() {
        for (millis, text) in [
            (86_400_000, "1d"),
            (172_800_000, "2d"),
            (3_600_000, "1h"),
            (90_000, "90s"),
            (60_000, "1m"),
            (1_500, "1500ms"),
            (2_000, "2s"),
            (1, "1ms"),
            (0, "0ms"),
        ] {
            assert_eq!(format_interval(Duration::from_millis(millis)), text);
        }
    }

    proptest! {
        /// Every interval the grammar can hold is written as text that reads back as itself:
        /// any count of milliseconds, and whole counts of each unit (which a count drawn from
        /// all of `u64` almost never is).
        #[test]
        fn what_is_written_reads_back(
            millis in prop_oneof![
                1..=u64::MAX,
                (1..=100_000u64, prop::sample::select(UNITS.to_vec()))
                    .prop_map(|(count, (_, unit_millis))| count * unit_millis),
            ],
        ) {
            let interval = Duration::from_millis(millis);
            prop_assert_eq!(parse_interval(&format_interval(interval)), Ok(interval));
        }

        /// Every text the grammar reads is written back in a form that reads as the same interval.
        #[test]
        fn what_is_read_is_written_back_as_the_same_interval(
            count in 1..=1_000_000u64,
            unit in prop::sample::select(UNITS.iter().map(|(name, _)| *name).collect::<Vec<_>>()),
        ) {
            let interval = parse_interval(&format!("{count}{unit}")).expect("a valid interval");
            prop_assert_eq!(parse_interval(&format_interval(interval)), Ok(interval));
        }
    }
}
