//! Just enough of Rust's lexical grammar to find paths: identifiers, `::`
//! and the punctuation that delimits items, with comments (doc comments
//! included: an intra-doc link is not an import) and the contents of
//! character and numeric literals dropped. String literals are kept, because
//! `#[path = "..."]` names a module's file.

/// One token and the line it starts on (1-based).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Token {
    pub(super) kind: Kind,
    pub(super) line: usize,
}

/// What a token is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Kind {
    /// An identifier or keyword (`r#` stripped from raw identifiers).
    Ident(String),
    /// `::`.
    PathSep,
    /// A string literal's contents, escapes left as written.
    Str(String),
    /// Any other literal or a lifetime: nothing a path can continue through.
    Other,
    /// A single punctuation character.
    Punct(char),
}

/// The tokens of `src`.
pub(super) fn tokens(src: &str) -> Vec<Token> {
    let b: Vec<char> = src.chars().collect();
    let mut out = Vec::new();
    let (mut i, mut line) = (0usize, 1usize);
    let at = |i: usize| b.get(i).copied().unwrap_or('\0');
    while i < b.len() {
        let c = b[i];
        let start_line = line;
        let mut push = |kind| out.push(Token { kind, line: start_line });
        match c {
            '\n' => {
                line += 1;
                i += 1;
            }
            c if c.is_whitespace() => i += 1,
            '/' if at(i + 1) == '/' => {
                while i < b.len() && b[i] != '\n' {
                    i += 1;
                }
            }
            '/' if at(i + 1) == '*' => {
                let mut depth = 0usize;
                while i < b.len() {
                    if b[i] == '/' && at(i + 1) == '*' {
                        depth += 1;
                        i += 2;
                    } else if b[i] == '*' && at(i + 1) == '/' {
                        depth -= 1;
                        i += 2;
                        if depth == 0 {
                            break;
                        }
                    } else {
                        if b[i] == '\n' {
                            line += 1;
                        }
                        i += 1;
                    }
                }
            }
            '"' => {
                let (s, next, lines) = quoted(&b, i + 1);
                push(Kind::Str(s));
                line += lines;
                i = next;
            }
            '\'' => {
                // A character literal ('a', '\n', '\u{1F600}') or a lifetime ('a, 'static).
                if at(i + 1) == '\\' {
                    // The quote, the backslash and the escaped character ('\'' included).
                    i += 3;
                    while i < b.len() && b[i] != '\'' {
                        i += 1;
                    }
                    i += 1;
                } else if at(i + 2) == '\'' {
                    i += 3;
                } else {
                    i += 1;
                    while i < b.len() && is_ident_char(b[i]) {
                        i += 1;
                    }
                }
                push(Kind::Other);
            }
            c if c.is_ascii_digit() => {
                while i < b.len() && (is_ident_char(b[i]) || (b[i] == '.' && at(i + 1).is_ascii_digit())) {
                    i += 1;
                }
                push(Kind::Other);
            }
            c if is_ident_start(c) => {
                let s = i;
                while i < b.len() && is_ident_char(b[i]) {
                    i += 1;
                }
                let word: String = b[s..i].iter().collect();
                // String prefixes: b"..", c"..", r"..", r#".."#, br#".."#, cr"..".
                let raw = matches!(word.as_str(), "r" | "br" | "cr");
                if raw && (at(i) == '"' || (at(i) == '#' && (at(i + 1) == '"' || at(i + 1) == '#'))) {
                    let hashes = b[i..].iter().take_while(|&&c| c == '#').count();
                    let mut j = i + hashes + 1;
                    let body = j;
                    loop {
                        if j >= b.len() {
                            break;
                        }
                        if b[j] == '"' && b[j + 1..].iter().take(hashes).filter(|&&c| c == '#').count() == hashes {
                            break;
                        }
                        if b[j] == '\n' {
                            line += 1;
                        }
                        j += 1;
                    }
                    push(Kind::Str(b[body..j.min(b.len())].iter().collect()));
                    i = (j + 1 + hashes).min(b.len());
                } else if matches!(word.as_str(), "b" | "c") && at(i) == '"' {
                    let (s, next, lines) = quoted(&b, i + 1);
                    push(Kind::Str(s));
                    line += lines;
                    i = next;
                } else if word == "b" && at(i) == '\'' {
                    // A byte literal: the quote is lexed next, as a character literal.
                    continue;
                } else if word == "r" && at(i) == '#' && is_ident_start(at(i + 1)) {
                    let s = i + 1;
                    i = s;
                    while i < b.len() && is_ident_char(b[i]) {
                        i += 1;
                    }
                    push(Kind::Ident(b[s..i].iter().collect()));
                } else {
                    push(Kind::Ident(word));
                }
            }
            ':' if at(i + 1) == ':' => {
                push(Kind::PathSep);
                i += 2;
            }
            c => {
                push(Kind::Punct(c));
                i += 1;
            }
        }
    }
    out
}

/// The contents of a `"`-quoted string whose body starts at `i`, the index
/// after its closing quote, and the newlines inside it.
fn quoted(b: &[char], mut i: usize) -> (String, usize, usize) {
    let (start, mut lines) = (i, 0);
    while i < b.len() && b[i] != '"' {
        if b[i] == '\\' {
            i += 1;
        }
        if b.get(i) == Some(&'\n') {
            lines += 1;
        }
        i += 1;
    }
    (b[start..i.min(b.len())].iter().collect(), (i + 1).min(b.len()), lines)
}

fn is_ident_start(c: char) -> bool {
    c == '_' || c.is_alphabetic()
}

fn is_ident_char(c: char) -> bool {
    c == '_' || c.is_alphanumeric()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(src: &str) -> Vec<Kind> {
        tokens(src).into_iter().map(|t| t.kind).collect()
    }

    fn ident(s: &str) -> Kind {
        Kind::Ident(s.to_owned())
    }

    #[test]
    fn paths_survive_and_comments_do_not() {
        let src = "/// see [`crate::a::B`]\nuse crate::x::{y, z}; // crate::w\n/* crate::v /* nested */ */ r#type::q";
        assert_eq!(
            kinds(src),
            vec![
                ident("use"),
                ident("crate"),
                Kind::PathSep,
                ident("x"),
                Kind::PathSep,
                Kind::Punct('{'),
                ident("y"),
                Kind::Punct(','),
                ident("z"),
                Kind::Punct('}'),
                Kind::Punct(';'),
                ident("type"),
                Kind::PathSep,
                ident("q"),
            ]
        );
    }

    #[test]
    fn literals_hide_what_looks_like_paths_and_lines_are_counted() {
        let src = "let s = \"crate::a \\\" ::b\";\nlet r = r#\"crate::c \" \"#;\nlet q = ':'; let l: &'a str = x;\nb'\\''; crate";
        let t = tokens(src);
        assert!(!t.iter().any(|t| t.kind == ident("a") || t.kind == ident("c") || t.kind == ident("b")));
        assert_eq!(t.iter().filter(|t| matches!(t.kind, Kind::Str(_))).count(), 2);
        assert_eq!(t.last().unwrap(), &Token { kind: ident("crate"), line: 4 });
        assert!(t.contains(&Token { kind: Kind::Str("crate::c \" ".into()), line: 2 }));
    }
}
