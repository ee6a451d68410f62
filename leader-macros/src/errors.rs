//! The crate's one error collector: every problem of a macro call is reported at once.

/// Collects `syn::Error`s; [`Errors::finish`] turns them into one combined error.
///
/// Dropping it unfinished while it holds errors is a bug in the macro (the errors would be
/// lost and the user's mistake would compile), so it panics in that case, as serde_derive's
/// `Ctxt` does.
#[derive(Default)]
pub struct Errors {
    errors: Option<syn::Error>,
    finished: bool,
}

impl Errors {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn push(&mut self, e: syn::Error) {
        match &mut self.errors {
            Some(all) => all.combine(e),
            None => self.errors = Some(e),
        }
    }

    /// The value of `result`, or `None` after pushing its error.
    pub fn check<T>(&mut self, result: syn::Result<T>) -> Option<T> {
        result.map_err(|e| self.push(e)).ok()
    }

    /// `Err` with every collected error combined, or `Ok(())`.
    pub fn finish(mut self) -> syn::Result<()> {
        self.finished = true;
        self.errors.take().map_or(Ok(()), Err)
    }
}

impl Extend<syn::Error> for Errors {
    fn extend<I: IntoIterator<Item = syn::Error>>(&mut self, errors: I) {
        errors.into_iter().for_each(|e| self.push(e));
    }
}

impl Drop for Errors {
    fn drop(&mut self) {
        if !self.finished && self.errors.is_some() && !std::thread::panicking() {
            panic!("leader-macros: errors were collected and then dropped unreported");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Errors;
    use proc_macro2::Span;

    #[test]
    fn combines_every_error() {
        let mut errors = Errors::new();
        errors.push(syn::Error::new(Span::call_site(), "one"));
        assert_eq!(
            errors.check::<()>(Err(syn::Error::new(Span::call_site(), "two"))),
            None
        );
        let all: Vec<String> = errors
            .finish()
            .unwrap_err()
            .into_iter()
            .map(|e| e.to_string())
            .collect();
        assert_eq!(all, ["one", "two"]);
        assert!(Errors::new().finish().is_ok());
    }

    #[test]
    #[should_panic(expected = "dropped unreported")]
    fn dropping_errors_unreported_is_a_bug() {
        let mut errors = Errors::new();
        errors.push(syn::Error::new(Span::call_site(), "lost"));
    }
}
