//! `#[fenced]`'s table of sqlx's SQL-sending API ([`sqlx_api::API`]) against the sqlx the
//! workspace pins: the test reads the sources of `sqlx-core` and `sqlx-postgres` (and the query
//! macros of `sqlx`) at the version `Cargo.lock` names, lists every public function that takes
//! SQL, and fails on any the table does not say how it handles, so that a sqlx upgrade that adds
//! a way to send SQL cannot open a hole in the check silently. It also fails on a table entry
//! that sqlx no longer declares, so the table cannot keep a name that matches nothing.
//!
//! # Which functions take SQL
//!
//! A function is listed when it is public API (a `pub fn` at a module's top level or in an
//! inherent `impl`, or any method of a `pub trait`; none under `#[cfg(test)]`) and one of its
//! parameters other than `self` is:
//! - of type `impl SqlSafeStr`, or of a type parameter bounded by `SqlSafeStr`: SQL text, the
//!   argument sqlx's query functions take;
//! - of type `SqlStr` (also `&SqlStr`, `Option<SqlStr>`): SQL text already made safe;
//! - of a type parameter bounded by `Execute`: anything sqlx sends, a query or a string;
//! - of a reference to a prepared `Statement` (`&DB::Statement`, `&PgStatement`): SQL prepared
//!   earlier, run by this call;
//! - named `sql`, `query`, `statement` or `init` and of a string type (`&str`, `String`,
//!   `impl AsRef<str>`, `impl Into<String>`, `impl Display`): SQL text taken as a plain string,
//!   as `copy_in_raw` and `QueryBuilder` take it.
//!
//! A query macro is listed when `sqlx` exports a `macro_rules!` whose name starts with `query`.
//!
//! What the criterion leaves out, and the table does not hold: functions that send only SQL of
//! their own making (`Transaction::commit`, `PgListener::listen` with a quoted channel name) and
//! those that send migration files (`Migrator::run`, `Migrate::apply`), whose SQL is not given
//! at the call.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use syn::visit::Visit;

#[allow(
    dead_code,
    reason = "the macro uses the table's lookups; this test reads only the data"
)]
#[path = "../src/fenced/sqlx_api.rs"]
mod sqlx_api;

use sqlx_api::{API, Handling};

/// Where a function that takes SQL is declared.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Declared {
    krate: String,
    file: String,
}

#[test]
fn every_sqlx_function_that_takes_sql_is_in_the_table() {
    let found = sending_api();
    let table: BTreeSet<(&str, &str)> = API.iter().map(|api| (api.krate, api.item)).collect();
    let missing: Vec<String> = found
        .iter()
        .filter(|((krate, item), _)| !table.contains(&(krate.as_str(), item.as_str())))
        .map(|((_, item), (at, _))| format!("`{item}` ({}/{})", at.krate, at.file))
        .collect();
    assert!(
        missing.is_empty(),
        "sqlx {} declares {} function(s) that take SQL and that `#[fenced]`'s table \
         (leader-macros/src/fenced/sqlx_api.rs) does not hold; add each with how its SQL and \
         binds are found, or why it is refused:\n  {}",
        sqlx_version(),
        missing.len(),
        missing.join("\n  ")
    );
}

#[test]
fn every_table_entry_is_declared_by_sqlx() {
    let declared = declared_api();
    let stale: Vec<String> = API
        .iter()
        .filter(|api| !declared.contains(&(api.krate.to_owned(), api.item.to_owned(), api.arity)))
        .map(|api| {
            format!(
                "`{}` with {} parameter(s) ({})",
                api.item, api.arity, api.krate
            )
        })
        .collect();
    assert!(
        stale.is_empty(),
        "`#[fenced]`'s table names API that sqlx {} does not declare, or not with that many \
         parameters (`self` counted): update or remove:\n  {}",
        sqlx_version(),
        stale.join("\n  ")
    );
}

#[test]
fn each_send_reads_a_parameter_that_takes_sql() {
    let found = sending_api();
    for api in API {
        let Handling::Sends { sql } = api.handling else {
            continue;
        };
        let key = (api.krate.to_owned(), api.item.to_owned());
        let positions = found.get(&key).map(|(_, sql)| sql.as_slice());
        assert!(
            positions.is_some_and(|p| p.contains(&sql)),
            "`{}` is said to send its parameter {sql} (`self` counted), but sqlx's SQL \
             parameters of it are at {positions:?}",
            api.item
        );
    }
}

