//! What a function call may call, as PostgreSQL resolves it: the schema's functions of that name
//! (in the schema written, or any), that take that many arguments (defaults and `VARIADIC`
//! counted), and whose argument types accept the types the SQL shows (a literal's, a cast's, a
//! column's from the schema, a table's row). Where the SQL does not show a type, any argument
//! type accepts it, so the candidates are all the functions PostgreSQL may pick, and more: an
//! answer is one for each of them. Where any candidate is `VOLATILE` the call counts as
//! `VOLATILE`.

use leader_schema::model::{Function, FunctionKind, TypeKind, Volatility};

use crate::schema::{Schema, shown};

/// What the SQL shows of an argument's type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ArgType {
    /// Nothing: a string literal, `NULL`, a bind parameter, an expression.
    Unknown,
    /// A type, as `format_type` names it (`integer`, `bigint`, `text`).
    Named(String),
    /// The row of a table or view (`f(t)`, `t.f`): its schema, where written, and name.
    Row(Option<String>, String),
}

/// A call's arguments, as far as they are known.
#[derive(Debug, Clone, Default)]
pub(crate) struct Args {
    pub types: Vec<ArgType>,
    /// Named notation (`f(a => 1)`) or `VARIADIC` in the call: only the count is checked.
    pub loose: bool,
}

/// What the schema says of a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Routine {
    /// Every function it may call is `STABLE` or `IMMUTABLE`, and none is an aggregate:
    /// PostgreSQL refuses a data-changing or row-locking statement in such a function.
    ReadOnly,
    /// It may call a `VOLATILE` function (not an aggregate), which may change or lock rows where
    /// it is evaluated: why.
    Volatile(String),
    /// It may call an aggregate or a window function, evaluated even on no rows: why.
    Unknown(String),
}

impl Schema {
    /// What a call of `name` (in schema `namespace`, where written) with `args` may call;
    /// `None` when the schema has no function it may call.
    pub(crate) fn routine(
        &self,
        namespace: Option<&str>,
        name: &str,
        args: &Args,
    ) -> Option<Routine> {
        let candidates = self.candidates(namespace, name, args);
        if candidates.is_empty() {
            return None;
        }
        let shown_call = shown(namespace, name);
        let alternatives = if candidates.len() > 1 {
            format!(
                " (`{shown_call}(..)` may be any of {}, as the arguments' types the SQL shows \
                 allow)",
                candidates
                    .iter()
                    .map(|f| format!("`{}`", signature(f)))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        } else {
            String::new()
        };
        if let Some(aggregate) = candidates
            .iter()
            .find(|f| matches!(f.kind, FunctionKind::Aggregate | FunctionKind::Window))
        {
            return Some(Routine::Unknown(format!(
                "{} has `{}` as {}, which PostgreSQL evaluates once even on no rows{alternatives}",
                self.read_from(),
                signature(aggregate),
                if aggregate.kind == FunctionKind::Aggregate {
                    "an aggregate"
                } else {
                    "a window function"
                }
            )));
        }
        match candidates
            .iter()
            .find(|f| f.volatility == Volatility::Volatile)
        {
            Some(volatile) => Some(Routine::Volatile(format!(
                "{} has `{}` VOLATILE, so it may change or lock rows{alternatives}",
                self.read_from(),
                signature(volatile)
            ))),
            None => Some(Routine::ReadOnly),
        }
    }

    /// Whether every function a call of `name` (in schema `namespace`, where written) with
    /// `args` may call is a plain `VOLATILE` function of the schema: PostgreSQL never evaluates a
    /// condition that holds such a call (outside its sub-selects) once up front as a constant.
    /// A name a built-in also has is not certain: PostgreSQL may pick the built-in.
    pub(crate) fn certainly_volatile(
        &self,
        namespace: Option<&str>,
        name: &str,
        args: &Args,
    ) -> bool {
        let candidates = self.candidates(namespace, name, args);
        !candidates.is_empty()
            && crate::functions::known(&[name.to_owned()]).is_none()
            && candidates
                .iter()
                .all(|f| f.kind == FunctionKind::Function && f.volatility == Volatility::Volatile)
    }

    /// The schema's functions (not procedures) PostgreSQL may pick for a call of `name` with
    /// `args`.
    fn candidates(&self, namespace: Option<&str>, name: &str, args: &Args) -> Vec<&Function> {
        self.functions
            .get(name)
            .into_iter()
            .flatten()
            .map(|&i| &self.prepared().functions[i])
            .filter(|f| namespace.is_none_or(|wanted| wanted == f.name.schema))
            .filter(|f| f.kind != FunctionKind::Procedure)
            .filter(|f| self.takes(f, args))
            .collect()
    }

    /// Whether PostgreSQL may pick `f` for a call with `args`.
    fn takes(&self, f: &Function, args: &Args) -> bool {
        let (n, given) = (f.args.len(), args.types.len());
        let fewest = n.saturating_sub(f.defaults);
        let count_fits = if f.variadic {
            // `VARIADIC` takes any number from none up; named notation may skip defaults.
            given + 1 >= fewest.min(n)
        } else {
            (fewest..=n).contains(&given)
        };
        if !(count_fits || args.loose && given <= n) {
            return false;
        }
        if args.loose {
            return true;
        }
        let fixed = if f.variadic { n.saturating_sub(1) } else { n };
        args.types
            .iter()
            .zip(&f.args)
            .take(fixed)
            .all(|(arg, param)| self.accepts(param, arg))
    }

    /// Whether an argument of type `arg` may be passed where `param` is declared: the same
    /// type, an implicit cast, or a parameter type that takes more than one (a pseudo-type such
    /// as `anyelement` or `record`, a domain, an array, a range, a type the file does not
    /// describe).
    fn accepts(&self, param: &str, arg: &ArgType) -> bool {
        let param_is_exact = matches!(
            self.types.get(param),
            Some(TypeKind::Base | TypeKind::Enum | TypeKind::Composite)
        );
        match arg {
            ArgType::Unknown => true,
            _ if !param_is_exact => true,
            ArgType::Row(namespace, name) => {
                param == name
                    || namespace
                        .as_ref()
                        .is_some_and(|ns| *param == format!("{ns}.{name}"))
                    || self
                        .matching(namespace.as_deref(), name)
                        .any(|r| *param == r.name.to_string() || param == r.name.name)
            }
            ArgType::Named(arg) => {
                let arg_is_exact = matches!(
                    self.types.get(arg.as_str()),
                    Some(TypeKind::Base | TypeKind::Enum | TypeKind::Composite)
                );
                !arg_is_exact
                    || arg == param
                    || self.casts.contains(&(arg.clone(), param.to_owned()))
            }
        }
    }
}

/// `schema.name(type, type)`, for messages.
pub(crate) fn signature(f: &Function) -> String {
    format!("{}({})", f.name, f.args.join(", "))
}

#[cfg(test)]
mod tests {
    use leader_schema::PreparedSchema;
    use leader_schema::model::{Cast, QualifiedName, TypeInfo};

