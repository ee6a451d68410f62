//! Rule 4's other half: the fence parameter keeps its value. A binding that shadows it, an
//! assignment to it or a `&mut` borrow of it would let `fence.role()` / `fence.token()` mean
//! something else than the fence the function was given. One shadowing keeps it:
//! `let fence = fence;`, which `#[async_trait]` writes at the top of every method's future.

use syn::visit::{self, Visit};
use syn::{Expr, Ident, Macro, Pat};

use super::parse::macro_exprs;

/// Every shadowing, assignment or `&mut` borrow of the fence parameter in `block`.
pub fn misuses(block: &syn::Block, fence: &Ident) -> Vec<syn::Error> {
    let mut finder = Misuses {
        fence,
        found: Vec::new(),
    };
    finder.visit_block(block);
    finder.found
}

struct Misuses<'a> {
    fence: &'a Ident,
    found: Vec<syn::Error>,
}

impl Misuses<'_> {
    /// Whether `expr` is the fence itself (through `*`, parentheses and groups).
    fn is_fence(&self, expr: &Expr) -> bool {
        match expr {
            Expr::Path(p) => p.qself.is_none() && p.path.is_ident(self.fence),
            Expr::Unary(u) if matches!(u.op, syn::UnOp::Deref(_)) => self.is_fence(&u.expr),
            Expr::Paren(p) => self.is_fence(&p.expr),
            Expr::Group(g) => self.is_fence(&g.expr),
            _ => false,
        }
    }

    fn found(&mut self, at: &dyn quote::ToTokens, what: &str) {
        self.found.push(syn::Error::new_spanned(
            at,
            format!(
                "{what} the fence parameter `{0}`, so `{0}.role()` and `{0}.token()` might not \
                 be the fence this function was given: keep `{0}` unchanged and give other \
                 values other names",
                self.fence
            ),
        ));
    }
}

impl<'ast> Visit<'ast> for Misuses<'_> {
    fn visit_local(&mut self, local: &'ast syn::Local) {
        let rebinds_itself = matches!(&local.pat,
            Pat::Ident(binding) if binding.ident == *self.fence
                && binding.by_ref.is_none()
                && binding.subpat.is_none())
            && local.init.as_ref().is_some_and(|init| {
                init.diverge.is_none()
                    && matches!(&*init.expr, Expr::Path(p) if p.qself.is_none() && p.path.is_ident(self.fence))
            });
        if rebinds_itself {
            return;
        }
        visit::visit_local(self, local);
    }

    fn visit_pat(&mut self, pat: &'ast Pat) {
        if let Pat::Ident(binding) = pat
            && binding.ident == *self.fence
        {
            self.found(&binding.ident, "this binding shadows");
        }
        visit::visit_pat(self, pat);
    }

    fn visit_expr(&mut self, expr: &'ast Expr) {
        match expr {
            Expr::Assign(assign) if self.is_fence(&assign.left) => {
                self.found(&assign.left, "this assigns to");
            }
            Expr::Reference(reference)
                if reference.mutability.is_some() && self.is_fence(&reference.expr) =>
            {
                self.found(expr, "this borrows mutably");
            }
            _ => {}
        }
        visit::visit_expr(self, expr);
    }

    fn visit_macro(&mut self, mac: &'ast Macro) {
        for expr in macro_exprs(mac).into_iter().flatten() {
            self.visit_expr(&expr);
        }
    }
}