#[test]
fn the_table_holds_each_item_once_and_each_entry_says_how_or_why() {
    let mut seen = BTreeSet::new();
    for api in API {
        assert!(
            seen.insert((api.krate, api.item)),
            "`{}` is in the table twice",
            api.item
        );
        let reason = match &api.handling {
            Handling::Refused { why, note, help } => {
                assert!(
                    !why.is_empty() && !note.is_empty() && !help.is_empty(),
                    "`{}` is refused without a first line, a note and a help",
                    api.item
                );
                format!("{why}{note}{help}")
            }
            Handling::NotASend { why } => (*why).to_owned(),
            _ => continue,
        };
        assert!(
            !reason.trim().is_empty(),
            "`{}` is refused or set aside without saying why",
            api.item
        );
    }
}

/// Every function of the pinned sqlx that takes SQL (module docs), by crate and item
/// (`Owner::name`, or `name` for a free function), with where it is declared and the positions
/// of its SQL parameters.
fn sending_api() -> BTreeMap<(String, String), (Declared, Vec<usize>)> {
    let mut found = BTreeMap::new();
    for krate in ["sqlx-core", "sqlx-postgres"] {
        for (item, at, sql) in scan(krate).takes_sql {
            found.entry((krate.to_owned(), item)).or_insert((at, sql));
        }
    }
    for (name, at) in scan("sqlx").query_macros {
        found
            .entry(("sqlx".to_owned(), format!("{name}!")))
            .or_insert((at, Vec::new()));
    }
    found
}

/// Every public function (with its number of parameters, `self` counted) and query macro (0)
/// of the pinned sqlx, whatever it takes.
fn declared_api() -> BTreeSet<(String, String, usize)> {
    let mut declared = BTreeSet::new();
    for krate in ["sqlx-core", "sqlx-postgres"] {
        for (item, arity) in scan(krate).public {
            declared.insert((krate.to_owned(), item, arity));
        }
    }
    for (name, _) in scan("sqlx").query_macros {
        declared.insert(("sqlx".to_owned(), format!("{name}!"), 0));
    }
    declared
}

#[derive(Default)]
struct Scan {
    /// Public functions that take SQL, with the positions of their SQL parameters (`self`
    /// counted).
    takes_sql: Vec<(String, Declared, Vec<usize>)>,
    /// Every public function and method, `Owner::name` or `name`, with its number of
    /// parameters (`self` counted).
    public: Vec<(String, usize)>,
    /// Exported `macro_rules!` whose name starts with `query`.
    query_macros: Vec<(String, Declared)>,
}

fn scan(krate: &str) -> Scan {
    let root = package_dir(krate);
    let mut files = Vec::new();
    rust_files(&root.join("src"), &mut files);
    files.sort();
    let mut scan = Scan::default();
    for file in files {
        let text = std::fs::read_to_string(&file)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", file.display()));
        let Ok(ast) = syn::parse_file(&text) else {
            // A file that is not a module on its own (an `include!`d fragment).
            continue;
        };
        let relative = file
            .strip_prefix(&root)
            .unwrap_or(&file)
            .display()
            .to_string();
        let mut visitor = ApiVisitor {
            krate,
            file: relative,
            owner: None,
            trait_owner: false,
            scan: &mut scan,
        };
        visitor.visit_file(&ast);
    }
    scan
}

struct ApiVisitor<'a> {
    krate: &'a str,
    file: String,
    /// The trait or type whose items are being visited.
    owner: Option<String>,
    /// Whether `owner` is a public trait, whose methods are all public.
    trait_owner: bool,
    scan: &'a mut Scan,
}

impl ApiVisitor<'_> {
    fn declared(&self) -> Declared {
        Declared {
            krate: self.krate.to_owned(),
            file: self.file.clone(),
        }
    }

    fn function(&mut self, sig: &syn::Signature, outer_generics: Option<&syn::Generics>) {
        let item = match &self.owner {
            Some(owner) => format!("{owner}::{}", sig.ident),
            None => sig.ident.to_string(),
        };
        self.scan.public.push((item.clone(), sig.inputs.len()));
        let mut bounds = bounds_of(&sig.generics);
        if let Some(outer) = outer_generics {
            for (name, traits) in bounds_of(outer) {
                bounds.entry(name).or_default().extend(traits);
            }
        }
        let sql_parameters: Vec<usize> = (sig.inputs.iter().enumerate())
            .filter(|(_, input)| match input {
                syn::FnArg::Typed(typed) => sql_parameter(&typed.pat, &typed.ty, &bounds),
                syn::FnArg::Receiver(_) => false,
            })
            .map(|(i, _)| i)
            .collect();
        if !sql_parameters.is_empty() {
            let at = self.declared();
            self.scan.takes_sql.push((item, at, sql_parameters));
        }
    }
}

