//! A migration's SQL as PostgreSQL's scanner splits it, and how its tokens are read.

pub(crate) use pg_query::protobuf::Token as Kind;

/// A token the scanner found: its kind and its text.
pub(crate) type Token<'a> = (i32, &'a str);

/// `sql` split into tokens by PostgreSQL's scanner, comments left out.
///
/// # Errors
///
/// The scanner's message, for SQL it cannot split (an unterminated string or comment).
pub(crate) fn scan(sql: &str) -> Result<Vec<Token<'_>>, String> {
    let scanned = pg_query::scan(sql).map_err(|e| e.to_string())?;
    Ok(scanned
        .tokens
        .iter()
        .filter(|t| t.token != Kind::SqlComment as i32 && t.token != Kind::CComment as i32)
        .filter_map(|t| {
            let start = usize::try_from(t.start).ok()?;
            let end = usize::try_from(t.end).ok()?;
            Some((t.token, sql.get(start..end)?))
        })
        .collect())
}

pub(crate) fn is(token: &Token<'_>, kind: Kind) -> bool {
    token.0 == kind as i32
}

/// The token is the name `expected`, as PostgreSQL reads names: folded to lower case unless
/// double-quoted.
pub(crate) fn names(token: &Token<'_>, expected: &str) -> bool {
    match token.1.strip_prefix('"') {
        Some(quoted) => quoted.strip_suffix('"') == Some(expected),
        None => token.1.eq_ignore_ascii_case(expected),
    }
}

/// The value of a string constant token: `'it''s'` is `it's`, `E'..'` and `$tag$..$tag$` are
/// read without their quotes (a role name has no backslash or dollar in it to unescape).
pub(crate) fn string_value(text: &str) -> Option<String> {
    if let Some(body) = text.strip_prefix('\'').and_then(|t| t.strip_suffix('\'')) {
        return Some(body.replace("''", "'"));
    }
    if let Some(rest) = text.strip_prefix(['E', 'e']) {
        return string_value(rest);
    }
    let tag_end = text.strip_prefix('$')?.find('$')? + 2;
    let tag = &text[..tag_end];
    text.strip_prefix(tag)?.strip_suffix(tag).map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn string_values() {
        assert_eq!(string_value("'a''b'").as_deref(), Some("a'b"));
        assert_eq!(string_value("e'x'").as_deref(), Some("x"));
        assert_eq!(string_value("$q$y$q$").as_deref(), Some("y"));
        assert_eq!(string_value("$$z$$").as_deref(), Some("z"));
        assert_eq!(string_value("U&'w'"), None);
    }
}
