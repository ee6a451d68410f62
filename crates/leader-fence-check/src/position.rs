//! Where something is in the SQL text, said so a person finds it without a span: its line
//! within the SQL and the fragment there.

use std::ops::Range;

/// `line N of the SQL: `fragment``, for the text at `at`.
pub fn describe(sql: &str, at: &Range<usize>) -> String {
    let start = at.start.min(sql.len());
    let line = sql[..start].matches('\n').count() + 1;
    let line_start = sql[..start].rfind('\n').map_or(0, |i| i + 1);
    let line_end = sql[start..].find('\n').map_or(sql.len(), |i| start + i);
    let text = sql[line_start..line_end].trim();
    const MAX: usize = 70;
    let fragment = if text.chars().count() > MAX {
        let cut: String = text.chars().take(MAX).collect();
        format!("{cut}…")
    } else {
        text.to_owned()
    };
    format!("line {line} of the SQL: `{fragment}`")
}

/// The byte range of a name that starts at `start` (a table, a function).
pub fn word(sql: &str, start: usize) -> Range<usize> {
    let rest = sql.get(start..).unwrap_or("");
    let len = if let Some(quoted) = rest.strip_prefix('"') {
        quoted.find('"').map_or(rest.len(), |i| i + 2)
    } else {
        rest.find(|c: char| !(c.is_alphanumeric() || c == '_' || c == '.' || c == '$'))
            .unwrap_or(rest.len())
    };
    start..start + len
}

/// The byte range of a call `name(…)` that starts at `start`: through its closing parenthesis,
/// skipping string literals and nested parentheses.
pub fn call(sql: &str, start: usize) -> Range<usize> {
    let bytes = sql.as_bytes();
    let mut depth = 0usize;
    let mut i = start;
    let mut in_string = false;
    while i < bytes.len() {
        let b = bytes[i];
        if in_string {
            if b == b'\'' {
                in_string = false;
            }
        } else if b == b'\'' {
            in_string = true;
        } else if b == b'(' {
            depth += 1;
        } else if b == b')' {
            depth = depth.saturating_sub(1);
            if depth == 0 {
                return start..i + 1;
            }
        }
        i += 1;
    }
    word(sql, start)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_and_fragments() {
        let sql = "SELECT id\n  FROM jobs\n WHERE a OR leader_fence($1, $2)";
        let at = sql.find("leader_fence").unwrap();
        assert_eq!(
            describe(sql, &(at..at + 1)),
            "line 3 of the SQL: `WHERE a OR leader_fence($1, $2)`"
        );
        assert_eq!(&sql[call(sql, at)], "leader_fence($1, $2)");
        let from = sql.find("jobs").unwrap();
        assert_eq!(&sql[word(sql, from)], "jobs");
        let long = format!("SELECT {}", "x, ".repeat(40));
        assert!(describe(&long, &(0..1)).ends_with("…`"));
    }

    #[test]
    fn calls_skip_strings_and_nesting() {
        let sql = "f(')', g(1), 2) + 1";
        assert_eq!(&sql[call(sql, 0)], "f(')', g(1), 2)");
    }
}
