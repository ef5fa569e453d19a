//! The Accumulo Access specification's own examples (SPECIFICATION.md and the test data of
//! apache/accumulo-access, `src/test/resources/testdata.json`), checked expression by
//! expression, plus the bounds that keep untrusted input from panicking.

use super::*;

fn auths(a: &[&str]) -> Authorizations {
    Authorizations::new(a.iter().map(|s| s.to_string()))
}

/// Data is accessible to several authorization sets only when every set may see it (the test
/// data's "multiple authorization sets").
fn check(sets: &[&[&str]], accessible: &[&str], inaccessible: &[&str], errors: &[&str]) {
    let sets: Vec<Authorizations> = sets.iter().map(|s| auths(s)).collect();
    for e in accessible {
        for s in &sets {
            assert_eq!(
                evaluate(e.as_bytes(), s),
                Ok(true),
                "{e:?} visible to {s:?}"
            );
        }
    }
    for e in inaccessible {
        assert!(validate(e.as_bytes()).is_ok(), "{e:?} is valid");
        assert!(
            sets.iter().any(|s| evaluate(e.as_bytes(), s) == Ok(false)),
            "{e:?} hidden from one of {sets:?}"
        );
    }
    for e in errors {
        assert!(
            matches!(validate(e.as_bytes()), Err(VisibilityError::Syntax { .. })),
            "{e:?} is invalid"
        );
    }
}

