//! Finds every way the body of a `#[fenced]` function sends SQL (rules 2 and 3).
//!
//! What sqlx sends, and how, is one table, [`sqlx_api`]: each function, method and macro of
//! sqlx 0.9 that takes SQL, with how its SQL and binds are found or why it is refused. Followed
//! and checked: the query functions (`query`, `query_as`, `query_scalar`, their `_with` forms,
//! `raw_sql`) and their `.bind(..)` chains; the `query!` family, `query_file!` included; a
//! string or a query made here handed to a method that sends it, on any receiver or by the path
//! `Executor::…` (`pool.execute("…")`, `pool.begin_with("BEGIN …")`), and a query made here
//! handed to one by any other path (`E::execute(ex, q)`, where a string literal is checked as a
//! string the body holds, since the path may not be sqlx's); and a query kept in
//! a local and bound further with `let q = q.bind(..)` or `q = q.bind(..)` at the block level it
//! was declared at. Their SQL is a string literal or a `concat!` of literals (nested `concat!`
//! included), at the send or as the value of a `const` declared in a block of the body that
//! encloses the send (a const's name cannot be rebound by a `let`, so the name means the
//! innermost such const). sqlx's query functions are also followed under another name given by a
//! `use sqlx::query_as as rows_of;` in the function's body (a `use` outside the function is out
//! of the attribute's sight, and a name it does not know is never taken for a send).
//!
//! Everything the macro cannot follow is a problem, never a silent pass: `copy_in_raw` and
//! `copy_out_raw`, `prepare`, `prepare_with`, `describe` and `query_statement`, `QueryBuilder`
//! (assembled at run time), a method that sends SQL given something other than a literal or a
//! query made here, a query local that is passed on or bound in a nested block, and a macro
//! whose arguments do not parse as expressions but mention sqlx. SQL the macro cannot read
//! ([`unreadable`]) is refused where it reaches any of those sends; `AssertSqlSafe`, and a
//! `format!` or a `concat!` whose text reads as SQL, wherever they are.

use proc_macro2::{Span, TokenStream, TokenTree};
use syn::spanned::Spanned;
use syn::visit::{self, Visit};
use syn::{Expr, ExprCall, Ident, LitStr, Macro, Pat, Type};

use super::parse::macro_exprs;
use sqlx_api::Handling;
use unreadable::Unreadable;

// Declared here rather than in `fenced/mod.rs`: both serve only the send finder.
#[path = "send_syntax.rs"]
mod send_syntax;
#[path = "sqlx_api.rs"]
mod sqlx_api;
#[path = "unreadable.rs"]
mod unreadable;

pub use send_syntax::strip;
use send_syntax::*;

/// Macros that read a file into the source: what they read cannot be checked here.
const INCLUDE_MACROS: &[&str] = &["include_str", "include", "include_bytes"];

/// One way the body sends SQL.
pub struct SqlSend {
    pub sql: Sql,
    pub binds: Binds,
    pub via: Via,
    /// What the user wrote, for messages: `query_as`, `query!`, `.execute(..)`.
    pub callee: String,
    /// Where the send is: the called path or method.
    pub span: Span,
}

/// The SQL of a send.
pub enum Sql {
    Literal(LitStr),
    /// `concat!` of literals: the text, its pieces, and the `concat!` call's span.
    Concat(Concatenated),
    /// `query_file!("…")`: the path literal, and the file's text or why it could not be read.
    File {
        path: LitStr,
        text: Result<String, String>,
    },
    /// Anything but a literal: a variable, `format!(..)`, `AssertSqlSafe(..)`, a const.
    Unseen(Expr),
    /// No SQL argument at all.
    Missing,
}

/// The values bound to `$1`, `$2`, ….
pub enum Binds {
    /// In order.
    Known(Vec<Expr>),
    /// Given in a form the macro cannot read (`PgArguments`); the span is that argument.
    Unseen(Span),
}

/// How a send reaches PostgreSQL.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Via {
    /// A prepared statement: one statement, with bind parameters.
    Prepared,
    /// The simple query protocol: any number of statements, no bind parameters.
    Simple,
}

/// The text of a `concat!` of literals, and where each piece of it was written.
pub struct Concatenated {
    pub text: String,
    /// Each piece: its byte offset in `text`, and the string literal it is, if it is one.
    pub pieces: Vec<(usize, Option<LitStr>)>,
    /// The whole `concat!(..)` call.
    pub span: Span,
}

/// A string in the body that no recognised send takes as its SQL: a string literal anywhere
/// (nested items, closures, async blocks and macro arguments included), or a `concat!` of
/// literals. One that parses as a claim is an error: it may be sent some way the macro does not
/// follow.
pub struct Loose {
    pub text: String,
    pub lit: Option<LitStr>,
    pub concat: Option<Concatenated>,
    pub span: Span,
}

/// What [`find`] found.
pub struct Found {
    pub sends: Vec<SqlSend>,
    pub loose: Vec<Loose>,
    pub problems: Vec<syn::Error>,
}

