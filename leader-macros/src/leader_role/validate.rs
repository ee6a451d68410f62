//! Checks a `#[leader_role]` job: role name, interval, signature, and the database's role list.

use std::path::PathBuf;
use std::time::Duration;

use syn::{FnArg, Ident, LitStr, ReturnType, Type};

use super::parse::{Args, JobFn};
use crate::errors::Errors;
use leader_role_name::{MAX_SHARDS, ROLE_CONSTRAINT as CONSTRAINT};
use leader_schema::FILE_NAME;

/// The signature a job must have, for error messages.
const EXPECTED: &str = "a leader job is `async fn name(tick: TickContext) -> Result<(), E>`, \
                        or `async fn name(tick: TickContext, State(app): State<App>) -> \
                        Result<(), E>` to receive the state given to the builder's `with_state`";

/// A checked job, ready to expand.
pub struct Job<'a> {
    pub func: &'a JobFn,
    /// The role name and its literal (the constant's ident is spanned at it).
    pub role: LitStr,
    /// `BILLING` for `billing`.
    pub const_ident: Ident,
    pub schedule: ScheduleArg,
    /// The prepared schema's files, when the role was pinned to it: the expansion includes
    /// them, so an edit re-runs the check.
    pub pinned_by: Vec<PathBuf>,
    /// `T` of a second parameter `State<T>`.
    pub state: Option<Type>,
    /// `shards = N`, checked to be 1 to [`MAX_SHARDS`].
    pub shard_count: Option<u32>,
}

/// The role's schedule, checked.
pub enum ScheduleArg {
    /// `every = "1h"`.
    Every { interval: Duration },
    /// `cron = "…"`, `tz = "…"` (UTC when absent), `missed = "…"` (latest when absent).
    Cron {
        expr: String,
        zone: String,
        missed: leader_schedule::Missed,
    },
}

impl ScheduleArg {
    /// How the role constant's doc says when the job runs: the schedule's text, as the runtime
    /// shows it (`every 1h`, or the cron schedule's).
    pub fn describe(&self) -> String {
        match self {
            ScheduleArg::Every { interval } => {
                leader_schedule::Schedule::every(*interval).to_string()
            }
            ScheduleArg::Cron { expr, zone, missed } => {
                leader_schedule::CronSchedule::new(expr, zone)
                    .map(|cron| cron.missed(*missed).to_string())
                    .unwrap_or_else(|_| format!("cron {expr:?} in {zone}"))
            }
        }
    }
}

/// The role constant's name for a valid role name: `BILLING` for `billing`.
pub fn role_constant(role: &LitStr) -> Option<Ident> {
    role_rule(&role.value()).ok()?;
    Some(Ident::new(&role.value().to_ascii_uppercase(), role.span()))
}

pub fn validate(args: syn::Result<Args>, func: &JobFn) -> syn::Result<Job<'_>> {
    let mut errors = Errors::new();
    errors.check(signature(func));
    let args = match args {
        Ok(args) => args,
        Err(e) => {
            errors.push(e);
            return Err(errors.finish().expect_err("an error was pushed"));
        }
    };
    let role = args.role.value();
    let role_ok =
        errors.check(role_rule(&role).map_err(|rule| syn::Error::new(args.role.span(), rule)));
    let schedule = schedule(&args, &mut errors);
    let shard_count = args
        .shards
        .as_ref()
        .and_then(|shards| errors.check(shard_count(shards)));
    let pinned_by = match role_ok {
        Some(()) => errors
            .check(pin_to_schema(
                &args.role,
                args.migrations.as_ref(),
                shard_count,
            ))
            .unwrap_or_default(),
        None => Vec::new(),
    };
    errors.finish()?;
    Ok(Job {
        func,
        const_ident: role_constant(&args.role).expect("the role name is valid"),
        role: args.role,
        schedule: schedule.expect("no error, so the schedule is checked"),
        pinned_by,
        state: func.sig.inputs.iter().nth(1).and_then(state_type),
        shard_count,
    })
}

/// `shards = N`: 1 to [`MAX_SHARDS`].
fn shard_count(shards: &syn::LitInt) -> syn::Result<u32> {
    match shards.base10_parse::<u32>() {
        Ok(count) if (1..=MAX_SHARDS).contains(&count) => Ok(count),
        _ => Err(syn::Error::new(
            shards.span(),
            format!(
                "`shards = {shards}` is out of range: a sharded role has 1 to {MAX_SHARDS} shards"
            ),
        )),
    }
}

