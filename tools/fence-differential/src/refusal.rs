//! The checker's refusal messages reduced to their reason, so refusals can be counted by the
//! rule that made them: what the checker says less where (the line and fragment of the SQL),
//! which table, and how to fix it.
//!
//! It reads the messages' shape, not their words, so a reworded rule still groups: the message
//! is cut at its first `: ` outside parentheses and backticks (where the fix begins), a
//! parenthesized `(line …)` is dropped, and each backticked span keeps its first word
//! (`` `UPDATE q` `` → `` `UPDATE` ``). A message laid out as rustc's, a first line and then
//! `note:` and `help:` lines, is reduced to its first line, and the note right after it (why),
//! in parentheses, unless that note only says where (`note: at line …`).

/// The reason of one refusal message.
pub fn reason(message: &str) -> String {
    let mut lines = message.lines();
    let first = reduce(lines.next().unwrap_or(""));
    match lines.next().and_then(|line| line.strip_prefix("note: ")) {
        Some(note) if !note.starts_with("at line ") => format!("{first} ({})", reduce(note)),
        _ => first,
    }
}

/// One line of a message less its fix, place and table.
fn reduce(message: &str) -> String {
    let mut out = String::new();
    let mut depth = 0usize;
    let mut chars = message.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '`' => {
                let span: String = chars.by_ref().take_while(|&c| c != '`').collect();
                let first = span.split_whitespace().next().unwrap_or("");
                out.push('`');
                out.push_str(first);
                out.push('`');
            }
            '(' => {
                depth += 1;
                out.push(c);
            }
            ')' => {
                depth = depth.saturating_sub(1);
                out.push(c);
            }
            ':' if depth == 0 && chars.peek() == Some(&' ') => break,
            _ => out.push(c),
        }
    }
    drop_line_notes(&out).trim().to_owned()
}

/// `out` without its parenthesized groups that start with `line `.
fn drop_line_notes(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(open) = rest.find(" (line ").or_else(|| rest.find("(line ")) {
        let close = rest[open..].find(')').map_or(rest.len(), |i| open + i + 1);
        out.push_str(&rest[..open]);
        rest = &rest[close..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::reason;

    #[test]
    fn the_fix_the_place_and_the_table_go() {
        assert_eq!(
            reason(
                "`UPDATE q` is not gated by the fence, so a superseded leader would still \
                 update rows (the fence is under OR, so rows can match without it): add `AND \
                 leader_fence($1, $2)` to its own WHERE, at line 1 of the SQL: `UPDATE q …`"
            ),
            "`UPDATE` is not gated by the fence, so a superseded leader would still update rows \
             (the fence is under OR, so rows can match without it)"
        );
        assert_eq!(
            reason(
                "`#[fenced]` cannot see what `public.leader_fence(..)` does, and a function can \
                 change or lock rows (line 1 of the SQL: `SELECT 1`): compute the value before"
            ),
            "`#[fenced]` cannot see what `public.leader_fence(..)` does, and a function can \
             change or lock rows"
        );
        assert_eq!(
            reason("the row-locking `SELECT … FROM r … FOR SHARE` is not gated by the fence"),
            "the row-locking `SELECT` is not gated by the fence"
        );
        assert_eq!(
            reason(
                "`UPDATE q` is not gated by the fence, so a superseded leader would still \
                 update rows\nnote: the fence is under OR, so rows can match without it\n\
                 note: at line 1 of the SQL: `UPDATE q …`\nhelp: add `AND leader_fence($1, $2)`"
            ),
            "`UPDATE` is not gated by the fence, so a superseded leader would still update rows \
             (the fence is under OR, so rows can match without it)"
        );
        assert_eq!(
            reason(
                "`UPDATE q` is not gated by the fence, so a superseded leader would still \
                 update rows\nnote: at line 1 of the SQL: `UPDATE q …`\nhelp: add it"
            ),
            "`UPDATE` is not gated by the fence, so a superseded leader would still update rows"
        );
    }
}