/// Finds every send in `block`.
pub fn find(block: &syn::Block) -> Found {
    let mut finder = Finder {
        sends: Vec::new(),
        loose: Vec::new(),
        problems: Vec::new(),
        locals: Vec::new(),
        aliases: Vec::new(),
        consts: Vec::new(),
        used_consts: Vec::new(),
        const_strings: Vec::new(),
        depth: 0,
    };
    finder.visit_block(block);
    // A const's string that a send reads is that send's SQL, checked with its binds; one no send
    // reads stays loose, as any string.
    let taken: Vec<usize> = finder
        .const_strings
        .iter()
        .filter(|(id, _)| finder.used_consts.contains(id))
        .map(|(_, at)| *at)
        .collect();
    let loose = finder
        .loose
        .into_iter()
        .enumerate()
        .filter(|(at, _)| !taken.contains(at))
        .map(|(_, loose)| loose)
        .collect();
    Found {
        sends: finder.sends,
        loose,
        problems: finder.problems,
    }
}

/// A local variable, and the send whose query it holds (none for other values that shadow a
/// query local).
struct Local {
    name: Ident,
    send: Option<usize>,
    depth: usize,
}

struct Finder {
    sends: Vec<SqlSend>,
    loose: Vec<Loose>,
    problems: Vec<syn::Error>,
    locals: Vec<Local>,
    /// Names a `use` in an enclosing block gives sqlx's query functions: `(rows_of, query_as)`.
    aliases: Vec<(Ident, &'static str)>,
    /// The `const`s of string SQL (a literal or a `concat!` of literals) declared in an
    /// enclosing block, innermost last: `const CLAIM: &str = "…";`, each with its identity (the
    /// address of its value in the function's syntax tree).
    consts: Vec<(Ident, Expr, usize)>,
    /// The consts a send read.
    used_consts: Vec<usize>,
    /// The loose strings each const's value holds: (its identity, index in `loose`).
    const_strings: Vec<(usize, usize)>,
    /// How deep in blocks, closures and match arms the walk is.
    depth: usize,
}

/// What a method chain starts from.
enum Base<'a> {
    /// A call that makes a query: `sqlx::query(..)`, `raw_sql(..)`, ….
    Constructor(&'a ExprCall),
    /// A local holding a query.
    Local(&'a Ident, usize),
    /// A query macro: `sqlx::query!(..)`.
    QueryMacro(&'a Macro, String),
    Other,
}

impl Finder {
    /// The SQL of the `const` `expr` names, when it is one of the body's string consts. A const
    /// is visible in its whole block, and no `let` can shadow it (a const's name in a `let` is
    /// a pattern to match, not a new binding), so the name means the innermost such const.
    fn const_value(&mut self, expr: &Expr) -> Option<Expr> {
        let Expr::Path(p) = strip(expr) else {
            return None;
        };
        let name = p.path.get_ident().filter(|_| p.qself.is_none())?;
        let (_, value, id) = self
            .consts
            .iter()
            .rev()
            .find(|(known, _, _)| known == name)?;
        self.used_consts.push(*id);
        Some(value.clone())
    }

    /// The query local called `name`, if the innermost binding of that name holds one.
    fn query_local(&self, name: &Ident) -> Option<(usize, usize)> {
        let local = self.locals.iter().rev().find(|l| l.name == *name)?;
        Some((local.send?, local.depth))
    }

    fn local_of<'e>(&self, expr: &'e Expr) -> Option<(&'e Ident, usize, usize)> {
        match strip(expr) {
            Expr::Path(p) if p.qself.is_none() => {
                let name = p.path.get_ident()?;
                let (send, depth) = self.query_local(name)?;
                Some((name, send, depth))
            }
            _ => None,
        }
    }

    fn base_of<'a>(&self, expr: &'a Expr) -> Base<'a> {
        match expr {
            Expr::Call(call) if self.constructor_name(call).is_some() => Base::Constructor(call),
            Expr::Macro(mac) => match query_macro_name(&mac.mac) {
                Some(name) => Base::QueryMacro(&mac.mac, name),
                None => Base::Other,
            },
            Expr::Path(_) => match self.local_of(expr) {
                Some((name, send, _)) => Base::Local(name, send),
                None => Base::Other,
            },
            _ => Base::Other,
        }
    }

    /// Records the send a constructor call makes; its index.
    fn constructor(&mut self, call: &ExprCall) -> usize {
        let name = self.constructor_name(call).expect("checked by base_of");
        let callee = last_segment(&call.func).unwrap_or_else(|| name.to_owned());
        let sql = match call.args.first() {
            Some(arg) => match self.const_value(arg) {
                Some(value) => sql_arg(&value),
                None => sql_arg(arg),
            },
            None => Sql::Missing,
        };
        let Some(Handling::Query {
            protocol,
            arguments,
        }) = sqlx_api::query_fn(name).map(|api| &api.handling)
        else {
            unreachable!("`constructor_name` names a query function of the table")
        };
        let binds = match arguments {
            Some(at) => Binds::Unseen(
                call.args
                    .iter()
                    .nth(*at)
                    .map_or(call.func.span(), Spanned::span),
            ),
            None => Binds::Known(Vec::new()),
        };
        let via = match protocol {
            sqlx_api::Protocol::Prepared => Via::Prepared,
            sqlx_api::Protocol::Simple => Via::Simple,
        };
        self.sends.push(SqlSend {
            sql,
            binds,
            via,
            callee,
            span: call.func.span(),
        });
        for arg in call.args.iter().skip(1) {
            self.visit_expr(arg);
        }
        self.sends.len() - 1
    }