impl<'ast> Visit<'ast> for ApiVisitor<'_> {
    fn visit_item_fn(&mut self, f: &'ast syn::ItemFn) {
        if is_public(&f.vis) && !cfg_test(&f.attrs) {
            self.function(&f.sig, None);
        }
    }

    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        if !cfg_test(&m.attrs) {
            syn::visit::visit_item_mod(self, m);
        }
    }

    fn visit_item_impl(&mut self, imp: &'ast syn::ItemImpl) {
        // A trait's methods are listed where the trait declares them.
        if imp.trait_.is_some() || cfg_test(&imp.attrs) {
            return;
        }
        let Some(owner) = type_name(&imp.self_ty) else {
            return;
        };
        let outer = (self.owner.replace(owner), self.trait_owner);
        self.trait_owner = false;
        for item in &imp.items {
            if let syn::ImplItem::Fn(f) = item
                && is_public(&f.vis)
                && !cfg_test(&f.attrs)
            {
                self.function(&f.sig, Some(&imp.generics));
            }
        }
        (self.owner, self.trait_owner) = outer;
    }

    fn visit_item_trait(&mut self, t: &'ast syn::ItemTrait) {
        if !is_public(&t.vis) || cfg_test(&t.attrs) {
            return;
        }
        let outer = (self.owner.replace(t.ident.to_string()), self.trait_owner);
        self.trait_owner = true;
        for item in &t.items {
            if let syn::TraitItem::Fn(f) = item
                && !cfg_test(&f.attrs)
            {
                self.function(&f.sig, Some(&t.generics));
            }
        }
        (self.owner, self.trait_owner) = outer;
    }

    fn visit_item_macro(&mut self, m: &'ast syn::ItemMacro) {
        let exported = m.attrs.iter().any(|a| a.path().is_ident("macro_export"));
        if m.mac.path.is_ident("macro_rules")
            && exported
            && let Some(name) = &m.ident
            && name.to_string().starts_with("query")
        {
            let at = self.declared();
            self.scan.query_macros.push((name.to_string(), at));
        }
    }
}

/// Whether a parameter carries SQL (the module docs' criterion).
fn sql_parameter(
    pat: &syn::Pat,
    ty: &syn::Type,
    bounds: &BTreeMap<String, BTreeSet<String>>,
) -> bool {
    let name = match pat {
        syn::Pat::Ident(p) => p.ident.to_string().trim_start_matches('_').to_owned(),
        _ => String::new(),
    };
    let is_bounded_by = |ty: &syn::Type, wanted: &str| match ty {
        syn::Type::ImplTrait(imp) => imp.bounds.iter().any(|b| bound_is(b, wanted)),
        syn::Type::Path(p) => p
            .path
            .get_ident()
            .and_then(|ident| bounds.get(&ident.to_string()))
            .is_some_and(|traits| traits.contains(wanted)),
        _ => false,
    };
    let inner = peel(ty);
    if is_bounded_by(inner, "SqlSafeStr") || is_bounded_by(inner, "Execute") {
        return true;
    }
    if last_segment(inner).is_some_and(|s| s == "SqlStr" || s == "Statement" || s == "PgStatement")
    {
        return true;
    }
    let text_name = matches!(name.as_str(), "sql" | "query" | "statement" | "init");
    let string_type = match inner {
        syn::Type::Path(p) => p.path.is_ident("str") || p.path.is_ident("String"),
        syn::Type::ImplTrait(imp) => imp.bounds.iter().any(|b| {
            let text = quote::ToTokens::to_token_stream(b)
                .to_string()
                .replace(' ', "");
            matches!(text.as_str(), "AsRef<str>" | "Into<String>" | "Display")
        }),
        _ => false,
    };
    text_name && string_type
}