/// The role's schedule from `every`, or from `cron`, `tz` and `missed`; each problem spanned at
/// its option.
fn schedule(args: &Args, errors: &mut Errors) -> Option<ScheduleArg> {
    let error = |lit: &LitStr, message: String| syn::Error::new(lit.span(), message);
    match (&args.every, &args.cron) {
        (Some(_), Some(cron)) => {
            errors.push(error(
                cron,
                "`every` and `cron` are both given: a role runs on one schedule; keep `every = …` \
                 for an interval or `cron = …` for calendar instants"
                    .to_owned(),
            ));
            None
        }
        (None, None) => {
            errors.push(syn::Error::new(
                args.role.span(),
                "the role's schedule is missing: add `every = \"1h\"` (an interval) or \
                 `cron = \"0 2 * * *\"` (calendar instants, with `tz = \"Europe/Berlin\"`) after \
                 the role name",
            ));
            None
        }
        (Some(every), None) => {
            for lit in [&args.tz, &args.missed].into_iter().flatten() {
                errors.push(error(
                    lit,
                    "`tz` and `missed` apply to calendar schedules: use them with `cron = …`, \
                     not with `every`"
                        .to_owned(),
                ));
            }
            let interval = errors.check(
                leader_schedule::parse_interval(&every.value()).map_err(|_| {
                    error(
                        every,
                        format!(
                            "`every = {:?}` is not an interval: write {}",
                            every.value(),
                            leader_schedule::INTERVAL_FORMS
                        ),
                    )
                }),
            )?;
            Some(ScheduleArg::Every { interval })
        }
        (None, Some(cron)) => {
            let expr = cron.value();
            let parsed = errors.check(
                leader_schedule::CronSchedule::new(&expr, "UTC")
                    .map_err(|problem| error(cron, problem.to_string())),
            );
            let zone = match &args.tz {
                // A valid expression, so that only the zone can be wrong.
                Some(tz) => errors
                    .check(
                        leader_schedule::CronSchedule::new("* * * * *", &tz.value())
                            .map_err(|problem| error(tz, problem.to_string())),
                    )
                    .map(|_| tz.value()),
                None => Some("UTC".to_owned()),
            };
            let missed = match &args.missed {
                Some(missed) => errors.check(
                    missed
                        .value()
                        .parse::<leader_schedule::Missed>()
                        .map_err(|problem| error(missed, problem.to_string())),
                ),
                None => Some(leader_schedule::Missed::default()),
            };
            parsed?;
            Some(ScheduleArg::Cron {
                expr,
                zone: zone?,
                missed: missed?,
            })
        }
    }
}

/// The role-name rule (`leader-role-name`, as `Role::from_static` applies it), as a message when
/// broken.
pub fn role_rule(name: &str) -> Result<(), String> {
    use leader_role_name::{Broken, RULE};

    match leader_role_name::check(name) {
        Ok(()) => Ok(()),
        Err(Broken::Empty) => Err(format!("the role name is empty: {RULE}")),
        Err(Broken::TooLong) => Err(format!(
            "the role name is {} bytes long: {RULE}",
            name.len()
        )),
        Err(Broken::BadStart | Broken::BadChar { .. }) => {
            Err(format!("`{name}` is not a valid role name: {RULE}"))
        }
    }
}

/// Checks the signature's shape: `async fn name(tick: T) -> R`. That `T` is `TickContext` and
/// `R` a `Result<(), E>` is left to rustc, through bounds the expansion spans at those types, so
/// aliases and renamed imports work.
fn signature(func: &JobFn) -> syn::Result<()> {
    let sig = &func.sig;
    let mut errors = Errors::new();
    if sig.asyncness.is_none() {
        errors.push(syn::Error::new(
            sig.fn_token.span,
            format!("the `async` keyword is missing: {EXPECTED}"),
        ));
    }
    if let Some(unsafety) = sig.unsafety {
        errors.push(syn::Error::new(
            unsafety.span,
            format!("a leader job cannot be `unsafe`: {EXPECTED}"),
        ));
    }
    if !sig.generics.params.is_empty() || sig.generics.where_clause.is_some() {
        errors.push(syn::Error::new_spanned(
            &sig.generics,
            format!("a leader job takes no generic parameters: {EXPECTED}"),
        ));
    }
    let mut inputs = sig.inputs.iter().peekable();
    if let Some(FnArg::Receiver(receiver)) = inputs.peek() {
        errors.push(syn::Error::new_spanned(
            receiver,
            format!("a leader job is a free function, not a method: {EXPECTED}"),
        ));
        inputs.next();
    }
    match inputs.next() {
        None => errors.push(syn::Error::new(
            sig.paren_token.span.join(),
            format!("the tick context parameter is missing: {EXPECTED}"),
        )),
        Some(FnArg::Receiver(receiver)) => errors.push(syn::Error::new_spanned(
            receiver,
            format!("a leader job is a free function, not a method: {EXPECTED}"),
        )),
        Some(FnArg::Typed(arg)) => {
            if let Type::Reference(_) = &*arg.ty {
                errors.push(syn::Error::new_spanned(
                    &arg.ty,
                    format!("a leader job takes its `TickContext` by value: {EXPECTED}"),
                ));
            }
        }
    }
    if let Some(second) = inputs.next()
        && state_type(second).is_none()
    {
        errors.push(syn::Error::new_spanned(
            second,
            format!(
                "a leader job's second parameter is the application's state, `State<T>`: {EXPECTED}"
            ),
        ));
    }
    for extra in inputs {
        errors.push(syn::Error::new_spanned(
            extra,
            format!("a leader job takes the tick context and at most the state: {EXPECTED}"),
        ));
    }
    match &sig.output {
        ReturnType::Default => errors.push(syn::Error::new(
            sig.paren_token.span.close(),
            format!("the return type is missing: {EXPECTED}"),
        )),
        ReturnType::Type(..) => {}
    }
    errors.finish()
}

