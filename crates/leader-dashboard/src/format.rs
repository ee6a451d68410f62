//! Times and spans as the pages write them, always against the database clock.

use chrono::{DateTime, TimeDelta, Utc};

/// A span: `850 ms`, `4.2 s`, `3 min 05 s`, `2 h 10 min`, `3 d 04 h`; negative spans get a `-`.
pub(crate) fn span(span: TimeDelta) -> String {
    let sign = if span < TimeDelta::zero() { "-" } else { "" };
    let ms = span.num_milliseconds().unsigned_abs();
    let s = ms / 1000;
    let body = match s {
        _ if ms < 1000 => format!("{ms} ms"),
        0..60 => format!("{:.1} s", ms as f64 / 1000.0),
        60..3_600 => format!("{} min {:02} s", s / 60, s % 60),
        3_600..86_400 => format!("{} h {:02} min", s / 3_600, s % 3_600 / 60),
        _ => format!("{} d {:02} h", s / 86_400, s % 86_400 / 3_600),
    };
    format!("{sign}{body}")
}

/// An instant: `14:05:03 UTC` within a day of `now`, else with its date.
pub(crate) fn at(t: DateTime<Utc>, now: DateTime<Utc>) -> String {
    if (now - t).abs() < TimeDelta::hours(20) {
        t.format("%H:%M:%S UTC").to_string()
    } else {
        t.format("%Y-%m-%d %H:%M:%S UTC").to_string()
    }
}

/// `12.0 s ago`, or `in 3.1 s` for an instant after `now`.
pub(crate) fn ago(t: DateTime<Utc>, now: DateTime<Utc>) -> String {
    if t > now {
        format!("in {}", span(t - now))
    } else {
        format!("{} ago", span(now - t))
    }
}

/// `in 3.1 s`, or `3.1 s ago` for an instant before `now`.
pub(crate) fn until(t: DateTime<Utc>, now: DateTime<Utc>) -> String {
    ago(t, now)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_read_at_a_glance() {
        assert_eq!(span(TimeDelta::milliseconds(850)), "850 ms");
        assert_eq!(span(TimeDelta::milliseconds(4_200)), "4.2 s");
        assert_eq!(span(TimeDelta::seconds(185)), "3 min 05 s");
        assert_eq!(span(TimeDelta::seconds(7_800)), "2 h 10 min");
        assert_eq!(span(TimeDelta::seconds(273_600)), "3 d 04 h");
        assert_eq!(span(TimeDelta::milliseconds(-300)), "-300 ms");
        let now = DateTime::parse_from_rfc3339("2026-12-07T12:00:00Z")
            .unwrap()
            .to_utc();
        assert_eq!(ago(now - TimeDelta::seconds(12), now), "12.0 s ago");
        assert_eq!(until(now + TimeDelta::seconds(3), now), "in 3.0 s");
        assert_eq!(at(now, now), "12:00:00 UTC");
        assert_eq!(at(now - TimeDelta::days(2), now), "2026-12-05 12:00:00 UTC");
    }
}