    use super::*;

    fn function(name: &str, args: &[&str], volatility: Volatility) -> Function {
        Function::new(
            QualifiedName::new("public", name),
            args.iter().map(|a| (*a).to_owned()).collect(),
            "integer",
            volatility,
        )
    }

    fn schema() -> Schema {
        let mut prepared = PreparedSchema::new("migrations", "sha256:00");
        prepared.functions = vec![
            function("score", &["integer"], Volatility::Immutable),
            function("score", &["text"], Volatility::Volatile),
            function("pad", &["integer", "integer"], Volatility::Stable)
                .with_optional_args(1, false),
            function("total", &["integer"], Volatility::Immutable)
                .with_kind(FunctionKind::Aggregate),
        ];
        prepared.types = ["integer", "bigint", "text", "numeric"]
            .iter()
            .map(|t| TypeInfo {
                name: (*t).to_owned(),
                kind: TypeKind::Base,
            })
            .collect();
        prepared.casts = vec![Cast {
            source: "integer".into(),
            target: "bigint".into(),
        }];
        Schema::new(prepared, "the test's schema")
    }

    fn args(types: &[ArgType]) -> Args {
        Args {
            types: types.to_vec(),
            loose: false,
        }
    }

    #[test]
    fn an_overload_is_picked_by_the_arguments_types_and_an_ambiguous_call_counts_volatile() {
        let s = schema();
        let int = ArgType::Named("integer".into());
        assert_eq!(
            s.routine(None, "score", &args(std::slice::from_ref(&int))),
            Some(Routine::ReadOnly)
        );
        let Some(Routine::Volatile(why)) = s.routine(None, "score", &args(&[ArgType::Unknown]))
        else {
            panic!("`score('x')` may be either");
        };
        assert!(why.contains("`public.score(text)` VOLATILE"), "{why}");
        assert!(why.contains("may be any of"), "{why}");
        assert!(matches!(
            s.routine(None, "score", &args(&[ArgType::Named("text".into())])),
            Some(Routine::Volatile(_))
        ));
        assert_eq!(s.routine(Some("other"), "score", &args(&[int])), None);
    }

    #[test]
    fn defaults_count_and_aggregates_are_unknown() {
        let s = schema();
        let int = ArgType::Named("integer".into());
        assert_eq!(
            s.routine(None, "pad", &args(std::slice::from_ref(&int))),
            Some(Routine::ReadOnly)
        );
        assert_eq!(
            s.routine(None, "pad", &args(&[int.clone(), int.clone(), int.clone()])),
            None
        );
        assert!(matches!(
            s.routine(None, "total", &args(&[int])),
            Some(Routine::Unknown(why)) if why.contains("an aggregate")
        ));
    }
}