#[test]
fn specification_examples() {
    for e in [
        "BLUE",
        "RED&BLUE",
        "RED&BLUE&GREEN",
        "(RED&BLUE)|(GREEN&(PINK|PURPLE))",
    ] {
        assert!(validate(e.as_bytes()).is_ok(), "{e}");
    }
    for e in ["&BLUE", "(RED&BLUE)|", "RED&BLUE|GREEN", "RED|BLUE&GREEN"] {
        assert!(validate(e.as_bytes()).is_err(), "{e}");
    }
    let rg = auths(&["RED", "GREEN"]);
    assert_eq!(evaluate(b"RED&(BLUE|GREEN)", &rg), Ok(true));
    assert_eq!(evaluate(b"(RED&BLUE)|(GREEN&PINK)", &rg), Ok(false));
    let esc = auths(&["abc\\xyz", "abc!12"]);
    assert_eq!(evaluate(br#""abc!12"&"abc\\xyz"&GHI"#, &esc), Ok(false));
    assert_eq!(evaluate(br#""abc!12"&"abc\\xyz""#, &esc), Ok(true));
    // Empty authorizations see only the empty expression.
    assert_eq!(evaluate(b"", &Authorizations::default()), Ok(true));
    assert_eq!(evaluate(b"A", &Authorizations::default()), Ok(false));
}

#[test]
fn testdata_basic_expressions() {
    check(
        &[&["one", "two", "three", "four"]],
        &[
            "one",
            "one|five",
            "five|one",
            "(one)",
            "(one&two)|(foo&bar)",
            "(one|foo)&three",
            "one|foo|bar",
            "(one|foo)|bar",
            "((one|foo)|bar)&two",
            "",
            "one&two",
            "foor|four",
            "one&two&three&four",
            "one|two|three|four",
            "(one|five|six)&(two|seven|eight)&(three|eleven|nine|twenty)&four",
            "(one&five&six)|(two&one&four)|(three&eleven&nine&twenty)|onehundred",
            "(two&one&four)|(one&five&six)|(three&eleven&nine&twenty)|onehundred",
        ],
        &[
            "five",
            "one&five",
            "five&one",
            "((one|foo)|bar)&goober",
            "(one&five&six)|(two&seven&eight)|(three&eleven&nine&twenty)|onehundred",
            "(one|five|six)&(two|seven|eight)&(three|eleven|nine|twenty)&onehundred",
            "one&two&three&four&five",
            "six|seven|eight|nine",
        ],
        &[],
    );
    check(
        &[&["A1", "Z9"]],
        &[
            "A1",
            "Z9",
            "A1|G2",
            "G2|A1",
            "Z9|G2",
            "Z9|A1",
            "A1|Z9",
            "(A1|G2)&(Z9|G5)",
        ],
        &["Z8", "A2", "A2|Z8", "A1&Z8", "Z8&A1"],
        &[],
    );
}

#[test]
fn testdata_incorrect_expressions() {
    let errors = [
        "()",
        "()|()",
        "()&()",
        "&",
        "|",
        "(&)",
        "(|)",
        "A|",
        "|A",
        "A&",
        "&A",
        "&(five)",
        "|(five)",
        "(five)&",
        "five|",
        "a|(b)&",
        "(&five)",
        "(five|)",
        "one(five)",
        "(five)one",
        "(one)(two)",
        "a|(b(c))",
        "(",
        ")",
        "(a&b",
        "b|a)",
        "A|B)",
        "(A&B)|(C&D)&(E)",
        "a|b&c",
        "A&B&C|D",
        "A|(B|)",
        "A|(|B)",
        "A|(B&)",
        "A|(&B)",
        "((A)",
        "(A",
        "A)",
        "))",
        "(A|B))",
        "A&B)",
        "(A&B))",
        "A&)",
        "A|)",
        "(&A",
        "(|B",
        "A$B",
        "(A|(B&()))",
        "A|B&C",
        "A&B|C",
        "(A&B|C)|(C&Z)",
        "(A&B|C)&(C&Z)",
        "(A&B|C)|(D|C&Z)",
        "(A&B|C)&(D|C&Z)",
        "\"",
        "\"\\c\"",
        "\"\\\"",
        "\"\"\"",
        "\"\"\"&A",
        "!",
        "!|a",
        "a|!",
        "@",
        "@|a",
        "(@|a)",
        "a|@",
        "(a|@)",
        "#",
        "$",
        "%",
        "^",
        "*",
        "=",
        "+",
        "~",
        "`",
        "[",
        "]",
        "[A|Z]",
        "{",
        "{a|c}",
        "}",
        ",",
        "<",
        ">",
        "?",
        "&&",
        "a&&b",
        "a&b&&c",
        "||",
        "a||b",
        "a|b||c",
        "&|",
        "|&",
        "a|b&",
        "(|a)",
        "&a&b(a&b)",
        "#A",
        "#&",
        // Empty quoted tokens.
        "\"\"",
        "\"\"|A",
        "A|\"\"",
        "\"\"&A",
        "A&\"\"",
        "A&(\"\"|B)",
        "(\"\")",
        // With no authorizations.
        " ",
        "\n",
    ];
    check(&[&["A1", "Z9"]], &[], &[], &errors);
}

#[test]
fn testdata_non_alphanumeric_and_quoted() {
    check(
        &[&["a_b", "a-c", "a/d", "a:e", "a.f", "a_b-c/d:e.f"]],
        &[
            "a_b",
            "\"a_b\"",
            "a-c",
            "\"a-c\"",
            "a/d",
            "\"a/d\"",
            "a:e",
            "\"a:e\"",
            "a.f",
            "\"a.f\"",
            "a_b|a_z",
            "a-z|a-c",
            "a/d|a/z",
            "a:e|a:z",
            "a.z|a.f",
            "a_b&a-c&a/d&a:e&a.f",
            "(a-z|a-c)&(a/d|a/z)",
            "a_b-c/d:e.f",
            "a_b-c/d:e.f&a/d",
        ],
        &[
            "a_c",
            "b_b",
            "a-b",
            "a/c",
            "a:f",
            "a.e",
            "a_b&a_z",
            "a_b&a-b&a/d&a:e&a.f",
            "a_b-c/d:e.z",
            "a_b-c/d:e.f&a/c",
        ],
        &[],
    );
    check(
        &[&["_", "-", "/", ":", "."]],
        &["_", "\"_\"", "-", "/", ":", ".", "_&-", "_&(a|:)"],
        &["A&_", "A", "/&A", "B|(_&C)"],
        &[],
    );
    check(
        &[&["五", "六", "八", "九", "五十"]],
        &[
            "\"五\"|\"四\"",
            "\"五\"&(\"四\"|\"九\")",
            "\"五\"&(\"四\"|\"五十\")",
        ],
        &["\"五\"&\"四\"", "\"五\"&(\"四\"|\"三\")"],
        &[],
    );
    check(
        &[&["A#C", "A\"C", "A\\C", "AC"]],
        &[
            "\"A#C\"|\"A?C\"",
            "\"A\\\"C\"&\"A\\\\C\"",
            "(\"A\\\"C\"|B)&(\"A#C\"|D)",
        ],
        &["\"A#C\"&B"],
        &[],
    );
}

#[test]
fn testdata_multiple_sets_and_no_authorizations() {
    check(
        &[&["A", "B"], &["C", "D"]],
        &[
            "",
            "B|C",
            "(A&B)|(C&D)",
            "(A&B)|(C)",
            "(A&B)|C",
            "(A|C)&(B|D)",
        ],
        &["A", "A&B", "C&D", "A&C", "B&C", "A&B&C&D", "(A&C)|(B&D)"],
        &[],
    );
    check(&[&[]], &[""], &["A", "A&B", "A|B", "AB&(CD|E)"], &["()"]);
}

#[test]
fn bounds_are_errors_not_panics() {
    let deep = format!(
        "{}A{}",
        "(".repeat(MAX_DEPTH + 1),
        ")".repeat(MAX_DEPTH + 1)
    );
    assert!(validate(deep.as_bytes()).is_err());
    let ok = format!("{}A{}", "(".repeat(MAX_DEPTH), ")".repeat(MAX_DEPTH));
    assert!(validate(ok.as_bytes()).is_ok());
    let long = "A&".repeat(MAX_EXPRESSION_BYTES / 2) + "A";
    assert!(matches!(
        validate(long.as_bytes()),
        Err(VisibilityError::TooLong(_))
    ));
    assert!(validate(b"\"\xff\"").is_err());
    assert!(validate(b"\"A\\").is_err());
}

#[test]
fn error_messages_name_the_problem() {
    let e = validate(b"A|B&C").unwrap_err().to_string();
    assert!(e.contains("cannot be mixed without parentheses"), "{e}");
    assert!(e.contains("'A|B&C'"), "{e}");
}

#[test]
fn authorization_lists_and_quoting() {
    let a = parse_authorization_list(br#"A, b_c ,"x,y","q\"z""#).unwrap();
    assert_eq!(
        a.iter().cloned().collect::<Vec<_>>(),
        vec!["A", "b_c", "q\"z", "x,y"]
    );
    assert!(parse_authorization_list(b"").unwrap().is_empty());
    assert!(parse_authorization_list(b"A,").is_err());
    assert!(parse_authorization_list(b"A B").is_err());
    assert!(parse_authorization_list(b"\"A").is_err());
    for s in ["A", "x,y", "q\"z", "a\\b", "五"] {
        let q = quote(s);
        assert_eq!(evaluate(q.as_bytes(), &auths(&[s])), Ok(true), "{q}");
    }
    let held = auths(&["A", "B"]);
    assert_eq!(held.narrow(&auths(&["A"])), Ok(auths(&["A"])));
    assert_eq!(held.narrow(&auths(&["A", "C"])), Err("C".to_string()));
}

/// The fuzz target's properties (fuzz/fuzz_targets/visibility_expression.rs) over a fixed
/// stream of random expressions from a small alphabet, so every `cargo test` checks them:
/// no panic, validity independent of the authorizations, more authorizations never hide.
#[test]
fn random_expressions_keep_the_fuzz_properties() {
    const ALPHABET: &[&str] = &[
        "A", "B", "ab", "&", "|", "(", ")", "\"", "\\", " ", "é", ":",
    ];
    let mut seed: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let (a, ab) = (auths(&["A"]), auths(&["A", "B", "ab"]));
    let mut valid = 0;
    for _ in 0..20_000 {
        let len = (next() % 24) as usize;
        let expr: String = (0..len)
            .map(|_| ALPHABET[(next() % ALPHABET.len() as u64) as usize])
            .collect();
        let (x, y) = (
            evaluate(expr.as_bytes(), &a),
            evaluate(expr.as_bytes(), &ab),
        );
        assert_eq!(x.is_ok(), y.is_ok(), "{expr:?}");
        if x == Ok(true) {
            assert_eq!(y, Ok(true), "{expr:?}: more authorizations never hide");
        }
        valid += x.is_ok() as u32;
    }
    // The stream exercises both outcomes.
    assert!(valid > 100, "{valid} valid expressions");
}
