//! The whole-crate half of the fence check.
//!
//! `#[fenced]` checks the functions it is on. This audit checks the rest: it parses every `.rs`
//! file below a folder and reports each statement that locks rows (`FOR UPDATE`,
//! `FOR NO KEY UPDATE`, `FOR SHARE`, `FOR KEY SHARE`) in a string literal outside a `#[fenced]`
//! function, unless the function (or item) around it opts out with
//! `#[unfenced(reason = "…")]`. Call it from a test of the application:
//!
//! ```no_run
//! #[test]
//! fn every_row_lock_is_fenced() {
//!     leader_audit::assert_claims_fenced("src");
//! }
//! ```
//!
//! A literal counts when PostgreSQL's parser finds a row-locking clause in it, or, where it
//! does not parse (a `format!` template, a fragment), when it reads like a `SELECT … FOR
//! UPDATE`. Literals inside macro calls count too. Attributes (doc comments) and comments do
//! not.
//!
//! Through `leader-runtime` (feature `audit`) it is `leader_runtime::audit`.

use std::fmt;
use std::path::{Path, PathBuf};

use proc_macro2::{TokenStream, TokenTree};
use syn::visit::{self, Visit};

/// A row-locking statement outside a `#[fenced]` function.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// The file, as found below the audited folder.
    pub file: PathBuf,
    /// The literal's line in the file (1-based).
    pub line: usize,
    /// The function it is in (`Store::claim`), or the item, or `(module level)`.
    pub item: String,
    /// The first line of the statement, trimmed.
    pub fragment: String,
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}: `{}` locks rows outside a #[fenced] function: `{}`",
            self.file.display(),
            self.line,
            self.item,
            self.fragment
        )
    }
}

/// What stopped the audit from reading the sources.
#[derive(Debug)]
pub enum AuditError {
    /// A file or folder could not be read.
    Read {
        path: PathBuf,
        error: std::io::Error,
    },
    /// A file is not valid Rust.
    Parse { path: PathBuf, error: syn::Error },
}

impl fmt::Display for AuditError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AuditError::Read { path, error } => {
                write!(f, "cannot read {}: {error}", path.display())
            }
            AuditError::Parse { path, error } => {
                let at = error.span().start();
                write!(f, "{}:{}: not valid Rust: {error}", path.display(), at.line)
            }
        }
    }
}

impl std::error::Error for AuditError {}

/// Every row-locking statement outside a `#[fenced]` (or `#[unfenced]`) item in the `.rs` files
/// below `dir`. A relative `dir` is taken from the crate being tested (`CARGO_MANIFEST_DIR`),
/// else from the current directory.
pub fn unfenced_row_locks(dir: impl AsRef<Path>) -> Result<Vec<Finding>, AuditError> {
    let files = sources(dir)?;
    let mut findings = Vec::new();
    for path in files {
        let text = std::fs::read_to_string(&path).map_err(|error| AuditError::Read {
            path: path.clone(),
            error,
        })?;
        let ast = syn::parse_file(&text).map_err(|error| AuditError::Parse {
            path: path.clone(),
            error,
        })?;
        let mut auditor = Auditor {
            file: &path,
            scope: Vec::new(),
            exempt: 0,
            findings: &mut findings,
        };
        auditor.visit_file(&ast);
    }
    Ok(findings)
}

/// The `.rs` files below `dir` that [`unfenced_row_locks`] reads, sorted, as paths below the
/// resolved folder (a relative `dir` is taken from `CARGO_MANIFEST_DIR`, as there).
///
/// # Errors
///
/// [`AuditError::Read`] if a folder below `dir` cannot be read.
pub fn sources(dir: impl AsRef<Path>) -> Result<Vec<PathBuf>, AuditError> {
    let dir = resolve(dir.as_ref());
    let mut files = Vec::new();
    collect_rs_files(&dir, &mut files)?;
    files.sort();
    Ok(files)
}

/// The message of an audit that found `findings`, each on a line of its own with the fix; `None`
/// when it found none.
pub fn failure_message(findings: &[Finding]) -> Option<String> {
    if findings.is_empty() {
        return None;
    }
    let list: Vec<String> = findings.iter().map(|f| format!("  {f}")).collect();
    Some(format!(
        "{} row-locking statement(s) outside a #[fenced] function: move each into a #[fenced] \
         function with `AND leader_fence($1, $2)` in its WHERE, or mark the function \
         #[unfenced(reason = \"…\")]\n{}",
        findings.len(),
        list.join("\n")
    ))
}

/// Panics, naming file and line of each, if any row-locking statement below `dir` is outside a
/// `#[fenced]` function without an `#[unfenced(reason = "…")]` opt-out; see
/// [`unfenced_row_locks`].
///
/// # Panics
///
/// On findings, and when the sources cannot be read: a test cannot pass without looking.
pub fn assert_claims_fenced(dir: impl AsRef<Path>) {
    match unfenced_row_locks(dir.as_ref()) {
        Ok(findings) => {
            if let Some(message) = failure_message(&findings) {
                panic!("{message}");
            }
        }
        Err(e) => panic!("the fence audit could not read the sources: {e}"),
    }
}

fn resolve(dir: &Path) -> PathBuf {
    if dir.is_absolute() {
        return dir.to_owned();
    }
    match std::env::var_os("CARGO_MANIFEST_DIR") {
        Some(root) => PathBuf::from(root).join(dir),
        None => dir.to_owned(),
    }
}

