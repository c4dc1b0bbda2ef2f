//! `#[derive(Word)]` for `skelaff-stm`: field-less enums and single-field
//! newtypes as one transactional word.
//!
//! Use it through `skelaff_stm::Word` (its feature `derive`, on by
//! default) or `skelaff::stm::Word`; the examples and the rules are in the
//! docs of that trait. What the derive accepts:
//!
//! - **field-less enums** (implicit or explicit discriminants, any `repr`
//!   except `i128`/`u128`, whose discriminants need not fit in 64 bits):
//!   `to_word` is the discriminant cast to `u64`; `from_word` matches the
//!   word against each variant's discriminant, cast the same way, and
//!   gives the first variant for any other word. No `transmute`: a word
//!   that is no variant's discriminant cannot become an invalid value.
//! - **structs with exactly one field** (tuple or named, `#[repr(transparent)]`
//!   or not) whose type is `Word`: the word is the field's word, so the
//!   round trip and totality are the field type's own. Generic newtypes get
//!   the bound `Field: Word`.
//!
//! Everything else is refused with a `compile_error!` on the type's name
//! that says why and points at `TPtr<T>` for values larger than a word.
//!
//! `Word` is a safe trait (its contract, `from_word(to_word(x)) == x` and a
//! total `from_word`, is a correctness property, not a safety one), so the
//! generated impls contain no `unsafe` code.
//!
//! `#[word(crate = path)]` on the type names the path to `skelaff_stm`
//! (default `::skelaff_stm`).

use proc_macro::TokenStream;
use proc_macro2::{Span, TokenStream as TokenStream2};
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Data, DeriveInput, Fields, Path, parse_macro_input, parse_quote};

/// Implements `skelaff_stm::Word` for a field-less enum or a single-field
/// struct over a `Word` type. See the crate docs and `skelaff_stm::Word`.
#[proc_macro_derive(Word, attributes(word))]
pub fn derive_word(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    expand(&input, parse_quote!(::skelaff_stm)).into()
}

/// The same derive with the trait reached as `::skelaff::stm::Word`: what
/// the umbrella crate `skelaff` re-exports as `skelaff::stm::Word`, so a
/// program that depends on `skelaff` alone can derive it.
#[doc(hidden)]
#[proc_macro_derive(UmbrellaWord, attributes(word))]
pub fn derive_umbrella_word(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    expand(&input, parse_quote!(::skelaff::stm)).into()
}

/// The impl, or a `compile_error!` saying why there is none.
fn expand(input: &DeriveInput, default_krate: Path) -> TokenStream2 {
    match try_expand(input, default_krate) {
        Ok(t) => t,
        Err(e) => e.to_compile_error(),
    }
}

/// What to say, after the reason, whenever a type is refused.
const ADVICE: &str = "`#[derive(Word)]` supports field-less enums and structs with exactly one field whose type \
                      is already `Word`. For a value larger than one 64-bit word, keep it in a heap object and \
                      store a pointer to it: `TVar<Option<TPtr<T>>>`, allocated with `tx.alloc(value)` (see \
                      `skelaff_stm::TPtr`); for several small fields that fit in 64 bits together, implement \
                      `Word` by hand (pack them with shifts)";

fn refuse(span: Span, why: String) -> syn::Error {
    syn::Error::new(span, format!("{why}. {ADVICE}"))
}

fn try_expand(input: &DeriveInput, default_krate: Path) -> syn::Result<TokenStream2> {
    let krate = crate_path(input)?.unwrap_or(default_krate);
    let name = &input.ident;
    match &input.data {
        Data::Enum(e) => enum_impl(input, &krate, e),
        Data::Struct(s) => {
            let mut fields = s.fields.iter();
            match (fields.next(), fields.next()) {
                (Some(f), None) => newtype_impl(input, &krate, f, matches!(s.fields, Fields::Named(_))),
                (None, _) => Err(refuse(
                    name.span(),
                    format!("`{name}` has no fields: `#[derive(Word)]` wants the one field that holds the word"),
                )),
                (Some(_), Some(_)) => Err(refuse(
                    name.span(),
                    format!("`{name}` has {} fields and cannot be one transactional word", s.fields.len()),
                )),
            }
        }
        Data::Union(_) => Err(refuse(name.span(), format!("`{name}` is a union and cannot be one transactional word"))),
    }
}

/// The path given by `#[word(crate = path)]`, if any.
fn crate_path(input: &DeriveInput) -> syn::Result<Option<Path>> {
    let mut found = None;
    for attr in input.attrs.iter().filter(|a| a.path().is_ident("word")) {
        attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("crate") {
                let value = meta.value()?;
                // Either `crate = path` or `crate = "path"`, as serde takes it.
                let path: Path =
                    if value.peek(syn::LitStr) { value.parse::<syn::LitStr>()?.parse()? } else { value.parse()? };
                found = Some(path);
                Ok(())
            } else {
                Err(meta
                    .error("unknown `word` attribute: the one there is, is `#[word(crate = path::to::skelaff_stm)]`"))
            }
        })?;
    }
    Ok(found)
}

