//! Snapshots of what `#[leader_role]` and `#[fenced]` expand to, and the docs that show them.
//!
//! Each case's input goes through the macro's own expansion code (token streams in, printed
//! with `prettyplease`) and must equal its file in `tests/expansions/`, which holds the input as
//! comments and the expansion below it. The attribute docs in `lib.rs` include those files
//! (`#[doc = include_str!(..)]`), and `docs/expansion.md` holds each between generated-block
//! markers, checked here; so an expansion that changes fails this test until the snapshots and
//! the page are rewritten, with `UPDATE_EXPECT=1 cargo test -p leader-macros expansions`.
//!
//! Checked-in files and an update variable (the `expect-test` convention) rather than `insta`:
//! the docs include the very files the test compares, six files need no review tool, and the
//! workspace gains no dependency tree for them.

use std::path::PathBuf;

use generated_block::Markers;
use proc_macro2::TokenStream;
use quote::ToTokens;

/// One input to expand: its file's stem in `tests/expansions/`, and the annotated fn.
struct Case {
    name: &'static str,
    input: &'static str,
}

const CASES: &[Case] = &[
    Case {
        name: "interval",
        input: r#"
#[leader_role("billing", every = "1h")]
pub async fn bill(tick: TickContext) -> Result<(), BillingError> {
    billing::run(tick.pool(), tick.fence()).await
}
"#,
    },
    Case {
        name: "cron",
        input: r#"
#[leader_role(
    "nightly_report",
    cron = "0 2 * * *",
    tz = "Europe/Berlin",
    missed = "each",
    migrations = "tests/fixtures/migrations"
)]
async fn nightly_report(tick: TickContext) -> Result<(), ReportError> {
    reports::write_for(tick.tick_instant().expect("a calendar role's tick serves an instant")).await
}
"#,
    },
    Case {
        name: "sharded",
        input: r#"
#[leader_role("webhook_delivery", every = "200ms", shards = 8)]
async fn deliver_webhooks(tick: TickContext) -> Result<(), JobError> {
    let fence = tick.shard_fence().expect("a sharded role's tick holds a shard");
    deliver(claim_webhooks(tick.pool(), fence).await?).await
}
"#,
    },
    Case {
        name: "state",
        input: r#"
#[leader_role("reminders", every = "5m")]
async fn send_reminders(tick: TickContext, State(app): State<App>) -> Result<(), JobError> {
    app.mailer.send_due(tick.pool(), tick.fence()).await
}
"#,
    },
    Case {
        name: "fenced",
        input: r#"
#[fenced(migrations = "tests/fixtures/migrations")]
async fn claim_batch(pool: &PgPool, fence: Fence, limit: i64) -> sqlx::Result<Vec<i64>> {
    let mut tx = pool.begin().await?;
    let ids = sqlx::query_scalar(
        "UPDATE outbox SET status = 'sending'
          WHERE id IN (SELECT id FROM outbox
                        WHERE status = 'pending' AND leader_fence($2, $3)
                        ORDER BY id LIMIT $1
                        FOR UPDATE SKIP LOCKED)
      RETURNING id",
    )
    .persistent(false)
    .bind(limit)
    .bind(fence.role())
    .bind(fence.token())
    .fetch_all(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(ids)
}
"#,
    },
    Case {
        name: "fenced_shard",
        input: r#"
#[fenced(migrations = "tests/fixtures/migrations")]
async fn claim_webhooks(pool: &PgPool, fence: ShardFence) -> sqlx::Result<Vec<i64>> {
    let mut tx = pool.begin().await?;
    let ids = sqlx::query_scalar(
        "UPDATE webhooks SET claimed_token = $4 WHERE id IN (SELECT id FROM webhooks
          WHERE delivered_at IS NULL AND leader_fence($1, $2, $3, $4) AND leader_shard_of(id, $3) = $2
          ORDER BY id LIMIT 50 FOR UPDATE SKIP LOCKED) RETURNING id",
    )
    .persistent(false)
    .bind(fence.role())
    .bind(fence.shard_index())
    .bind(fence.shard_count())
    .bind(fence.token())
    .fetch_all(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(ids)
}
"#,
    },
];

/// Where the expansions print the crate's directory (they name the migrations they include by
/// absolute path).
const SHOWN_CRATE_DIR: &str = "/path/to/crate";

fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn snapshot_path(case: &Case) -> PathBuf {
    crate_dir()
        .join("tests/expansions")
        .join(format!("{}.rs", case.name))
}

fn update() -> bool {
    std::env::var_os("UPDATE_EXPECT").is_some_and(|v| v == "1")
}