    /// Walks a method chain `base.m1(..).m2(..)`; returns the send it builds, if any.
    fn chain(&mut self, expr: &Expr) -> Option<usize> {
        let (base, methods) = unchain(expr);
        let send = match self.base_of(base) {
            Base::Constructor(call) => Some(self.constructor(call)),
            Base::Local(name, send) => {
                let (_, declared_at) = self.query_local(name).expect("found by base_of");
                let binds = methods.iter().any(|m| is_bind(m));
                if binds && declared_at != self.depth {
                    self.problems.push(syn::Error::new_spanned(
                        name,
                        format!(
                            "`{name}` is bound further in a nested block, where `#[fenced]` \
                             cannot tell which binds apply: bind the fence in one chain, or \
                             with `let {name} = {name}.bind(..);` at the level `{name}` is \
                             declared at"
                        ),
                    ));
                }
                Some(send)
            }
            Base::QueryMacro(mac, name) => {
                self.query_macro(mac, &name);
                Some(self.sends.len() - 1)
            }
            Base::Other => {
                self.visit_expr(base);
                None
            }
        };
        for method in &methods {
            let arg = method.args.first();
            let name = method.method.to_string();
            let api = sqlx_api::method(&name, method.args.len());
            match (send, api.map(|api| &api.handling)) {
                (Some(send), _) if is_bind(method) => {
                    if let (Some(arg), Binds::Known(binds)) = (arg, &mut self.sends[send].binds) {
                        binds.push(arg.clone());
                    }
                }
                (None, Some(Handling::Sends { sql })) => {
                    let sql = sql - 1;
                    let arg = method.args.iter().nth(sql);
                    // `make(..).execute(pool)`: the executor is the argument, and the query sent
                    // is what a call the macro does not know returned.
                    if let Expr::Call(call) = strip(base)
                        && !arg.is_some_and(|arg| self.reads_as_sql(arg))
                    {
                        self.problems.push(unknown_query(call, &name));
                        for arg in &method.args {
                            self.visit_expr(arg);
                        }
                        continue;
                    }
                    self.sent_to_executor(arg, &name, method.method.span());
                    for (i, arg) in method.args.iter().enumerate() {
                        if i != sql {
                            self.visit_expr(arg);
                        }
                    }
                    continue;
                }
                (_, Some(Handling::Refused { .. })) => {
                    self.refuse(api.expect("matched"), &method.method);
                    continue;
                }
                _ => {}
            }
            for arg in &method.args {
                self.visit_expr(arg);
            }
        }
        send
    }

    /// A call of sqlx's API that `#[fenced]` refuses wherever it is: the table's reason. Its
    /// arguments are not looked into: the call goes either way.
    fn refuse(&mut self, api: &sqlx_api::Api, at: &dyn quote::ToTokens) {
        if let Handling::Refused { why, note, help } = &api.handling {
            self.problems.push(syn::Error::new_spanned(
                at,
                format!("{why}\nnote: {note}\nhelp: {help}"),
            ));
        }
    }

    /// Whether `arg` is SQL the macro reads (a literal, a `concat!`, a `const` of the body) or a
    /// query it follows: what an `Executor` method is given, not an executor.
    fn reads_as_sql(&self, arg: &Expr) -> bool {
        let Some(arg) = statement_of(arg) else {
            return false;
        };
        let body_const = matches!(strip(arg), Expr::Path(p)
            if p.path.get_ident().is_some_and(|name| self.consts.iter().any(|(c, _, _)| c == name)));
        if body_const || is_literal_sql(arg) {
            return true;
        }
        matches!(strip(arg), Expr::Macro(m) if is_concat(&m.mac))
            || matches!(
                self.base_of(unchain(strip(arg)).0),
                Base::Constructor(_) | Base::Local(..) | Base::QueryMacro(..)
            )
    }

