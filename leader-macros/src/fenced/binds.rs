//! Rule 4: the placeholders of each fence call are bound to the fence parameter's `.role()` and
//! `.token()` (and a shard's fence's to `.shard_index()` and `.shard_count()`), and the call's
//! form is the one the parameter's type proves: `leader_fence($i, $j)` for a `Fence`,
//! `leader_fence($i, $k, $c, $j)` for a `ShardFence`.

use leader_fence_check::FenceCall;
use proc_macro2::Span;
use syn::{Expr, Ident};

use super::sends::{Binds, SqlSend, Via, strip};

/// The errors for the binds of `fences`, the fence calls of `send`'s SQL; `at` places an error
/// that has no bind to point at.
pub fn check(
    send: &SqlSend,
    fences: &[FenceCall],
    fence: &Ident,
    sharded: bool,
    at: impl Fn(&FenceCall) -> Span,
) -> Vec<syn::Error> {
    if fences.is_empty() {
        return Vec::new();
    }
    let binds = match (&send.binds, send.via) {
        (Binds::Unseen(span), _) => {
            return vec![syn::Error::new(
                *span,
                format!(
                    "`{}` takes its binds as `PgArguments`, where `#[fenced]` cannot see what is \
                     bound to the fence: write `sqlx::query(\"… AND leader_fence($1, $2)\")\
                     .bind({fence}.role()).bind({fence}.token())`",
                    send.callee
                ),
            )];
        }
        (Binds::Known(_), Via::Simple) => {
            return vec![syn::Error::new(
                send.span,
                format!(
                    "`{}` sends SQL over the simple query protocol, which has no bind \
                     parameters, so `leader_fence($i, $j)` cannot be bound to the fence: write \
                     `sqlx::query(\"… AND leader_fence($1, $2)\").bind({fence}.role())\
                     .bind({fence}.token())`",
                    send.callee
                ),
            )];
        }
        (Binds::Known(binds), Via::Prepared) => binds,
    };
    let is_macro = send.callee.ends_with('!');
    let mut errors = Vec::new();
    for call in fences {
        let shown = match call.shard {
            Some(shard) => format!(
                "leader_fence(${}, ${}, ${}, ${})",
                call.role, shard.index, shard.count, call.token
            ),
            None => format!("leader_fence(${}, ${})", call.role, call.token),
        };
        match (sharded, call.shard.is_some()) {
            (true, false) => {
                errors.push(syn::Error::new(
                    at(call),
                    format!(
                        "`{fence}` is a shard's fence, and `{shown}` proves no shard (it is false \
                         for a sharded role): write `leader_fence($1, $2, $3, $4) AND \
                         leader_shard_of(key, $3) = $2` and bind `{fence}.role()`, \
                         `{fence}.shard_index()`, `{fence}.shard_count()`, `{fence}.token()`"
                    ),
                ));
                continue;
            }
            (false, true) => {
                errors.push(syn::Error::new(
                    at(call),
                    format!(
                        "`{shown}` is a shard's fence, and `{fence}` is a `Fence`, which carries \
                         no shard: take a `ShardFence` parameter (`Fence::shard_fence` of a \
                         shard's grant), or write `leader_fence($1, $2)` for an unsharded role"
                    ),
                ));
                continue;
            }
            _ => {}
        }
        let mut bound = vec![(call.role, "role"), (call.token, "token")];
        if let Some(shard) = call.shard {
            bound.extend([(shard.index, "shard_index"), (shard.count, "shard_count")]);
        }
        bound.sort_unstable();
        if binds.len() < bound[0].0 {
            // None is bound: one error, not one per placeholder at the same place.
            let how = if is_macro {
                let each: Vec<String> = bound
                    .iter()
                    .map(|(n, what)| format!("`{fence}.{what}()` as argument {n}"))
                    .collect();
                format!("pass {} after the SQL", listed(&each))
            } else {
                let each: Vec<String> = bound
                    .iter()
                    .map(|(n, what)| {
                        format!("`.bind({fence}.{what}())` as the {} bind", ordinal(*n))
                    })
                    .collect();
                format!("add {}", listed(&each))
            };
            errors.push(syn::Error::new(
                at(call),
                format!("`{shown}` is not bound to the fence: {how}"),
            ));
            continue;
        }
        for (n, what) in bound {
            let found = binds.get(n - 1);
            if found.is_some_and(|arg| is_fence_method(arg, fence, what)) {
                continue;
            }
            let wanted = format!("{fence}.{what}()");
            let (place, how) = if is_macro {
                (
                    format!("argument {n} after the SQL"),
                    format!("pass `{wanted}` as argument {n} after the SQL"),
                )
            } else {
                (
                    format!("{} `.bind(..)`", ordinal(n)),
                    format!("make the {} `.bind(..)` `.bind({wanted})`", ordinal(n)),
                )
            };
            let found_text = match found {
                Some(arg) => format!("the {place} is `{}`", show(arg)),
                None => format!("there is no {place}"),
            };
            let message = format!(
                "`${n}` in `{shown}` is the fence's {} and must be bound to `{wanted}`, but \
                 {found_text}: {how}",
                what.replace('_', " ")
            );
            errors.push(match found {
                Some(arg) => syn::Error::new_spanned(arg, message),
                None => syn::Error::new(at(call), message),
            });
        }
    }
    errors
}

/// The placeholders `send` already binds to the fence's role and token, for the fix the
/// messages suggest.
pub fn hints(send: &SqlSend, fence: &Ident) -> leader_fence_check::Hints<'static> {
    let Binds::Known(binds) = &send.binds else {
        return leader_fence_check::Hints::default();
    };
    let position = |what| binds.iter().position(|b| is_fence_method(b, fence, what));
    match (position("role"), position("token")) {
        (Some(role), Some(token)) => leader_fence_check::Hints::fence_binds(role + 1, token + 1),
        _ => leader_fence_check::Hints::default(),
    }
}

/// Whether `arg` is `fence.role()` (or `.token()`), allowing `&`, `*` and parentheses.
fn is_fence_method(arg: &Expr, fence: &Ident, method: &str) -> bool {
    match strip(arg) {
        Expr::MethodCall(call) => {
            call.method == method
                && call.args.is_empty()
                && call.turbofish.is_none()
                && matches!(strip(&call.receiver), Expr::Path(p) if p.qself.is_none() && p.path.is_ident(fence))
        }
        _ => false,
    }
}

/// Rust code as a person writes it (token streams print with spaces everywhere).
pub fn show(expr: &Expr) -> String {
    let mut text = quote::ToTokens::to_token_stream(expr).to_string();
    for (from, to) in [
        (" :: ", "::"),
        (":: ", "::"),
        (" . ", "."),
        (" (", "("),
        ("( ", "("),
        (" )", ")"),
        (" ,", ","),
        ("& ", "&"),
        ("* ", "*"),
        (" !", "!"),
    ] {
        text = text.replace(from, to);
    }
    text
}

/// `a`, `a and b`, `a, b and c`.
fn listed(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

fn ordinal(n: usize) -> String {
    let suffix = match (n % 10, n % 100) {
        (_, 11..=13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    };
    format!("{n}{suffix}")
}

#[cfg(test)]
mod tests {
    use super::ordinal;

    #[test]
    fn ordinals() {
        assert_eq!(ordinal(1), "1st");
        assert_eq!(ordinal(2), "2nd");
        assert_eq!(ordinal(3), "3rd");
        assert_eq!(ordinal(11), "11th");
        assert_eq!(ordinal(22), "22nd");
    }
}