/// The input with its attribute split off, run through the attribute's expansion code, as the
/// first expansion of a crate.
fn expand(case: &Case) -> TokenStream {
    crate::prepared::forget_includes();
    let mut func: syn::ItemFn = syn::parse_str(case.input).expect("the input is a fn");
    let attr = func.attrs.remove(0);
    let args = match &attr.meta {
        syn::Meta::Path(_) => TokenStream::new(),
        syn::Meta::List(list) => list.tokens.clone(),
        syn::Meta::NameValue(_) => panic!("{}: an attribute without `=`", case.name),
    };
    let item = func.into_token_stream();
    if attr.path().is_ident("leader_role") {
        crate::leader_role::leader_role(args, item)
    } else if attr.path().is_ident("fenced") {
        crate::fenced::fenced(args, item)
    } else {
        panic!(
            "{}: the input's first attribute is neither macro",
            case.name
        )
    }
}

/// The snapshot file's text: the input as comments, then the expansion, printed.
fn snapshot(case: &Case) -> String {
    // The crate's directory is shown as SHOWN_CRATE_DIR before printing, so that the lines wrap
    // alike wherever the checkout is.
    let expanded: proc_macro2::TokenStream = expand(case)
        .to_string()
        .replace(crate_dir().to_str().expect("a UTF-8 path"), SHOWN_CRATE_DIR)
        .parse()
        .expect("the expansion's text is tokens");
    let file: syn::File = syn::parse2(expanded.clone())
        .unwrap_or_else(|e| panic!("{}: the expansion is not items: {e}\n{expanded}", case.name));
    let printed = unparse(file);
    assert!(
        !printed.contains("compile_error"),
        "{}: the input is refused:\n{printed}",
        case.name
    );
    let mut text = String::from("// What you write:\n//\n");
    for line in case.input.trim().lines() {
        text.push_str(if line.is_empty() { "//" } else { "// " });
        text.push_str(line);
        text.push('\n');
    }
    text.push_str("//\n// What the macro emits in its place:\n\n");
    text.push_str(&printed);
    text
}

