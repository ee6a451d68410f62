//! Work in progress: replaced by the macros implementation.
use proc_macro::TokenStream;

#[proc_macro_attribute]
pub fn leader_role(_args: TokenStream, item: TokenStream) -> TokenStream {
    item
}

#[proc_macro_attribute]
pub fn fenced(_args: TokenStream, item: TokenStream) -> TokenStream {
    item
}