    /// An `Executor` method was given `arg`: it must be a query the macro follows, or a literal
    /// (which it checks).
    fn sent_to_executor(&mut self, arg: Option<&Expr>, method: &str, span: Span) {
        let Some(arg) = arg else { return };
        let Some(arg) = statement_of(arg) else {
            return;
        };
        let arg = self.const_value(arg).unwrap_or_else(|| arg.clone());
        let arg = &arg;
        if let Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Str(lit),
            ..
        }) = strip(arg)
        {
            self.sends.push(SqlSend {
                sql: Sql::Literal(lit.clone()),
                binds: Binds::Known(Vec::new()),
                via: Via::Simple,
                callee: format!(".{method}(..)"),
                span,
            });
            return;
        }
        if let Expr::Macro(m) = strip(arg)
            && is_concat(&m.mac)
            && let Some(concat) = concatenated(&m.mac)
        {
            self.sends.push(SqlSend {
                sql: Sql::Concat(concat),
                binds: Binds::Known(Vec::new()),
                via: Via::Simple,
                callee: format!(".{method}(..)"),
                span,
            });
            return;
        }
        let query = strip(arg);
        if let Base::Constructor(_) | Base::Local(..) | Base::QueryMacro(..) =
            self.base_of(unchain(query).0)
        {
            self.chain(query);
            return;
        }
        let unreadable = unreadable::classify(arg);
        let note = unreadable.map_or(
            "a query is followed only when it is made in this function from literal SQL, by \
             `sqlx::query` (or `query_as`, `query_scalar`, `raw_sql`) or a `query!` macro",
            Unreadable::note,
        );
        self.problems.push(syn::Error::new_spanned(
            arg,
            format!(
                "`#[fenced]` cannot see the SQL this `.{method}(..)` sends\n\
                 note: {note}\n\
                 help: give it a query built here from literal SQL, e.g. \
                 `sqlx::query(\"… AND leader_fence($1, $2)\").bind(fence.role())\
                 .bind(fence.token())`"
            ),
        ));
        // What cannot be read is not looked into again (it would be refused twice).
        if unreadable.is_none() {
            self.visit_expr(arg);
        }
    }

    /// A local declared or assigned from `init`: tracks it if it holds a query (not the rows
    /// a query returned).
    fn bind_local(&mut self, name: &Ident, init: &Expr) {
        let send = match self.base_of(unchain(init).0) {
            Base::Constructor(_) | Base::Local(..) | Base::QueryMacro(..) => {
                let send = self.chain(init);
                send.filter(|_| holds_query(init))
            }
            Base::Other => {
                self.visit_expr(init);
                None
            }
        };
        self.locals.push(Local {
            name: name.clone(),
            send,
            depth: self.depth,
        });
    }

    fn nested<T>(&mut self, f: impl FnOnce(&mut Self) -> T) -> T {
        self.depth += 1;
        let out = f(self);
        self.depth -= 1;
        out
    }

    fn query_macro(&mut self, mac: &Macro, name: &str) {
        let Some(Handling::Macro { typed, file }) =
            sqlx_api::query_macro_by_name(name).map(|api| &api.handling)
        else {
            unreachable!("`query_macro_name` names a query macro of the table")
        };
        let (typed, file) = (*typed, *file);
        let parser = |input: syn::parse::ParseStream| {
            if typed {
                input.parse::<Type>()?;
                input.parse::<syn::Token![,]>()?;
            }
            syn::punctuated::Punctuated::<Expr, syn::Token![,]>::parse_terminated(input)
        };
        let Ok(args) = syn::parse::Parser::parse2(parser, mac.tokens.clone()) else {
            self.problems.push(syn::Error::new_spanned(
                &mac.path,
                format!(
                    "`#[fenced]` cannot read this `{name}!` call: write it as \
                     `{name}!({}\"… AND leader_fence($1, $2)\", fence.role(), fence.token())`",
                    if typed { "Row, " } else { "" }
                ),
            ));
            return;
        };
        let mut args = args.into_iter();
        let sql = match args.next() {
            Some(arg) if file => match strip(&arg) {
                Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Str(path),
                    ..
                }) => Sql::File {
                    path: path.clone(),
                    text: read_sql_file(&path.value()),
                },
                _ => Sql::Unseen(arg),
            },
            Some(arg) => sql_arg(&arg),
            None => Sql::Missing,
        };
        let binds: Vec<Expr> = args.collect();
        for bind in &binds {
            self.visit_expr(bind);
        }
        self.sends.push(SqlSend {
            sql,
            binds: Binds::Known(binds),
            via: Via::Prepared,
            callee: format!("{name}!"),
            span: mac.path.span(),
        });
    }
}

/// The error for a query sent that a call the macro does not know made: whatever it is given, it
/// may return a claim the macro never sees.
fn unknown_query(call: &ExprCall, method: &str) -> syn::Error {
    let callee = last_segment(&call.func).unwrap_or_else(|| "this call".to_owned());
    syn::Error::new_spanned(
        &call.func,
        format!(
            "`#[fenced]` cannot see the query `{callee}(..)` returns, which `.{method}(..)` sends\n\
             note: a query sent in a `#[fenced]` function must be made in it by one of sqlx's \
             query functions (`sqlx::query`, `query_as`, `query_scalar`, `raw_sql`, also renamed by \
             a `use sqlx::query as q;` inside the function) or a `query!` macro, from literal \
             SQL; a helper may return a claim whatever it is given\n\
             help: build the query here, e.g. `sqlx::query(\"… AND leader_fence($1, $2)\")\
             .bind(fence.role()).bind(fence.token()).{method}(..)`, or make the helper \
             `#[fenced]` itself and call it with the fence"
        ),
    )
}