/// `T` for `&T`, `&mut T`, `Option<T>`, `(T)`.
fn peel(ty: &syn::Type) -> &syn::Type {
    match ty {
        syn::Type::Reference(r) => peel(&r.elem),
        syn::Type::Paren(p) => peel(&p.elem),
        syn::Type::Group(g) => peel(&g.elem),
        syn::Type::Path(p) if p.qself.is_none() => {
            let last = p.path.segments.last().expect("a path has a segment");
            match &last.arguments {
                syn::PathArguments::AngleBracketed(args) if last.ident == "Option" => {
                    match args.args.first() {
                        Some(syn::GenericArgument::Type(inner)) => peel(inner),
                        _ => ty,
                    }
                }
                _ => ty,
            }
        }
        _ => ty,
    }
}

fn last_segment(ty: &syn::Type) -> Option<String> {
    match ty {
        syn::Type::Path(p) => p.path.segments.last().map(|s| s.ident.to_string()),
        _ => None,
    }
}

fn bound_is(bound: &syn::TypeParamBound, wanted: &str) -> bool {
    matches!(bound, syn::TypeParamBound::Trait(t)
        if t.path.segments.last().is_some_and(|s| s.ident == wanted))
}

/// Each type parameter's trait bounds (by the trait's last path segment), inline and in the
/// `where` clause.
fn bounds_of(generics: &syn::Generics) -> BTreeMap<String, BTreeSet<String>> {
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut add = |name: String, bounds: &syn::punctuated::Punctuated<syn::TypeParamBound, _>| {
        for bound in bounds {
            if let syn::TypeParamBound::Trait(t) = bound
                && let Some(last) = t.path.segments.last()
            {
                out.entry(name.clone())
                    .or_default()
                    .insert(last.ident.to_string());
            }
        }
    };
    for param in generics.type_params() {
        add(param.ident.to_string(), &param.bounds);
    }
    if let Some(clause) = &generics.where_clause {
        for predicate in &clause.predicates {
            if let syn::WherePredicate::Type(p) = predicate
                && let syn::Type::Path(ty) = &p.bounded_ty
                && let Some(ident) = ty.path.get_ident()
            {
                add(ident.to_string(), &p.bounds);
            }
        }
    }
    out
}

fn type_name(ty: &syn::Type) -> Option<String> {
    match ty {
        syn::Type::Path(p) => p.path.segments.last().map(|s| s.ident.to_string()),
        syn::Type::Reference(r) => type_name(&r.elem),
        _ => None,
    }
}

fn is_public(vis: &syn::Visibility) -> bool {
    matches!(vis, syn::Visibility::Public(_))
}

fn cfg_test(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("cfg")
            && quote::ToTokens::to_token_stream(&a.meta)
                .to_string()
                .replace(' ', "")
                == "cfg(test)"
    })
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let entries =
        std::fs::read_dir(dir).unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()));
    for entry in entries {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The workspace's `Cargo.lock`.
fn lockfile() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../Cargo.lock");
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

/// The version of `package` that `Cargo.lock` pins (there must be exactly one).
fn locked_version(package: &str) -> String {
    let lock = lockfile();
    let versions: Vec<&str> = lock
        .split("[[package]]")
        .filter(|entry| {
            entry
                .lines()
                .any(|l| l.trim() == format!("name = \"{package}\""))
        })
        .filter_map(|entry| {
            entry
                .lines()
                .find_map(|l| l.trim().strip_prefix("version = \""))
                .and_then(|v| v.strip_suffix('"'))
        })
        .collect();
    assert_eq!(
        versions.len(),
        1,
        "Cargo.lock should pin one version of {package}, it has {versions:?}"
    );
    versions[0].to_owned()
}

fn sqlx_version() -> String {
    locked_version("sqlx")
}

/// The source directory of the pinned `package` in cargo's registry (`$CARGO_HOME`, else
/// `~/.cargo`).
fn package_dir(package: &str) -> PathBuf {
    let version = locked_version(package);
    let home = std::env::var_os("CARGO_HOME").map_or_else(
        || {
            PathBuf::from(std::env::var_os("HOME").expect("HOME or CARGO_HOME is set"))
                .join(".cargo")
        },
        PathBuf::from,
    );
    let registry = home.join("registry").join("src");
    let wanted = format!("{package}-{version}");
    let found: Vec<PathBuf> = std::fs::read_dir(&registry)
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", registry.display()))
        .filter_map(|index| {
            let dir = index.ok()?.path().join(&wanted);
            dir.join("Cargo.toml").is_file().then_some(dir)
        })
        .collect();
    found.into_iter().next().unwrap_or_else(|| {
        panic!(
            "{wanted}'s sources are not in {} (build the workspace once so cargo fetches them)",
            registry.display()
        )
    })
}
