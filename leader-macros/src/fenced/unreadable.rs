//! SQL `#[fenced]` cannot read: made at run time (`format!`), wrapped for sqlx (`AssertSqlSafe`,
//! a `SqlStr`), read from a file (`include_str!`), kept in a constant or static defined outside
//! the function, or a `concat!` with an argument that is not a literal.
//!
//! Such SQL is refused where it reaches a send the macro knows ([`super::sqlx_api`]), whatever
//! that send is called on; `AssertSqlSafe`, and a `format!` or `concat!` whose text reads as SQL
//! once its holes are filled, are refused wherever they are, since what sends them may be a
//! helper or a name the macro does not know.

use syn::{Expr, Macro};

use super::super::parse::macro_exprs;

/// What kind of SQL the macro cannot read an expression is.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Unreadable {
    Format,
    AssertSqlSafe,
    Include,
    Concat,
    Constant,
    SqlStr,
}

impl Unreadable {
    /// The `note:` that says why the macro cannot read it.
    pub fn note(self) -> &'static str {
        match self {
            Unreadable::Format => {
                "SQL built with `format!` is made at run time, so whether it carries the fence \
                 cannot be checked at compile time"
            }
            Unreadable::AssertSqlSafe => {
                "`AssertSqlSafe` tells sqlx the SQL was audited, but `#[fenced]` cannot see it"
            }
            Unreadable::Include => "text read with `include_str!` is out of the attribute's sight",
            Unreadable::Concat => {
                "`#[fenced]` reads a `concat!` only of literals and `concat!`s of literals"
            }
            Unreadable::Constant => {
                "a constant or static defined outside the function is out of the attribute's \
                 sight"
            }
            Unreadable::SqlStr => {
                "a `SqlStr` made from anything but a string literal cannot be read at compile time"
            }
        }
    }
}

/// Methods that keep a string's text: SQL the macro cannot read stays unreadable through them.
const KEEPS_TEXT: &[&str] = &[
    "as_str",
    "to_string",
    "to_owned",
    "clone",
    "into",
    "leak",
    "as_ref",
    "into_boxed_str",
    "into_sql_str",
];

/// The kind of SQL the macro cannot read `expr` is, if it is one of them.
pub fn classify(expr: &Expr) -> Option<Unreadable> {
    match expr {
        Expr::Reference(r) => classify(&r.expr),
        Expr::Unary(u) if matches!(u.op, syn::UnOp::Deref(_)) => classify(&u.expr),
        Expr::Paren(p) => classify(&p.expr),
        Expr::Group(g) => classify(&g.expr),
        Expr::Macro(m) => match macro_name(&m.mac).as_str() {
            "format" | "format_args" => Some(Unreadable::Format),
            "include_str" | "include" | "include_bytes" => Some(Unreadable::Include),
            "concat" => Some(Unreadable::Concat),
            _ => None,
        },
        Expr::Call(call) => {
            let name = path_end(&call.func)?;
            if name == "AssertSqlSafe" {
                return Some(Unreadable::AssertSqlSafe);
            }
            // `String::from(..)`, `SqlStr::from_static(..)`, `Arc::new(..)`, `Some(..)`.
            let arg = (call.args.len() == 1)
                .then(|| call.args.first())
                .flatten()?;
            let keeps = matches!(name.as_str(), "from" | "from_static" | "new" | "Some");
            if keeps { classify(arg) } else { None }
        }
        Expr::MethodCall(call) if KEEPS_TEXT.contains(&call.method.to_string().as_str()) => {
            classify(&call.receiver).or_else(|| {
                let literal = matches!(&*call.receiver, Expr::Lit(_));
                (call.method == "into_sql_str" && !literal).then_some(Unreadable::SqlStr)
            })
        }
        Expr::Path(p) if p.qself.is_none() => {
            let last = p.path.segments.last()?.ident.to_string();
            is_constant_name(&last).then_some(Unreadable::Constant)
        }
        _ => None,
    }
}

/// `CLAIM_SQL`, `SQL2`: Rust's naming of constants and statics.
fn is_constant_name(name: &str) -> bool {
    name.chars().any(|c| c.is_ascii_uppercase())
        && name
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
}

/// The text a `format!` or a `concat!` makes, with each hole (`{…}`, a non-literal argument)
/// filled with a name, when that text parses as SQL: the SQL it shows (shortened).
pub fn reads_as_sql(mac: &Macro) -> Option<String> {
    let text = match macro_name(mac).as_str() {
        "format" | "format_args" => format_template(mac)?,
        "concat" => concat_template(mac)?,
        _ => return None,
    };
    let checked = leader_fence_check::check(&text);
    (checked.statements > 0).then(|| shorten(&text))
}

/// A `format!`'s literal with every `{…}` replaced by `x` (`{{` and `}}` are braces).
fn format_template(mac: &Macro) -> Option<String> {
    let args = macro_exprs(mac)?;
    let Some(Expr::Lit(syn::ExprLit {
        lit: syn::Lit::Str(lit),
        ..
    })) = args.first()
    else {
        return None;
    };
    let mut out = String::new();
    let template = lit.value();
    let mut chars = template.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '{' if chars.peek() == Some(&'{') => {
                chars.next();
                out.push('{');
            }
            '}' if chars.peek() == Some(&'}') => {
                chars.next();
                out.push('}');
            }
            '{' => {
                for c in chars.by_ref() {
                    if c == '}' {
                        break;
                    }
                }
                out.push('x');
            }
            c => out.push(c),
        }
    }
    Some(out)
}

/// A `concat!`'s text, each argument that is not a literal standing as `x`.
fn concat_template(mac: &Macro) -> Option<String> {
    let mut out = String::new();
    for arg in macro_exprs(mac)? {
        match arg {
            Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Str(s),
                ..
            }) => out.push_str(&s.value()),
            Expr::Macro(m) if macro_name(&m.mac) == "concat" => {
                out.push_str(&concat_template(&m.mac)?);
            }
            _ => out.push('x'),
        }
    }
    Some(out)
}

fn shorten(text: &str) -> String {
    let one_line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match one_line.char_indices().nth(48) {
        Some((at, _)) => format!("{} …", &one_line[..at]),
        None => one_line,
    }
}

pub fn macro_name(mac: &Macro) -> String {
    mac.path
        .segments
        .last()
        .map(|s| s.ident.to_string())
        .unwrap_or_default()
}

fn path_end(func: &Expr) -> Option<String> {
    match func {
        Expr::Path(p) => p.path.segments.last().map(|s| s.ident.to_string()),
        _ => None,
    }
}