impl<'ast> Visit<'ast> for Finder {
    fn visit_expr(&mut self, expr: &'ast Expr) {
        match expr {
            Expr::MethodCall(_) => {
                self.chain(expr);
            }
            Expr::Call(call) if self.constructor_name(call).is_some() => {
                self.chain(expr);
            }
            Expr::Call(call) => {
                let name = last_segment(&call.func).unwrap_or_default();
                if name == "AssertSqlSafe" {
                    self.problems.push(syn::Error::new_spanned(
                        &call.func,
                        "`#[fenced]` cannot read SQL wrapped in `AssertSqlSafe`\n\
                         note: `AssertSqlSafe` hands sqlx SQL that is not a literal, and whatever \
                         sends it (a query, an `Executor` method, a helper) may send a claim \
                         whose fence `#[fenced]` never saw\n\
                         help: write the statement as a string literal (or a `concat!` of \
                         literals) where it is sent, e.g. \
                         `sqlx::query(\"… WHERE … AND leader_fence($1, $2)\")`",
                    ));
                    return;
                }
                if builder_name(call).is_some() {
                    self.refuse(sqlx_api::entry("QueryBuilder::new"), &call.func);
                } else if let Some(api) = sqlx_api::path_call(&name, call.args.len())
                    .filter(|_| !surely_not_sqlx(&call.func))
                {
                    match &api.handling {
                        Handling::Sends { sql } => {
                            let arg = call.args.iter().nth(*sql);
                            // A literal given to something other than `Executor` may not be
                            // sqlx's: it is checked as a string the body holds.
                            let by_executor =
                                owner_segment(&call.func).as_deref() == Some("Executor");
                            if by_executor || !arg.is_some_and(is_literal_sql) {
                                self.visit_expr(&call.func);
                                for (i, other) in call.args.iter().enumerate() {
                                    if i != *sql {
                                        self.visit_expr(other);
                                    }
                                }
                                self.sent_to_executor(arg, &name, call.func.span());
                                return;
                            }
                        }
                        Handling::Refused { .. } => {
                            self.refuse(api, &call.func);
                            return;
                        }
                        _ => {}
                    }
                }
                visit::visit_expr_call(self, call);
            }
            Expr::Assign(assign) => match strip(&assign.left) {
                Expr::Path(p)
                    if p.path.get_ident().is_some() && self.local_of(&assign.left).is_some() =>
                {
                    let name = p.path.get_ident().expect("checked").clone();
                    let (_, send, depth) = self.local_of(&assign.left).expect("checked");
                    if depth != self.depth {
                        self.problems.push(syn::Error::new_spanned(
                            &assign.left,
                            format!(
                                "`{name}` is assigned in a nested block, where `#[fenced]` \
                                 cannot tell which binds apply: bind the fence in one chain, \
                                 or at the level `{name}` is declared at"
                            ),
                        ));
                    }
                    match self.base_of(unchain(&assign.right).0) {
                        Base::Local(from, from_send) if *from == name && from_send == send => {
                            self.chain(&assign.right);
                        }
                        _ => self.bind_local(&name, &assign.right),
                    }
                }
                _ => visit::visit_expr_assign(self, assign),
            },
            Expr::Path(_) if self.local_of(expr).is_some() => {
                let (name, _, _) = self.local_of(expr).expect("checked");
                self.problems.push(syn::Error::new_spanned(
                    expr,
                    format!(
                        "the query in `{name}` is used where `#[fenced]` cannot follow what is \
                         bound to it: bind the fence in the chain that builds it and send it \
                         with an `Executor` method (`.fetch_all(..)`, `.execute(..)`) here"
                    ),
                ));
            }
            Expr::Closure(closure) => self.nested(|f| visit::visit_expr_closure(f, closure)),
            _ => visit::visit_expr(self, expr),
        }
    }

    fn visit_local(&mut self, local: &'ast syn::Local) {
        let name = match &local.pat {
            Pat::Ident(binding) => Some(binding.ident.clone()),
            Pat::Type(typed) => match &*typed.pat {
                Pat::Ident(binding) => Some(binding.ident.clone()),
                _ => None,
            },
            _ => None,
        };
        match (name, &local.init) {
            (Some(name), Some(init)) if init.diverge.is_none() => {
                self.bind_local(&name, &init.expr);
            }
            _ => {
                // Bindings made here shadow query locals of the same names.
                let mut names = Vec::new();
                collect_bindings(&local.pat, &mut names);
                if let Some(init) = &local.init {
                    self.visit_expr(&init.expr);
                    if let Some((_, diverge)) = &init.diverge {
                        self.visit_expr(diverge);
                    }
                }
                for name in names {
                    self.locals.push(Local {
                        name,
                        send: None,
                        depth: self.depth,
                    });
                }
            }
        }
    }