/// The items printed one by one, a blank line apart, with the registration inside
/// `inventory::submit! { .. }` printed as the expression it is (`prettyplease` keeps a macro's
/// body as the tokens were).
fn unparse(file: syn::File) -> String {
    let mut printed = Vec::new();
    for item in file.items {
        let submitted = match &item {
            syn::Item::Macro(item)
                if item.mac.path.is_ident("submit") || {
                    item.mac
                        .path
                        .segments
                        .last()
                        .is_some_and(|s| s.ident == "submit")
                } =>
            {
                Some(&item.mac)
            }
            _ => None,
        };
        if let Some(mac) = submitted {
            let expr: syn::Expr = syn::parse2(mac.tokens.clone()).expect("a registration");
            let wrapped = prettyplease::unparse(&syn::parse_quote!(fn wrapped() { #expr }));
            let body = wrapped
                .strip_prefix("fn wrapped() {\n")
                .and_then(|body| body.strip_suffix("}\n"))
                .expect("a fn around the expression");
            let path: Vec<String> = mac
                .path
                .segments
                .iter()
                .map(|s| s.ident.to_string())
                .collect();
            let colons = if mac.path.leading_colon.is_some() {
                "::"
            } else {
                ""
            };
            printed.push(format!("{colons}{}! {{\n{body}}}\n", path.join("::")));
        } else {
            printed.push(prettyplease::unparse(&syn::File {
                shebang: None,
                attrs: Vec::new(),
                items: vec![item],
            }));
        }
    }
    printed.join("\n")
}

#[test]
fn expansions_match_their_snapshots() {
    let mut drifted = Vec::new();
    for case in CASES {
        let path = snapshot_path(case);
        let expected = snapshot(case);
        let found = std::fs::read_to_string(&path).unwrap_or_default();
        if found != expected {
            if update() {
                std::fs::write(&path, &expected).expect("write the snapshot");
            } else {
                drifted.push(format!(
                    "{}:\n--- in the file\n{found}\n--- expanded now\n{expected}",
                    path.display()
                ));
            }
        }
    }
    assert!(
        drifted.is_empty(),
        "the expansion changed; if that is meant, rewrite the snapshots and the docs with \
         `UPDATE_EXPECT=1 cargo test -p leader-macros expansions`:\n{}",
        drifted.join("\n")
    );
}

/// The generated block of `docs/expansion.md` that shows `case`.
fn doc_markers(case: &Case) -> Markers {
    Markers::new(
        format!(
            "<!-- BEGIN GENERATED EXPANSION ({}): leader-macros/tests/expansions/{}.rs; \
             UPDATE_EXPECT=1 cargo test -p leader-macros expansions rewrites it -->",
            case.name, case.name
        ),
        "<!-- END GENERATED EXPANSION -->",
    )
}

#[test]
fn the_expansion_page_shows_every_snapshot() {
    let path = crate_dir().join("../docs/expansion.md");
    let page = std::fs::read_to_string(&path).expect("docs/expansion.md");
    let mut rewritten = page.clone();
    let mut drifted = Vec::new();
    for case in CASES {
        let markers = doc_markers(case);
        let block = format!("```rust\n{}```\n", snapshot(case));
        if generated_block::between(&page, &markers) != Some(block.as_str()) {
            drifted.push(case.name);
            rewritten = generated_block::replace(&rewritten, &markers, &block);
        }
    }
    if update() && !drifted.is_empty() {
        std::fs::write(&path, rewritten).expect("write docs/expansion.md");
        return;
    }
    assert!(
        drifted.is_empty(),
        "docs/expansion.md does not show what the macros emit for {drifted:?}: rewrite it with \
         `UPDATE_EXPECT=1 cargo test -p leader-macros expansions`"
    );
}

/// The doc comment of the attribute `name` in `lib.rs`: its prose (the `///` lines), and the
/// files its `#[doc = include_str!(..)]` lines include.
fn attribute_docs(name: &str) -> (String, Vec<String>) {
    let source = include_str!("lib.rs");
    let at = source
        .find(&format!("pub fn {name}("))
        .unwrap_or_else(|| panic!("lib.rs defines `{name}`"));
    let mut prose: Vec<&str> = Vec::new();
    let mut included = Vec::new();
    for line in source[..at].lines().rev() {
        let line = line.trim();
        if let Some(doc) = line.strip_prefix("///") {
            prose.push(doc);
        } else if let Some(file) = line
            .strip_prefix("#[doc = include_str!(\"")
            .and_then(|rest| rest.strip_suffix("\")]"))
        {
            included.push(file.to_owned());
        } else if !line.starts_with("#[") {
            break;
        }
    }
    prose.reverse();
    included.reverse();
    (prose.join("\n"), included)
}

#[test]
fn the_attribute_docs_include_the_snapshots() {
    for (attribute, cases) in [
        ("leader_role", &["interval", "cron", "sharded", "state"][..]),
        ("fenced", &["fenced", "fenced_shard"][..]),
    ] {
        let (_, included) = attribute_docs(attribute);
        let wanted: Vec<String> = cases
            .iter()
            .map(|name| format!("../tests/expansions/{name}.rs"))
            .collect();
        assert_eq!(
            included, wanted,
            "`#[{attribute}]`'s docs include other files than its snapshots"
        );
    }
}

#[test]
fn leader_roles_docs_cover_every_option_the_parser_accepts() {
    let (docs, _) = attribute_docs("leader_role");
    for option in crate::leader_role::OPTION_NAMES {
        let value = if option == "shards" { "8" } else { "\"1h\"" };
        let args: TokenStream = format!("\"billing\", {option} = {value}")
            .parse()
            .expect("tokens");
        assert!(
            crate::leader_role::parse_args(args).is_ok(),
            "the parser refuses `{option}`, which OPTION_NAMES lists"
        );
        assert!(
            docs.contains(&format!("`{option} = ")),
            "`#[leader_role]`'s docs never show `{option} = …`"
        );
    }
    let unknown: TokenStream = "\"billing\", every = \"1h\", colour = \"red\""
        .parse()
        .expect("tokens");
    assert!(crate::leader_role::parse_args(unknown).is_err());
    let bound = format!("(1 to {})", leader_role_name::MAX_SHARDS);
    assert!(
        docs.contains(&bound),
        "`#[leader_role]`'s docs do not give the shard bound as `{bound}`"
    );
    for other in ["State<", "with_state", "shard_fence"] {
        assert!(
            docs.contains(other),
            "`#[leader_role]`'s docs never mention `{other}`"
        );
    }
}

#[test]
fn fenceds_docs_cover_every_option_and_the_shard_fence() {
    let (docs, _) = attribute_docs("fenced");
    for option in crate::fenced::OPTION_NAMES {
        let args: TokenStream = format!("{option} = \"db\"").parse().expect("tokens");
        assert!(
            crate::fenced::parse_args(args).is_ok(),
            "the parser refuses `{option}`, which OPTION_NAMES lists"
        );
        assert!(
            docs.contains(&format!("`#[fenced({option} = ")),
            "`#[fenced]`'s docs never show `{option} = …`"
        );
    }
    assert!(crate::fenced::parse_args("colour = \"red\"".parse().expect("tokens")).is_err());
    for other in [
        "ShardFence",
        "shard_index()",
        "shard_count()",
        "leader_shard_of",
    ] {
        assert!(
            docs.contains(other),
            "`#[fenced]`'s docs never mention `{other}`"
        );
    }
}
