//! `assert_claims_fenced!("src")`: the whole-crate fence audit (`leader-audit`), run by the
//! compiler while it builds the crate's tests, into a `#[test]` that fails with what it found.
//!
//! The audit parses SQL with PostgreSQL's parser, which the macros already link: run here, it
//! costs the test build nothing more, where a test calling `leader-audit` at run time builds the
//! parser a second time, for the test's target.
//!
//! Parse: one optional string literal, the folder (default `src`), relative to the crate's
//! directory. Validate: it is relative and readable. Expand: a `#[test]` function that includes
//! every file read (so that editing one rebuilds it) and panics with the findings, if any.

use std::path::{Path, PathBuf};

use proc_macro2::{Span, TokenStream};
use quote::quote;
use syn::LitStr;
use syn::parse::{Parse, ParseStream};

/// The folder to audit, as written.
struct Input {
    dir: Option<LitStr>,
}

impl Parse for Input {
    fn parse(input: ParseStream<'_>) -> syn::Result<Input> {
        if input.is_empty() {
            return Ok(Input { dir: None });
        }
        let dir: LitStr = input.parse().map_err(|error| {
            syn::Error::new(
                error.span(),
                "expected the folder to audit, a string relative to the crate's directory: \
                 `assert_claims_fenced!(\"src\")`",
            )
        })?;
        if !input.is_empty() {
            return Err(input.error(
                "expected one argument, the folder to audit: `assert_claims_fenced!(\"src\")`",
            ));
        }
        Ok(Input { dir: Some(dir) })
    }
}

/// The folder, resolved against `CARGO_MANIFEST_DIR`.
fn folder(input: &Input) -> syn::Result<PathBuf> {
    let (shown, span) = match &input.dir {
        Some(dir) => (dir.value(), dir.span()),
        None => ("src".to_owned(), Span::call_site()),
    };
    if Path::new(&shown).is_absolute() {
        return Err(syn::Error::new(
            span,
            "the folder must be relative to the crate's directory (CARGO_MANIFEST_DIR), e.g. \
             `assert_claims_fenced!(\"src\")`, so the build works on every machine",
        ));
    }
    let Some(root) = std::env::var_os("CARGO_MANIFEST_DIR") else {
        return Err(syn::Error::new(
            span,
            "CARGO_MANIFEST_DIR is not set: build with cargo, or call \
             `leader_audit::assert_claims_fenced` from a test instead",
        ));
    };
    Ok(PathBuf::from(root).join(shown))
}

pub fn assert_claims_fenced(input: TokenStream) -> TokenStream {
    let expanded = syn::parse2::<Input>(input).and_then(|input| {
        let span = input
            .dir
            .as_ref()
            .map_or_else(Span::call_site, LitStr::span);
        let dir = folder(&input)?;
        let audit_error = |error: leader_audit::AuditError| {
            syn::Error::new(
                span,
                format!("the fence audit cannot read the sources: {error}"),
            )
        };
        let files = leader_audit::sources(&dir).map_err(audit_error)?;
        let findings = leader_audit::unfenced_row_locks(&dir).map_err(audit_error)?;
        Ok(expand(&files, leader_audit::failure_message(&findings)))
    });
    expanded.unwrap_or_else(|error| {
        // The test is still emitted, failing with the error, so that the crate's other tests
        // build and run.
        let message = error.to_string();
        let error = error.to_compile_error();
        quote! {
            #error
            #[test]
            fn every_row_lock_is_fenced() {
                panic!("{}", #message);
            }
        }
    })
}

fn expand(files: &[PathBuf], failure: Option<String>) -> TokenStream {
    let files = files.iter().map(|file| file.to_string_lossy().into_owned());
    let verdict = failure.map(|message| quote!(panic!("{}", #message);));
    quote! {
        /// Every row-locking statement of the crate is in a `#[fenced]` function, or its item
        /// says why not with `#[unfenced(reason = "…")]`: the audit ran when this test was
        /// compiled, and an edit of any file it read compiles it again.
        #[test]
        fn every_row_lock_is_fenced() {
            // Includes every file the audit read, so that editing one rebuilds this test.
            const _: &[&[u8]] = &[#(include_bytes!(#files)),*];
            #verdict
        }
    }
}

#[cfg(test)]
mod tests {
    use quote::quote;

    use super::assert_claims_fenced;

    /// The macro's expansion on `dir` (relative to this crate's directory), as text.
    fn expanded(dir: &str) -> String {
        assert_claims_fenced(quote!(#dir)).to_string()
    }

    const FIXTURES: &str = "../crates/leader-audit/tests/fixtures";

    #[test]
    fn a_row_lock_outside_fenced_makes_the_test_fail_naming_it() {
        let text = expanded(&format!("{FIXTURES}/unfenced"));
        assert!(text.contains("fn every_row_lock_is_fenced"), "{text}");
        assert!(text.contains("panic !"), "{text}");
        assert!(text.contains("outside a #[fenced] function"), "{text}");
        assert!(text.contains("include_bytes !"), "{text}");
    }

    #[test]
    fn fenced_and_opted_out_row_locks_pass() {
        let text = expanded(&format!("{FIXTURES}/opted_out"));
        assert!(text.contains("fn every_row_lock_is_fenced"), "{text}");
        assert!(!text.contains("panic !"), "{text}");
    }

    #[test]
    fn an_absolute_or_missing_folder_is_a_compile_error_and_the_test_still_fails() {
        for dir in ["/etc", "no_such_folder"] {
            let text = expanded(dir);
            assert!(text.contains("compile_error"), "{dir}: {text}");
            assert!(
                text.contains("fn every_row_lock_is_fenced"),
                "{dir}: {text}"
            );
        }
    }
}