/// `T` for a parameter of type `State<T>` (any path ending in `State`; the expansion has rustc
/// check it is leader-runtime's, at the parameter's type).
fn state_type(arg: &FnArg) -> Option<Type> {
    let FnArg::Typed(typed) = arg else {
        return None;
    };
    let Type::Path(path) = &*typed.ty else {
        return None;
    };
    let last = path.path.segments.last()?;
    if last.ident != "State" {
        return None;
    }
    let syn::PathArguments::AngleBracketed(args) = &last.arguments else {
        return None;
    };
    match args.args.iter().collect::<Vec<_>>().as_slice() {
        [syn::GenericArgument::Type(ty)] => Some(ty.clone()),
        _ => None,
    }
}

/// Checks the role against the crate's prepared schema, when it has one: the role CHECK lists
/// it, and its rows have the shard count the job is led with. The schema's files, if any.
fn pin_to_schema(
    role: &LitStr,
    dir: Option<&LitStr>,
    shards: Option<u32>,
) -> syn::Result<Vec<PathBuf>> {
    let prepared = crate::prepared::load(
        role.span(),
        dir,
        crate::prepared::Needed::IfPresent,
        "leader_role",
    )?;
    let Some(prepared) = prepared else {
        return Ok(Vec::new());
    };
    let schema = prepared.schema.prepared();
    let name = role.value();
    let folder = &schema.migrations;
    if let Some(roles) = &schema.role_check
        && !roles.contains(&name)
    {
        let listed = roles
            .iter()
            .map(|r| format!("'{r}'"))
            .collect::<Vec<_>>()
            .join(", ");
        let with_new = if listed.is_empty() {
            format!("'{name}'")
        } else {
            format!("{listed}, '{name}'")
        };
        return Err(syn::Error::new(
            role.span(),
            format!(
                "role `{name}` is not registered in the database: after the migrations in \
                 `{folder}/`, `{CONSTRAINT}` lists only {} (`{FILE_NAME}`). `leaderctl roles add \
                 {name} --dir {folder}` writes the migration that registers it: the CHECK \
                 re-created as `CHECK (role IN ({with_new}))` and its row, `INSERT INTO \
                 leader_leases (role, holder_token) VALUES ('{name}', leader_seed_token()) ON \
                 CONFLICT DO NOTHING`; then run `leaderctl schema prepare`",
                if listed.is_empty() {
                    "no role".to_owned()
                } else {
                    listed
                },
            ),
        ));
    }
    let led_with = shards.unwrap_or(1);
    if let Some(rows) = schema.role_shards.iter().find(|r| r.role == name)
        && rows.shard_count != led_with
    {
        let option = if led_with == 1 {
            "no `shards`".to_owned()
        } else {
            format!("`shards = {led_with}`")
        };
        return Err(syn::Error::new(
            role.span(),
            format!(
                "role `{name}` has {} shard(s) in the database after the migrations in \
                 `{folder}/` (`{FILE_NAME}`), and this job leads it with {option}: the runtime \
                 would refuse it at start-up. `leaderctl roles reshard {name} {led_with} --dir \
                 {folder}` writes the migration that gives it {led_with} (then run `leaderctl \
                 schema prepare`), or lead it with `shards = {}`",
                rows.shard_count, rows.shard_count
            ),
        ));
    }
    Ok(prepared.includes())
}

#[cfg(test)]
mod tests {
    use super::role_rule;

    #[test]
    fn role_names() {
        for good in [
            "billing",
            "a",
            "webhook_outbox",
            "r2d2",
            "a_",
            &"a".repeat(63),
        ] {
            assert_eq!(role_rule(good), Ok(()), "{good:?}");
        }
        for bad in [
            "",
            "Billing",
            "1abc",
            "_a",
            "bill-ing",
            "bill ing",
            "café",
            &"a".repeat(64),
        ] {
            assert!(role_rule(bad).is_err(), "{bad:?}");
        }
        assert!(
            role_rule("Billing")
                .unwrap_err()
                .contains("starts with a lowercase ASCII letter")
        );
    }
}