/// The integer type of a `#[repr(...)]`, if the enum has one.
fn repr_int(input: &DeriveInput) -> syn::Result<Option<syn::Ident>> {
    let mut found = None;
    for attr in input.attrs.iter().filter(|a| a.path().is_ident("repr")) {
        attr.parse_nested_meta(|meta| {
            if let Some(id) = meta.path.get_ident() {
                let s = id.to_string();
                if matches!(
                    s.as_str(),
                    "u8" | "u16" | "u32" | "u64" | "usize" | "i8" | "i16" | "i32" | "i64" | "isize" | "u128" | "i128"
                ) {
                    found = Some(id.clone());
                }
            }
            // `align(n)`, `packed(n)`: skip their arguments (all of them:
            // what is left unread inside the parentheses is an error).
            if meta.input.peek(syn::token::Paren) {
                let content;
                syn::parenthesized!(content in meta.input);
                content.parse::<proc_macro2::TokenStream>()?;
            }
            Ok(())
        })?;
    }
    Ok(found)
}

fn enum_impl(input: &DeriveInput, krate: &Path, e: &syn::DataEnum) -> syn::Result<TokenStream2> {
    let name = &input.ident;
    if let Some(v) = e.variants.iter().find(|v| !matches!(v.fields, Fields::Unit)) {
        return Err(refuse(
            v.ident.span(),
            format!(
                "variant `{name}::{}` has fields, so `{name}` cannot be one transactional word (only enums whose \
                 variants have no fields can)",
                v.ident
            ),
        ));
    }
    let Some(first) = e.variants.first() else {
        return Err(refuse(
            name.span(),
            format!("`{name}` has no variants: `from_word` must return a value and there is none"),
        ));
    };
    if let Some(r) = repr_int(input)? {
        if r == "u128" || r == "i128" {
            return Err(refuse(
                r.span(),
                format!("`{name}` is `#[repr({r})]`: its discriminants need not fit in one 64-bit word"),
            ));
        }
    }
    let (impl_g, ty_g, where_c) = input.generics.split_for_impl();
    let idents: Vec<_> = e.variants.iter().map(|v| &v.ident).collect();
    let consts: Vec<_> = (0..idents.len()).map(|i| format_ident!("__SKELAFF_WORD_{}", i)).collect();
    let first = &first.ident;
    Ok(quote! {
        // `Word` is a safe trait; this impl holds its contract without
        // `unsafe`: `to_word` is the discriminant (an `as` cast, defined for
        // every field-less enum), `from_word` compares the word with each
        // variant's discriminant cast the same way (distinct, as the
        // discriminants are and every repr but the refused 128-bit ones
        // fits in 64 bits), so the round trip is exact, and any other word
        // gives the first variant: total, and never an invalid value.
        #[automatically_derived]
        impl #impl_g #krate::Word for #name #ty_g #where_c {
            #[inline]
            fn to_word(self) -> u64 {
                self as u64
            }
            #[inline]
            #[allow(non_upper_case_globals, clippy::match_same_arms)]
            fn from_word(w: u64) -> Self {
                #( const #consts: u64 = #name::#idents as u64; )*
                match w {
                    #( #consts => #name::#idents, )*
                    // Not a discriminant: never stored by a `TVar<Self>`,
                    // but a speculative reader may decode any word.
                    _ => #name::#first,
                }
            }
        }
    })
}

fn newtype_impl(input: &DeriveInput, krate: &Path, field: &syn::Field, named: bool) -> syn::Result<TokenStream2> {
    let name = &input.ident;
    let ty = &field.ty;
    let mut generics = input.generics.clone();
    // A generic newtype is `Word` when its field is. A concrete field type
    // gets no bound: a missing impl then shows at the field, not as a
    // trivially false `where` clause.
    if generics.type_params().next().is_some() {
        generics.make_where_clause().predicates.push(parse_quote!(#ty: #krate::Word));
    }
    let (impl_g, ty_g, where_c) = generics.split_for_impl();
    let (get, make) = match (&field.ident, named) {
        (Some(f), true) => (quote!(self.#f), quote!(Self { #f: inner })),
        _ => (quote!(self.0), quote!(Self(inner))),
    };
    // The field's type is where a missing `Word` impl shows: point there.
    let check = quote_spanned! {ty.span()=> <#ty as #krate::Word>::from_word(w) };
    Ok(quote! {
        // `Word` is a safe trait; this impl holds its contract without
        // `unsafe`: the word is the one field's word, so the round trip and
        // the totality of `from_word` are the field type's own.
        #[automatically_derived]
        impl #impl_g #krate::Word for #name #ty_g #where_c {
            #[inline]
            fn to_word(self) -> u64 {
                <#ty as #krate::Word>::to_word(#get)
            }
            #[inline]
            fn from_word(w: u64) -> Self {
                let inner = #check;
                #make
            }
        }
    })
}