    fn visit_block(&mut self, block: &'ast syn::Block) {
        let locals = self.locals.len();
        let aliases = self.aliases.len();
        let consts = self.consts.len();
        // A `use` names its item, and a `const` its value, in the whole block, before it as
        // after it.
        for stmt in &block.stmts {
            match stmt {
                syn::Stmt::Item(syn::Item::Use(item)) => {
                    sqlx_aliases(&item.tree, false, &mut self.aliases);
                }
                syn::Stmt::Item(syn::Item::Const(item)) if string_sql(&item.expr) => {
                    self.consts
                        .push((item.ident.clone(), (*item.expr).clone(), const_id(item)));
                }
                _ => {}
            }
        }
        self.nested(|f| visit::visit_block(f, block));
        self.locals.truncate(locals);
        self.aliases.truncate(aliases);
        self.consts.truncate(consts);
    }

    fn visit_item_const(&mut self, item: &'ast syn::ItemConst) {
        let before = self.loose.len();
        visit::visit_item_const(self, item);
        let id = const_id(item);
        self.const_strings
            .extend((before..self.loose.len()).map(|at| (id, at)));
    }

    fn visit_arm(&mut self, arm: &'ast syn::Arm) {
        self.nested(|f| visit::visit_arm(f, arm));
    }

    fn visit_lit_str(&mut self, lit: &'ast LitStr) {
        self.loose.push(Loose {
            text: lit.value(),
            lit: Some(lit.clone()),
            concat: None,
            span: lit.span(),
        });
    }

    /// Attributes carry documentation and options, never a statement that is sent.
    fn visit_attribute(&mut self, _: &'ast syn::Attribute) {}

    fn visit_macro(&mut self, mac: &'ast Macro) {
        let name = mac
            .path
            .segments
            .last()
            .map(|s| s.ident.to_string())
            .unwrap_or_default();
        if query_macro_name(mac).is_some() {
            return self.query_macro(mac, &name);
        }
        if name == "concat"
            && let Some(concat) = concatenated(mac)
        {
            self.loose.push(Loose {
                text: concat.text.clone(),
                lit: None,
                span: concat.span,
                concat: Some(concat),
            });
            return;
        }
        if let Some(sql) = unreadable::reads_as_sql(mac) {
            let made_by = if name == "concat" {
                "a `concat!` of something other than literals"
            } else {
                "`format!`"
            };
            self.problems.push(syn::Error::new_spanned(
                mac,
                format!(
                    "`#[fenced]` cannot read SQL built with `{name}!`\n\
                     note: with its holes filled, this reads as SQL (`{sql}`) made by {made_by} \
                     at run time: wherever it is sent, it may be a claim whose fence \
                     `#[fenced]` never saw\n\
                     help: write the statement as a string literal with bind parameters for \
                     what changes, e.g. `sqlx::query(\"… WHERE id = $3 AND leader_fence($1, \
                     $2)\")`"
                ),
            ));
            return;
        }
        if INCLUDE_MACROS.contains(&name.as_str()) {
            self.problems.push(syn::Error::new_spanned(
                &mac.path,
                format!(
                    "`#[fenced]` cannot check text read with `{name}!`, which may be a claim: \
                     send a claim kept in a file with `sqlx::query_file!(\"…\", fence.role(), \
                     fence.token())`, which it reads and checks"
                ),
            ));
            return;
        }
        match macro_exprs(mac) {
            Some(exprs) => exprs.iter().for_each(|expr| self.visit_expr(expr)),
            None => {
                self.loose_in_tokens(mac.tokens.clone());
                if mentions_sqlx(mac.tokens.clone()) {
                    self.problems.push(syn::Error::new_spanned(
                        &mac.path,
                        format!(
                            "`#[fenced]` cannot look inside this `{name}!`, whose arguments are \
                             not expressions and mention sqlx: send the query outside the \
                             macro, e.g. `let rows = query.fetch_all(&pool).await?;` before it"
                        ),
                    ));
                }
            }
        }
    }
}

impl Finder {
    /// Every string literal in a token stream the macro cannot parse as expressions.
    fn loose_in_tokens(&mut self, tokens: TokenStream) {
        for token in tokens {
            match token {
                TokenTree::Literal(literal) => {
                    if let Ok(lit) = syn::parse2::<LitStr>(TokenTree::Literal(literal).into()) {
                        self.visit_lit_str(&lit);
                    }
                }
                TokenTree::Group(group) => self.loose_in_tokens(group.stream()),
                _ => {}
            }
        }
    }
}

impl Finder {
    /// `query`, `query_as`, `raw_sql`, … for a call of one of sqlx's query constructors, by its
    /// own name or by a name a `use` in an enclosing block gives it (unless a local of that name
    /// shadows it).
    fn constructor_name(&self, call: &ExprCall) -> Option<&'static str> {
        if let Expr::Path(p) = &*call.func
            && p.qself.is_none()
            && let Some(ident) = p.path.get_ident()
            && let Some((_, name)) = self.aliases.iter().rev().find(|(alias, _)| alias == ident)
        {
            let shadowed = self.locals.iter().any(|l| l.name == *ident);
            return (!shadowed).then_some(*name);
        }
        let name = last_segment(&call.func)?;
        constructor(&name)
    }
}

