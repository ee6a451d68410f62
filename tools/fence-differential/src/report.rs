//! The report of a run, as Markdown: totals per class, false rejections overall and by construct
//! tag, the checker's refusals by reason, PostgreSQL's refusals, and the minimal reproducers of
//! every accepted statement that acted as the superseded leader.

use std::fmt::{self, Write as _};

use crate::outcome::{Class, Counts, Outcome};
use crate::probe::Plan;

/// The whole report; its sections start at `##`.
pub fn markdown(outcome: &Outcome) -> String {
    let mut w = String::new();
    write(&mut w, outcome).expect("writing to a String cannot fail");
    w
}

fn write(w: &mut String, outcome: &Outcome) -> fmt::Result {
    totals(w, outcome)?;
    false_rejections(w, outcome)?;
    refusals(w, outcome)?;
    pg_errors(w, outcome)?;
    reproducers(w, outcome)
}

/// Totals per class, the time taken, and how many accepted claims acted live.
fn totals(w: &mut String, outcome: &Outcome) -> fmt::Result {
    let total = &outcome.total;
    let settings = &outcome.settings;
    writeln!(w, "## Totals\n")?;
    writeln!(
        w,
        "{} statements from seed {}, each checked by `leader_fence_check::check_with` (given the \
         fixture's schema as PostgreSQL's catalog reports it, as `#[fenced]` reads a crate's \
         `leader-schema.json`) and run as the superseded leader{}{}{}, in {:.1} s ({:.1} ms a statement); shrinking took {:.1} s more.\n",
        total.total(),
        settings.seed,
        if settings.live {
            " (and, where it did nothing, as the live one)"
        } else {
            ""
        },
        if settings.index_scans {
            ", with `enable_seqscan = off` (`--index-scans`: the plans read the tables through \
             their indexes, as on large tables)"
        } else {
            ""
        },
        if settings.forced_plans {
            let plans: Vec<&str> = Plan::FORCED.iter().map(|plan| plan.name()).collect();
            format!(
                "; a statement that did nothing under the plan PostgreSQL chose was run again \
                 under each forced plan ({}: `SET LOCAL` of the planner's `enable_*` settings), \
                 and counts as acting if it acted under any",
                plans.join(", ")
            )
        } else {
            " under the plan PostgreSQL chose only (`--chosen-plan-only`)".to_owned()
        },
        outcome.cases_time.as_secs_f64(),
        outcome.per_case().as_secs_f64() * 1e3,
        outcome.shrink_time.as_secs_f64()
    )?;
    writeln!(w, "| class | statements | share |\n|---|---:|---:|")?;
    for class in Class::ALL {
        writeln!(
            w,
            "| `{}` | {} | {} |",
            class.name(),
            total.of(class),
            percent(total.of(class), total.total())
        )?;
    }
    writeln!(w)?;
    if settings.forced_plans {
        forced_plans(w, outcome)?;
    }
    let reads = &outcome.reads_returning_rows;
    writeln!(
        w,
        "A claim is a statement that changes or locks rows, or calls a function (the checker's \
         contract): it must not return, change or lock a row as the superseded leader. A \
         statement that only reads must not change or lock one; {} such reads returned rows as \
         the superseded leader ({} of them accepted), which {}.\n",
        reads.total(),
        reads.of(Class::AcceptedSafe) + reads.of(Class::AcceptedUnsafe),
        if settings.reads_are_claims {
            "this run counts as acting (`--reads-are-claims`)"
        } else {
            "the contract allows (`--reads-are-claims` counts them as acting)"
        }
    )?;
    if settings.live {
        writeln!(
            w,
            "As the live leader, {} of the {} accepted-safe statements ({}) returned, changed or \
             locked rows: the accepted claims are not empty for want of a fence that is ever \
             true.\n",
            total.accepted_safe_live_acting,
            total.of(Class::AcceptedSafe),
            percent(
                total.accepted_safe_live_acting,
                total.of(Class::AcceptedSafe)
            )
        )?;
    }
    Ok(())
}