fn collect_rs_files(dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), AuditError> {
    let read = |error| AuditError::Read {
        path: dir.to_owned(),
        error,
    };
    for entry in std::fs::read_dir(dir).map_err(read)? {
        let path = entry.map_err(read)?.path();
        if path.is_dir() {
            collect_rs_files(&path, out)?;
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
    Ok(())
}

struct Auditor<'a> {
    file: &'a Path,
    /// The names of the items the walk is in (`Store`, `claim`).
    scope: Vec<String>,
    /// How many `#[fenced]` / `#[unfenced]` items the walk is in.
    exempt: usize,
    findings: &'a mut Vec<Finding>,
}

impl Auditor<'_> {
    fn within(&mut self, name: String, attrs: &[syn::Attribute], f: impl FnOnce(&mut Self)) {
        let exempt = attrs.iter().any(|a| {
            a.path()
                .segments
                .last()
                .is_some_and(|s| s.ident == "fenced" || s.ident == "unfenced")
        });
        self.scope.push(name);
        self.exempt += usize::from(exempt);
        f(self);
        self.exempt -= usize::from(exempt);
        self.scope.pop();
    }

    fn literal(&mut self, lit: &syn::LitStr) {
        if self.exempt > 0 {
            return;
        }
        let sql = lit.value();
        if !locks_rows(&sql) {
            return;
        }
        let fragment = sql
            .lines()
            .map(str::trim)
            .find(|l| !l.is_empty() && !l.starts_with("--"))
            .unwrap_or("")
            .to_owned();
        self.findings.push(Finding {
            file: self.file.to_owned(),
            line: lit.span().start().line,
            item: if self.scope.is_empty() {
                "(module level)".to_owned()
            } else {
                self.scope.join("::")
            },
            fragment,
        });
    }

    fn tokens(&mut self, tokens: TokenStream) {
        for token in tokens {
            match token {
                TokenTree::Literal(literal) => {
                    if let Ok(lit) = syn::parse2::<syn::LitStr>(TokenTree::Literal(literal).into())
                    {
                        self.literal(&lit);
                    }
                }
                TokenTree::Group(group) => self.tokens(group.stream()),
                _ => {}
            }
        }
    }
}

impl<'ast> Visit<'ast> for Auditor<'_> {
    fn visit_item_fn(&mut self, f: &'ast syn::ItemFn) {
        self.within(f.sig.ident.to_string(), &f.attrs, |a| {
            visit::visit_item_fn(a, f)
        });
    }

    fn visit_impl_item_fn(&mut self, f: &'ast syn::ImplItemFn) {
        self.within(f.sig.ident.to_string(), &f.attrs, |a| {
            visit::visit_impl_item_fn(a, f)
        });
    }

    fn visit_trait_item_fn(&mut self, f: &'ast syn::TraitItemFn) {
        self.within(f.sig.ident.to_string(), &f.attrs, |a| {
            visit::visit_trait_item_fn(a, f)
        });
    }

    fn visit_item_impl(&mut self, i: &'ast syn::ItemImpl) {
        let name = quote_type(&i.self_ty);
        self.within(name, &i.attrs, |a| visit::visit_item_impl(a, i));
    }

    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        self.within(m.ident.to_string(), &m.attrs, |a| {
            visit::visit_item_mod(a, m)
        });
    }

    fn visit_item_const(&mut self, c: &'ast syn::ItemConst) {
        self.within(c.ident.to_string(), &c.attrs, |a| {
            visit::visit_item_const(a, c)
        });
    }

    fn visit_item_static(&mut self, s: &'ast syn::ItemStatic) {
        self.within(s.ident.to_string(), &s.attrs, |a| {
            visit::visit_item_static(a, s)
        });
    }

    // Doc comments and other attributes are not statements.
    fn visit_attribute(&mut self, _: &'ast syn::Attribute) {}

    fn visit_lit_str(&mut self, lit: &'ast syn::LitStr) {
        self.literal(lit);
    }

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        self.tokens(mac.tokens.clone());
    }
}

fn quote_type(ty: &syn::Type) -> String {
    match ty {
        syn::Type::Path(p) => p
            .path
            .segments
            .last()
            .map_or_else(String::new, |s| s.ident.to_string()),
        _ => "impl".to_owned(),
    }
}

/// Whether a literal holds a row-locking statement: by PostgreSQL's parser where it parses,
/// else by reading like `SELECT … FOR UPDATE`.
fn locks_rows(sql: &str) -> bool {
    let lower = sql.to_ascii_lowercase();
    if !lower.contains("for") {
        return false;
    }
    if let Ok(found) = leader_fence_check::row_locking_queries(sql) {
        return !found.is_empty();
    }
    let words: Vec<&str> = lower
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
        .collect();
    let selects = words.contains(&"select");
    let locks = (0..words.len()).any(|i| {
        words[i] == "for"
            && matches!(
                &words[i + 1..],
                ["update", ..] | ["share", ..] | ["no", "key", "update", ..] | ["key", "share", ..]
            )
    });
    selects && locks
}

#[cfg(test)]
mod tests {
    use super::locks_rows;

    #[test]
    fn what_counts_as_a_row_lock() {
        assert!(locks_rows(
            "SELECT id FROM t WHERE a FOR UPDATE SKIP LOCKED"
        ));
        assert!(locks_rows("select id from t for no key update"));
        assert!(locks_rows("SELECT id FROM t FOR KEY SHARE"));
        assert!(locks_rows("SELECT id FROM {table} WHERE a FOR SHARE"));
        assert!(!locks_rows("SELECT id FROM t WHERE a"));
        assert!(!locks_rows("waiting for update of the config"));
        assert!(!locks_rows("UPDATE t SET note = 'for update' WHERE id = 1"));
    }
}