#[cfg(test)]
mod tests {
    use quote::quote;

    /// The errors `#[fenced]` gives for a function `claim(ex: E, fence: Fence)` with `body`:
    /// the messages of the `compile_error!`s in its expansion.
    fn errors(body: proc_macro2::TokenStream) -> Vec<String> {
        let item = quote! {
            async fn claim<'e, E: sqlx::PgExecutor<'e>>(ex: E, pool: &PgPool, fence: Fence, t: &str) -> sqlx::Result<()> { #body Ok(()) }
        };
        let mut messages = Vec::new();
        compile_errors(super::super::fenced(quote!(), item), &mut messages);
        messages
    }

    fn compile_errors(tokens: proc_macro2::TokenStream, out: &mut Vec<String>) {
        let mut after_compile_error = false;
        for token in tokens {
            match token {
                proc_macro2::TokenTree::Ident(ident) => {
                    after_compile_error = ident == "compile_error";
                }
                proc_macro2::TokenTree::Group(group) if after_compile_error => {
                    let message: syn::LitStr = syn::parse2(group.stream()).expect("a message");
                    out.push(message.value());
                    after_compile_error = false;
                }
                proc_macro2::TokenTree::Group(group) => compile_errors(group.stream(), out),
                proc_macro2::TokenTree::Punct(_) | proc_macro2::TokenTree::Literal(_) => {}
            }
        }
    }

    /// Asserts that `body` gives exactly one error, which starts with `first_line`.
    fn refused(body: proc_macro2::TokenStream, first_line: &str) {
        let errors = errors(body.clone());
        assert!(
            errors.len() == 1 && errors[0].starts_with(first_line),
            "{body}\nexpected one error starting with {first_line:?}, got {errors:#?}"
        );
    }

    #[test]
    fn a_const_of_the_body_is_read_where_it_is_visible_and_checked_where_it_is_not_sent() {
        let fenced = "UPDATE jobs SET claimed_by = $2 WHERE id IN (SELECT id FROM jobs WHERE leader_fence($1, $2) FOR UPDATE SKIP LOCKED)";
        let unfenced = "UPDATE jobs SET claimed_by = $2 WHERE id IN (SELECT id FROM jobs WHERE $1::text <> '' FOR UPDATE SKIP LOCKED)";
        // Read, in the block it is declared in and in nested ones, before or after its use.
        assert_eq!(
            errors(quote! {
                { sqlx::query(CLAIM).bind(fence.role()).bind(fence.token()).execute(pool).await?; }
                const CLAIM: &str = #fenced;
            }),
            Vec::<String>::new()
        );
        let unfenced_errors = errors(quote! {
            const CLAIM: &str = #unfenced;
            sqlx::query(CLAIM).bind(fence.role()).bind(fence.token()).execute(pool).await?;
        });
        assert!(
            unfenced_errors
                .first()
                .is_some_and(|e| e.starts_with("`UPDATE jobs` is not gated by the fence")),
            "{unfenced_errors:#?}"
        );
        // A const declared in an inner block is not the one an outer send names.
        let out_of_scope = errors(quote! {
            { const CLAIM: &str = #fenced; }
            sqlx::query(CLAIM).bind(fence.role()).bind(fence.token()).execute(pool).await?;
        });
        assert!(
            !out_of_scope.is_empty(),
            "an outer send cannot read an inner const"
        );
        // A const no send reads is checked as any string: a claim in it is refused.
        let unsent = errors(quote! {
            const CLAIM: &str = #fenced;
            helper(pool, CLAIM).await?;
        });
        assert!(
            unsent
                .iter()
                .any(|e| e.starts_with("this claim is not sent where")),
            "{unsent:#?}"
        );
    }

    #[test]
    fn copy_is_refused_whatever_it_is_given_and_however_it_is_called() {
        for body in [
            quote! { let mut conn = pool.acquire().await?; conn.copy_in_raw("COPY jobs (id) FROM STDIN").await?; },
            quote! { let mut conn = pool.acquire().await?; let sql = t.to_owned(); conn.copy_in_raw(&sql).await?; },
            quote! { pool.copy_in_raw(&format!("COPY {} FROM STDIN", t)).await?; },
            quote! { sqlx::postgres::PgConnection::copy_in_raw(&mut conn, t).await?; },
        ] {
            refused(
                body,
                "`copy_in_raw` sends a `COPY … FROM STDIN`, which cannot be fenced",
            );
        }
        refused(
            quote! { let rows = pool.copy_out_raw("COPY jobs TO STDOUT").await?; },
            "`copy_out_raw` sends a `COPY … TO STDOUT`",
        );
    }

    #[test]
    fn a_generic_executor_called_by_path_is_given_only_sql_the_macro_reads() {
        refused(
            quote! { E::execute(ex, sqlx::AssertSqlSafe(format!("DELETE FROM {} WHERE id = $1", t))).await?; },
            "`#[fenced]` cannot see the SQL this `.execute(..)` sends\nnote: `AssertSqlSafe`",
        );
        refused(
            quote! { <E as sqlx::Executor>::fetch_all(ex, CLAIM_SQL).await?; },
            "`#[fenced]` cannot see the SQL this `.fetch_all(..)` sends\nnote: a constant",
        );
        refused(
            quote! { E::fetch_optional(ex, t).await?; },
            "`#[fenced]` cannot see the SQL this `.fetch_optional(..)` sends\nnote: a query is followed only",
        );
        // A query made here is followed, and checked: its binds are wrong.
        let found = errors(quote! {
            E::execute(ex, sqlx::query("DELETE FROM jobs WHERE leader_fence($1, $2)").bind(fence.token()).bind(fence.role())).await?;
        });
        assert!(
            found.len() == 2 && found[0].contains("is the fence's role"),
            "{found:#?}"
        );
        assert_eq!(
            errors(quote! {
                E::execute(ex, sqlx::query("DELETE FROM jobs WHERE leader_fence($1, $2)").bind(fence.role()).bind(fence.token())).await?;
                sqlx::Executor::fetch_all(&mut *ex, sqlx::query_as::<_, (i64,)>("SELECT id FROM jobs WHERE leader_fence($1, $2) FOR UPDATE").bind(fence.role()).bind(fence.token())).await?;
            }),
            Vec::<String>::new()
        );
    }

    #[test]
    fn sql_the_macro_cannot_read_is_refused_on_its_way_to_any_send() {
        // Whatever receives it: an unknown method, a helper.
        refused(
            quote! { ex.run(sqlx::AssertSqlSafe(t.to_owned())).await?; },
            "`#[fenced]` cannot read SQL wrapped in `AssertSqlSafe`",
        );
        refused(
            quote! { let sql = format!("UPDATE {t} SET taken = true WHERE id = $1"); helper(ex, &sql).await?; },
            "`#[fenced]` cannot read SQL built with `format!`",
        );
        refused(
            quote! { helper(ex, concat!("DELETE FROM ", TABLE, " WHERE done")).await?; },
            "`#[fenced]` cannot read SQL built with `concat!`",
        );
        // Once, where it is sent: not again for what it wraps.
        refused(
            quote! { sqlx::query(sqlx::AssertSqlSafe(format!("DELETE FROM {t}"))).execute(pool).await?; },
            "a claim must be literal SQL",
        );
        refused(
            quote! { pool.execute(sqlx::AssertSqlSafe(format!("DELETE FROM {t}"))).await?; },
            "`#[fenced]` cannot see the SQL this `.execute(..)` sends\nnote: `AssertSqlSafe`",
        );
        // Text that does not read as SQL is no statement.
        assert_eq!(
            errors(quote! {
                let message = format!("claimed {} rows from {t}", 3);
                tracing::info!("{message}");
                let label = format!("{}", t);
            }),
            Vec::<String>::new()
        );
    }

    #[test]
    fn prepared_statements_are_refused() {
        refused(
            quote! { let stmt = (&mut *conn).prepare(sqlx::SqlStr::from_static("DELETE FROM jobs WHERE leader_fence($1, $2)")).await?; },
            "`#[fenced]` cannot follow a statement prepared here to where it runs",
        );
        refused(
            quote! { let stmt = E::prepare_with(ex, sql, &[]).await?; },
            "`#[fenced]` cannot follow a statement prepared here to where it runs",
        );
        refused(
            quote! { let q = sqlx_core::query::query_statement(&stmt); },
            "`#[fenced]` cannot see the SQL of a statement prepared elsewhere",
        );
        refused(
            quote! { stmt.query().bind(fence.role()).bind(fence.token()).execute(pool).await?; },
            "`#[fenced]` cannot see the SQL this `.execute(..)` sends",
        );
    }

    #[test]
    fn a_transaction_begun_with_a_literal_statement_is_checked() {
        assert_eq!(
            errors(quote! {
                let mut tx = pool.begin_with("BEGIN ISOLATION LEVEL SERIALIZABLE").await?;
                let tx2 = sqlx::Transaction::begin(&mut *conn, None).await?;
                let tx3 = sqlx::Transaction::begin(&mut *conn, Some(sqlx::SqlStr::from_static("BEGIN READ WRITE"))).await?;
            }),
            Vec::<String>::new()
        );
        refused(
            quote! { let mut tx = pool.begin_with("BEGIN; DELETE FROM jobs").await?; },
            "`DELETE FROM jobs` is not gated",
        );
        refused(
            quote! { let mut tx = pool.begin_with(sqlx::AssertSqlSafe(t.to_owned())).await?; },
            "`#[fenced]` cannot see the SQL this `.begin_with(..)` sends",
        );
    }
}
