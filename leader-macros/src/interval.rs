//! The `every = "1h"` interval of `#[leader_role]`, parsed at compile time.

/// The forms an interval may take, for error messages.
pub const ACCEPTED_FORMS: &str = "a positive whole number and a unit: ms, s, m, h or d, e.g. \"250ms\", \"90s\", \"5m\", \"1h\", \"1d\"";

/// A parsed interval: the text as written (for docs) and its length in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Interval {
    pub millis: u64,
}

impl Interval {
    /// Parses `"<integer><unit>"` with unit `ms`, `s`, `m`, `h` or `d`. Zero, signs, spaces,
    /// fractions and overflow are refused.
    pub fn parse(text: &str) -> Option<Interval> {
        let split = text.find(|c: char| !c.is_ascii_digit())?;
        let (number, unit) = text.split_at(split);
        if number.is_empty() {
            return None;
        }
        let count: u64 = number.parse().ok()?;
        let unit_millis: u64 = match unit {
            "ms" => 1,
            "s" => 1_000,
            "m" => 60_000,
            "h" => 3_600_000,
            "d" => 86_400_000,
            _ => return None,
        };
        let millis = count.checked_mul(unit_millis)?;
        (millis > 0).then_some(Interval { millis })
    }

    /// Whole seconds, when the interval is a whole number of seconds (so the expansion can say
    /// `Duration::from_secs(3600)`, which reads better than milliseconds).
    pub fn whole_secs(self) -> Option<u64> {
        self.millis
            .is_multiple_of(1_000)
            .then_some(self.millis / 1_000)
    }
}

#[cfg(test)]
mod tests {
    use super::Interval;

    fn ms(text: &str) -> Option<u64> {
        Interval::parse(text).map(|i| i.millis)
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
        }
    }

    #[test]
    fn whole_seconds() {
        assert_eq!(Interval::parse("1h").unwrap().whole_secs(), Some(3600));
        assert_eq!(Interval::parse("1500ms").unwrap().whole_secs(), None);
        assert_eq!(Interval::parse("2000ms").unwrap().whole_secs(), Some(2));
    }
}