/// The statements that acted only under a forced plan, and the false-rejection share a run of
/// the chosen plan alone would have counted.
fn forced_plans(w: &mut String, outcome: &Outcome) -> fmt::Result {
    let forced: usize = outcome.acted_under.values().map(Counts::total).sum();
    let accepted: usize = outcome
        .acted_under
        .values()
        .map(|counts| counts.of(Class::AcceptedUnsafe))
        .sum();
    writeln!(
        w,
        "{forced} statements did nothing as the superseded leader under the plan PostgreSQL \
         chose and acted under a forced one ({accepted} of them accepted): the contract holds \
         for every plan, so they count as unsafe. By the first forced plan they acted under:\n"
    )?;
    writeln!(
        w,
        "| plan | statements | refused | accepted |\n|---|---:|---:|---:|"
    )?;
    for (plan, counts) in &outcome.acted_under {
        writeln!(
            w,
            "| {} | {} | {} | {} |",
            plan.name(),
            counts.total(),
            counts.of(Class::RefusedUnsafe),
            counts.of(Class::AcceptedUnsafe)
        )?;
    }
    let chosen = outcome.chosen_plan_only();
    writeln!(
        w,
        "\nCounted under the chosen plan alone, as runs before 2026-12-07 counted, {} of {} \
         statements would be safe, {} of them refused ({}).\n",
        chosen.safe(),
        chosen.total(),
        chosen.of(Class::RefusedSafe),
        share(&chosen)
    )
}

/// The share of safe statements refused, overall and by construct.
fn false_rejections(w: &mut String, outcome: &Outcome) -> fmt::Result {
    let total = &outcome.total;
    let settings = &outcome.settings;
    writeln!(w, "## False rejections\n")?;
    writeln!(
        w,
        "Of the {} statements that did nothing as the superseded leader, the checker refused {} \
         ({}).{}\n",
        total.safe(),
        total.of(Class::RefusedSafe),
        share(total),
        if settings.live {
            let acting = total.refused_safe_live_acting + total.accepted_safe_live_acting;
            format!(
                " Of those, {} acted as the live leader (a claim someone could want to write); \
                 the rest did nothing either way. Among the safe statements that acted as the \
                 live leader, the checker refused {} of {} ({}).",
                total.refused_safe_live_acting,
                total.refused_safe_live_acting,
                acting,
                percent(total.refused_safe_live_acting, acting)
            )
        } else {
            String::new()
        }
    )?;
    writeln!(
        w,
        "By construct: a statement counts under every construct it uses; *safe* means it did \
         nothing as the superseded leader, *false rejection* is the share of those the checker \
         refused{}.\n",
        if settings.live {
            ", *acting live* how many of the refused ones acted as the live leader"
        } else {
            ""
        }
    )?;
    writeln!(
        w,
        "| construct | statements | safe | refused of the safe | false rejection | acting live \
         | accepted unsafe | pg_error |"
    )?;
    writeln!(w, "|---|---:|---:|---:|---:|---:|---:|---:|")?;
    for (tag, counts) in &outcome.by_tag {
        writeln!(
            w,
            "| `{}` | {} | {} | {} | {} | {} | {} | {} |",
            tag.name(),
            counts.total(),
            counts.safe(),
            counts.of(Class::RefusedSafe),
            share(counts),
            counts.refused_safe_live_acting,
            counts.of(Class::AcceptedUnsafe),
            counts.of(Class::PgError)
        )?;
    }
    let unseen = outcome.unseen_tags();
    if !unseen.is_empty() {
        let names: Vec<&str> = unseen.iter().map(|tag| tag.name()).collect();
        writeln!(w, "\nNo statement used: `{}`.", names.join("`, `"))?;
    }
    writeln!(w)?;
    Ok(())
}

/// The refusals by reason, each with its shortest false rejection.
fn refusals(w: &mut String, outcome: &Outcome) -> fmt::Result {
    let settings = &outcome.settings;
    writeln!(w, "## Why the checker refused\n")?;
    writeln!(
        w,
        "The refused statements by the reason of the checker's first error (less the place, \
         the table and the fix), most false rejections first.\n"
    )?;
    writeln!(
        w,
        "| # | reason | refused | unsafe | safe (false rejections) | acting live |\n\
         |---:|---|---:|---:|---:|---:|"
    )?;
    let mut reasons: Vec<_> = outcome.refusals.iter().collect();
    reasons.sort_by_key(|(_, refusals)| {
        std::cmp::Reverse((
            refusals.counts.of(Class::RefusedSafe),
            refusals.counts.total(),
        ))
    });
    for (i, (reason, refusals)) in reasons.iter().enumerate() {
        let counts = &refusals.counts;
        writeln!(
            w,
            "| {} | {} | {} | {} | {} | {} |",
            i + 1,
            reason.replace('|', "\\|"),
            counts.total(),
            counts.of(Class::RefusedUnsafe),
            counts.of(Class::RefusedSafe),
            counts.refused_safe_live_acting
        )?;
    }
    writeln!(w)?;
    if settings.live {
        writeln!(
            w,
            "The shortest false rejection of each reason that acted as the live leader:\n"
        )?;
        for (i, (_, refusals)) in reasons.iter().enumerate() {
            if let Some(sql) = &refusals.shortest_false {
                writeln!(w, "{}. `{sql}`", i + 1)?;
            }
        }
        writeln!(w)?;
    }
    Ok(())
}

