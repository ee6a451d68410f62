//! The model is tied to the SQL: each statement's WHERE is exactly its guard list in
//! `leader-core` plus plumbing (for the four-argument fence, the list the model builds from the
//! two-argument fence's), and the model evaluates exactly the listed guards.

use leader_core::guard::{Guard, Guarded};
use leader_model::guards::{self, GuardKind, Guards, resolve_statement};
use leader_model::{Bug, Config};

const STATEMENTS: [(&Guarded, &[(&str, GuardKind)]); 6] = [
    (&leader_core::lease::ACQUIRE_GUARDS, guards::ACQUIRE),
    (&leader_core::lease::TAKEOVER_GUARDS, guards::TAKEOVER),
    (&leader_core::lease::RENEW_GUARDS, guards::RENEW),
    (&leader_core::lease::RELEASE_GUARDS, guards::RELEASE),
    (&leader_core::FENCE_GUARDS, guards::FENCE),
    (&guards::SHARD_FENCE_GUARDS, guards::SHARD_FENCE),
];

fn normalize(sql: &str) -> String {
    sql.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The top-level conjuncts of the first WHERE after `guarded.where_after`, comments removed,
/// up to its RETURNING, `;` or the parenthesis that closes the query around it.
fn where_conjuncts(guarded: &Guarded) -> Vec<String> {
    let after = guarded
        .sql
        .find(guarded.where_after)
        .unwrap_or_else(|| panic!("{}: `{}` not found", guarded.statement, guarded.where_after));
    let rest = &guarded.sql[after + guarded.where_after.len()..];
    let rest = &rest[rest.find("WHERE").expect("a WHERE") + "WHERE".len()..];
    let text: String = rest
        .lines()
        .map(|line| line.split("--").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join(" ");
    let text = normalize(&text);
    let mut depth = 0i32;
    let mut end = text.len();
    for (i, ch) in text.char_indices() {
        match ch {
            '(' => depth += 1,
            ')' if depth == 0 => {
                end = i;
                break;
            }
            ')' => depth -= 1,
            ';' if depth == 0 => {
                end = i;
                break;
            }
            _ if depth == 0 && text[i..].starts_with("RETURNING") => {
                end = i;
                break;
            }
            _ => {}
        }
    }
    let clause = text[..end].trim();
    let mut conjuncts = Vec::new();
    let (mut depth, mut start) = (0i32, 0usize);
    for (i, ch) in clause.char_indices() {
        match ch {
            '(' => depth += 1,
            ')' => depth -= 1,
            _ => {}
        }
        assert!(
            !(depth == 0 && clause[i..].starts_with(" OR ")),
            "{}: a top-level OR in its WHERE is not a conjunction of guards",
            guarded.statement
        );
        if depth == 0 && clause[i..].starts_with(" AND ") {
            conjuncts.push(clause[start..i].trim().to_owned());
            start = i + " AND ".len();
        }
    }
    conjuncts.push(clause[start..].trim().to_owned());
    conjuncts
}

#[test]
fn each_statements_where_is_exactly_its_guards_and_plumbing() {
    for (guarded, _) in STATEMENTS {
        let mut in_sql = where_conjuncts(guarded);
        let mut listed: Vec<String> = guarded
            .guards
            .iter()
            .map(|g| normalize(g.sql))
            .chain(guarded.plumbing.iter().map(|p| normalize(p)))
            .collect();
        in_sql.sort();
        listed.sort();
        assert_eq!(
            in_sql, listed,
            "{} (the WHERE after `{}`): its conjuncts (left) and the guard list plus plumbing \
             (right) differ: update the list next to the SQL, then the model",
            guarded.statement, guarded.where_after
        );
    }
}

#[test]
fn the_model_evaluates_exactly_the_listed_guards() {
    let resolved =
        Guards::resolve(&Config::operator_and_failover(2)).expect("lists and model agree");
    let by_statement = [
        &resolved.acquire,
        &resolved.takeover,
        &resolved.renew,
        &resolved.release,
        &resolved.fence,
        &resolved.shard_fence,
    ];
    for ((guarded, modelled), kinds) in STATEMENTS.into_iter().zip(by_statement) {
        let listed: Vec<&str> = guarded.guards.iter().map(|g| g.name).collect();
        let mut names: Vec<&str> = modelled.iter().map(|(n, _)| *n).collect();
        let mut sorted = listed.clone();
        sorted.sort_unstable();
        names.sort_unstable();
        assert_eq!(sorted, names, "{}", guarded.statement);
        assert_eq!(kinds.len(), listed.len(), "{}", guarded.statement);
    }
}

fn doctored(guards: &'static [Guard]) -> Guarded {
    Guarded {
        guards,
        ..leader_core::lease::RENEW_GUARDS
    }
}

#[test]
fn a_guard_added_to_a_list_without_modelling_it_is_refused() {
    const EXTRA: &[Guard] = &[
        Guard {
            name: "holds_token",
            sql: "holder_token = :token",
        },
        Guard {
            name: "unexpired",
            sql: "expires_at > now()",
        },
        Guard {
            name: "unpaused",
            sql: "paused_at IS NULL",
        },
    ];
    let err = resolve_statement(&doctored(EXTRA), guards::RENEW).unwrap_err();
    assert!(
        err.contains("`unpaused`") && err.contains("does not evaluate"),
        "{err}"
    );
}

#[test]
fn a_guard_removed_from_a_list_but_still_modelled_is_refused() {
    const FEWER: &[Guard] = &[Guard {
        name: "holds_token",
        sql: "holder_token = :token",
    }];
    let err = resolve_statement(&doctored(FEWER), guards::RENEW).unwrap_err();
    assert!(
        err.contains("`unexpired`") && err.contains("no longer has"),
        "{err}"
    );
}

#[test]
fn each_bug_that_drops_a_guard_drops_a_listed_one() {
    for bug in Bug::ALL {
        let Some((statement, name)) = bug.dropped_guard() else {
            continue;
        };
        let (guarded, _) = STATEMENTS
            .iter()
            .find(|(g, _)| g.statement == statement)
            .unwrap_or_else(|| panic!("{bug}: no statement {statement}"));
        assert!(
            guarded.guards.iter().any(|g| g.name == name),
            "{bug}: {statement} has no guard {name}"
        );
        let full = Guards::resolve(&bug.scenario().with_bug(bug).clone()).expect("resolves");
        let correct = Guards::resolve(&Config::operator_and_failover(2)).expect("resolves");
        assert_ne!(full, correct, "{bug} changes the guards");
    }
}

/// The tick history's part of ACQUIRE and RELEASE (issue 42) is spliced in once, after the CTE
/// whose WHERE the guards are, reads only what the lease CTEs return (no placeholder, no lease
/// table) and writes only `leader_tick_history`: so the statements decide exactly what their
/// guards decide, with or without it, and the model need not know of it.
#[test]
fn the_tick_history_part_writes_only_the_history_and_reads_no_lease_row() {
    use leader_core::lease::{ACQUIRE_GUARDS, ACQUIRE_HISTORY, RELEASE_GUARDS, RELEASE_HISTORY};
    for (guarded, part) in [
        (&ACQUIRE_GUARDS, ACQUIRE_HISTORY),
        (&RELEASE_GUARDS, RELEASE_HISTORY),
    ] {
        let statement = guarded.statement;
        assert_eq!(
            guarded.sql.matches(":tick_history").count(),
            1,
            "{statement}: the history is spliced in once"
        );
        assert!(
            guarded.sql.find(":tick_history") > guarded.sql.find(guarded.where_after),
            "{statement}: the history comes after the guarded CTE"
        );
        let text = normalize(part);
        let placeholders: Vec<&str> = text
            .match_indices(':')
            .filter(|&(i, _)| {
                let before = text[..i].ends_with(':');
                let after = text[i + 1..].starts_with(|c: char| c.is_ascii_lowercase());
                !before && after && !text[i + 1..].starts_with(':')
            })
            .map(|(i, _)| &text[i..(i + 20).min(text.len())])
            .collect();
        assert!(
            placeholders.is_empty(),
            "{statement}: the history reads only the lease CTEs' output: {placeholders:?}"
        );
        assert!(
            !text.contains("leader_leases"),
            "{statement}: the history reads no lease row itself"
        );
        let text = text.as_str();
        let mut targets: Vec<&str> = Vec::new();
        for verb in ["INSERT INTO ", "UPDATE "] {
            for (i, _) in text.match_indices(verb) {
                // `ON CONFLICT ... DO UPDATE` updates the row the INSERT names.
                if !text[..i].ends_with("DO ") {
                    targets.extend(text[i + verb.len()..].split([' ', '(']).next());
                }
            }
        }
        assert!(!targets.is_empty(), "{statement}: {text}");
        assert!(
            targets.iter().all(|t| *t == "leader_tick_history"),
            "{statement}: the history writes only leader_tick_history: {targets:?}"
        );
    }
}