/// The sampled false rejections of each reason that acted as the live leader, most false
/// rejections first (`--false-rejections`).
pub fn false_rejection_samples(outcome: &Outcome) -> String {
    let mut reasons: Vec<_> = outcome
        .refusals
        .iter()
        .filter(|(_, refusals)| !refusals.false_samples.is_empty())
        .collect();
    reasons.sort_by_key(|(_, refusals)| std::cmp::Reverse(refusals.counts.of(Class::RefusedSafe)));
    let mut page = String::from(
        "# False rejections that acted as the live leader, by reason\n\n\
         Written by `fence-differential --false-rejections`: the first few of each reason.\n",
    );
    for (reason, refusals) in reasons {
        page += &format!(
            "\n## {} false rejections: {reason}\n\n",
            refusals.counts.of(Class::RefusedSafe)
        );
        for sql in &refusals.false_samples {
            page += &format!("- `{sql}`\n");
        }
    }
    page
}

/// What PostgreSQL refused, by SQLSTATE.
fn pg_errors(w: &mut String, outcome: &Outcome) -> fmt::Result {
    writeln!(w, "## PostgreSQL's refusals\n")?;
    writeln!(
        w,
        "Statements PostgreSQL refused as the superseded leader (out of the figures above).\n"
    )?;
    writeln!(w, "| SQLSTATE | statements | for example |\n|---|---:|---|")?;
    let mut states: Vec<_> = outcome.sqlstates.iter().collect();
    states.sort_by_key(|(_, (count, _))| std::cmp::Reverse(*count));
    for (state, (count, message)) in states {
        writeln!(w, "| {state} | {count} | {} |", message.replace('|', "\\|"))?;
    }
    writeln!(w)?;
    Ok(())
}

/// The accepted statements that acted: minimal reproducers, then the rest.
fn reproducers(w: &mut String, outcome: &Outcome) -> fmt::Result {
    let total = &outcome.total;
    writeln!(w, "## Accepted, yet acting as the superseded leader\n")?;
    let unsafe_count = total.of(Class::AcceptedUnsafe);
    if unsafe_count == 0 {
        writeln!(w, "None.")?;
        return Ok(());
    }
    writeln!(
        w,
        "{unsafe_count} statements. Minimal reproducers (proptest's shrinking, each step re-run \
         on PostgreSQL), each with the number of accepted-unsafe statements that use all of its \
         constructs but those every claim of its kind may have (the statement's kind, the \
         fence, a view or sub-select read, a constant `LIMIT`):\n"
    )?;
    for (i, reproducer) in outcome.reproducers.iter().enumerate() {
        let tags: Vec<&str> = reproducer.tags.iter().map(|tag| tag.name()).collect();
        writeln!(
            w,
            "{}. {}{} ({} alike; {} shrink steps from {} characters); constructs `{}`\n\n   \
             ```sql\n   {}\n   ```\n",
            i + 1,
            reproducer.effect,
            reproducer
                .acted_under
                .map_or(String::new(), |plan| format!(" under {}", plan.name())),
            reproducer.alike,
            reproducer.steps,
            reproducer.original.len(),
            tags.join("`, `"),
            reproducer.sql
        )?;
    }
    if !outcome.unshrunk.is_empty() {
        writeln!(
            w,
            "Not like any of those, and not shrunk (the {} shrinks were spent):\n",
            outcome.settings.max_shrinks
        )?;
        for (sql, effect) in &outcome.unshrunk {
            writeln!(w, "* {effect}: `{sql}`")?;
        }
        writeln!(w)?;
    }
    Ok(())
}

fn share(counts: &Counts) -> String {
    counts
        .false_rejection()
        .map_or("–".to_owned(), |share| format!("{:.1} %", share * 100.0))
}

fn percent(part: usize, whole: usize) -> String {
    if whole == 0 {
        "–".to_owned()
    } else {
        format!("{:.1} %", part as f64 * 100.0 / whole as f64)
    }
}
