//! ARCHITECTURE.md, the code map, against the workspace it maps: every repository path it names
//! in backticks exists, and a `FILE.rs::name` names an item of that file; every crate it names is
//! a workspace member; its code-map table lists each member once, at its folder, published or not
//! as the member's manifest says; every package is named as its folder, `crates/` holds only
//! published crates and `tools/` and `examples/` only unpublished ones; and its dependency rules
//! hold in each crate's manifest.
//!
//! A span counts as a repository path when it has no whitespace and contains a `/` or ends in
//! `.rs`, `.md`, `.sql` or `.py`; as a crate name when it is `leader-` and lowercase words. Fenced
//! code blocks are not read.

use std::collections::{BTreeMap, BTreeSet};
mod common;

use std::path::Path;

use common::{read, root};

const MAP: &str = "ARCHITECTURE.md";
const CODE_MAP_HEADER: [&str; 4] = ["folder", "package", "kind", "its one job"];
const RULES_HEADER: [&str; 3] = ["crate", "must never depend on", "why"];

/// A workspace member, from its manifest.
#[derive(Debug)]
struct Member {
    folder: String,
    published: bool,
    /// The keys of `[dependencies]`, `[build-dependencies]` and target-specific dependencies
    /// (not dev-dependencies).
    dependencies: BTreeSet<String>,
}

/// The quoted strings of the root manifest's `members = [...]` (not `default-members`).
fn member_folders(root_manifest: &str) -> Vec<String> {
    let list = root_manifest
        .split_once("\nmembers = [")
        .and_then(|(_, rest)| rest.split_once(']'))
        .expect("the root Cargo.toml lists its members as `members = [...]`")
        .0;
    let folders: Vec<String> = list
        .lines()
        .map(|line| line.split('#').next().unwrap_or_default())
        .flat_map(|line| line.split(','))
        .map(|item| item.trim().trim_matches('"').to_string())
        .filter(|item| !item.is_empty())
        .collect();
    for folder in &folders {
        assert!(
            !folder.contains('*'),
            "member `{folder}` is a glob; this test reads each member's folder by name: list it"
        );
    }
    folders
}

/// The package name, `publish = false` and dependency keys of one member's manifest.
fn read_member(folder: &str, manifest: &str) -> (String, Member) {
    let mut section = String::new();
    let mut name = None;
    let mut published = true;
    let mut dependencies = BTreeSet::new();
    for line in manifest.lines() {
        let line = line.split('#').next().unwrap_or_default().trim();
        if line.is_empty() {
            continue;
        }
        if let Some(header) = line.strip_prefix('[') {
            section = header.trim_end_matches(']').to_string();
            // `[dependencies.NAME]` names its dependency in the header.
            for table in ["dependencies.", "build-dependencies."] {
                if let Some(dependency) = section.strip_prefix(table) {
                    dependencies.insert(dependency.to_string());
                }
            }
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        let (key, value) = (key.trim(), value.trim());
        let dependency_table = section == "dependencies"
            || section == "build-dependencies"
            || (section.starts_with("target.")
                && (section.ends_with(".dependencies")
                    || section.ends_with(".build-dependencies")));
        if section == "package" && key == "name" {
            name = Some(value.trim_matches('"').to_string());
        } else if section == "package" && key == "publish" && value == "false" {
            published = false;
        } else if dependency_table {
            // `leader-core.workspace = true` or `tokio = { ... }`.
            let key = key.split('.').next().unwrap_or(key).trim_matches('"');
            dependencies.insert(key.to_string());
        }
    }
    let name = name.unwrap_or_else(|| panic!("{folder}/Cargo.toml has no [package] name"));
    let member = Member {
        folder: folder.to_string(),
        published,
        dependencies,
    };
    (name, member)
}

/// Every workspace member by package name.
fn members(root: &Path) -> BTreeMap<String, Member> {
    member_folders(&read(&root.join("Cargo.toml")))
        .iter()
        .map(|folder| read_member(folder, &read(&root.join(folder).join("Cargo.toml"))))
        .collect()
}

/// The lines outside fenced code blocks, numbered from 1.
fn prose(text: &str) -> Vec<(usize, &str)> {
    let mut fenced = false;
    let mut lines = Vec::new();
    for (index, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        } else if !fenced {
            lines.push((index + 1, line));
        }
    }
    lines
}

/// The `code` spans of one line.
fn spans(line: &str) -> Vec<&str> {
    line.split('`').skip(1).step_by(2).collect()
}

/// A repository path, and the item after `::`, if `span` looks like one.
fn repo_path(span: &str) -> Option<(&str, Option<&str>)> {
    if span.is_empty() || span.chars().any(char::is_whitespace) {
        return None;
    }
    let (path, item) = match span.split_once("::") {
        Some((path, item)) => (path, Some(item)),
        None => (span, None),
    };
    let looks_like_path = path.contains('/')
        || [".rs", ".md", ".sql", ".py"]
            .iter()
            .any(|e| path.ends_with(e));
    looks_like_path.then_some((path, item))
}

/// Whether `source` defines `name` as a fn, const, static, type, struct, enum, trait or mod.
fn defines(source: &str, name: &str) -> bool {
    let is_ident = |c: char| c.is_alphanumeric() || c == '_';
    [
        "fn", "const", "static", "type", "struct", "enum", "trait", "mod",
    ]
    .iter()
    .any(|keyword| {
        let needle = format!("{keyword} {name}");
        source.match_indices(&needle).any(|(at, _)| {
            let before = source[..at].chars().next_back();
            let after = source[at + needle.len()..].chars().next();
            !before.is_some_and(is_ident) && !after.is_some_and(is_ident)
        })
    })
}

fn is_crate_name(span: &str) -> bool {
    span.strip_prefix("leader-").is_some_and(|rest| {
        !rest.is_empty()
            && rest
                .split('-')
                .all(|word| !word.is_empty() && word.chars().all(|c| c.is_ascii_lowercase()))
    })
}

/// The rows of the table whose header is `header`, each as its trimmed cells, with line numbers.
fn table<'a>(lines: &[(usize, &'a str)], header: &[&str]) -> Option<Vec<(usize, Vec<&'a str>)>> {
    let cells = |line: &'a str| -> Vec<&'a str> {
        let inner = line.trim().trim_start_matches('|').trim_end_matches('|');
        inner.split('|').map(str::trim).collect()
    };
    let start = lines
        .iter()
        .position(|(_, line)| line.trim_start().starts_with('|') && cells(line) == header)?;
    Some(
        lines[start + 2..]
            .iter()
            .take_while(|(_, line)| line.trim_start().starts_with('|'))
            .map(|&(number, line)| (number, cells(line)))
            .collect(),
    )
}

fn unticked(cell: &str) -> &str {
    cell.trim().trim_matches('`')
}

/// Everything wrong with `map` (the text of ARCHITECTURE.md) against the workspace at `root`.
fn problems(map: &str, root: &Path, members: &BTreeMap<String, Member>) -> Vec<String> {
    let lines = prose(map);
    let mut problems = Vec::new();

    for &(number, line) in &lines {
        for span in spans(line) {
            if let Some((path, item)) = repo_path(span) {
                let full = root.join(path.split('#').next().unwrap_or(path));
                if path.starts_with('/') || !full.exists() {
                    problems.push(format!(
                        "line {number}: `{span}`: no such path in the repository \
                         (write it relative to the root, as `git ls-files` shows it)"
                    ));
                } else if let Some(item) = item {
                    if !path.ends_with(".rs") {
                        problems.push(format!(
                            "line {number}: `{span}`: only a .rs file's items can be named after `::`"
                        ));
                    } else if !defines(&read(&full), item) {
                        problems.push(format!(
                            "line {number}: `{span}`: {path} defines no fn, const, type or module `{item}`"
                        ));
                    }
                }
            } else if is_crate_name(span) && !members.contains_key(span) {
                problems.push(format!(
                    "line {number}: `{span}` is not a workspace member's package name"
                ));
            }
        }
    }

    match table(&lines, &CODE_MAP_HEADER) {
        None => problems.push(format!(
            "no code-map table with the header | {} |",
            CODE_MAP_HEADER.join(" | ")
        )),
        Some(rows) => {
            let mut listed = BTreeSet::new();
            for (number, cells) in rows {
                let [folder, package, kind, ..] = cells[..] else {
                    problems.push(format!(
                        "line {number}: a code-map row needs folder, package and kind"
                    ));
                    continue;
                };
                let (folder, package) = (unticked(folder).trim_end_matches('/'), unticked(package));
                let Some(member) = members.get(package) else {
                    problems.push(format!(
                        "line {number}: `{package}` is not a workspace member's package name"
                    ));
                    continue;
                };
                if !listed.insert(package) {
                    problems.push(format!("line {number}: `{package}` is listed twice"));
                }
                if member.folder != folder {
                    problems.push(format!(
                        "line {number}: `{package}` is in `{}/`, not `{folder}/`",
                        member.folder
                    ));
                }
                let expected = if member.published {
                    "published"
                } else {
                    "tool"
                };
                if kind != expected {
                    problems.push(format!(
                        "line {number}: `{package}`'s kind is `{expected}`, not `{kind}` \
                         ({}/Cargo.toml {} `publish = false`)",
                        member.folder,
                        if member.published { "lacks" } else { "has" }
                    ));
                }
            }
            for (package, member) in members {
                if !listed.contains(package.as_str()) {
                    problems.push(format!(
                        "the code map lacks the member `{package}` (`{}/`): add its row",
                        member.folder
                    ));
                }
            }
        }
    }

    for (package, member) in members {
        let folder_name = Path::new(&member.folder).file_name();
        if folder_name.and_then(|name| name.to_str()) != Some(package.as_str()) {
            problems.push(format!(
                "`{package}` is in `{}/`: name the folder as its package (or the package as its \
                 folder)",
                member.folder
            ));
        }
        let room = member.folder.split('/').next().unwrap_or_default();
        let (belongs, holds) = match room {
            "crates" => (member.published, "published"),
            "tools" | "examples" => (!member.published, "unpublished (`publish = false`)"),
            _ => (true, ""),
        };
        if !belongs {
            problems.push(format!(
                "`{package}` sits in `{room}/`, which holds only {holds} crates: move it or \
                 change its `publish`"
            ));
        }
    }

    match table(&lines, &RULES_HEADER) {
        None => problems.push(format!(
            "no dependency-rules table with the header | {} |",
            RULES_HEADER.join(" | ")
        )),
        Some(rows) => {
            for (number, cells) in rows {
                let crate_name = unticked(cells[0]);
                let Some(member) = members.get(crate_name) else {
                    problems.push(format!(
                        "line {number}: `{crate_name}` is not a workspace member's package name"
                    ));
                    continue;
                };
                let forbidden = cells.get(1).map(|cell| spans(cell)).unwrap_or_default();
                if forbidden.is_empty() {
                    problems.push(format!(
                        "line {number}: `{crate_name}`'s rule names no crate"
                    ));
                }
                for dependency in forbidden {
                    if member.dependencies.contains(dependency) {
                        problems.push(format!(
                            "line {number}: `{crate_name}` must never depend on `{dependency}`, \
                             but {}/Cargo.toml does",
                            member.folder
                        ));
                    }
                }
            }
        }
    }
    let mut seen = BTreeSet::new();
    problems.retain(|problem| seen.insert(problem.clone()));
    problems
}

#[test]
fn the_code_map_names_only_what_exists_and_its_rules_hold() {
    let root = root();
    let members = members(&root);
    assert!(
        members.len() > 1 && members.contains_key("leader-runtime"),
        "read no workspace members from the root Cargo.toml: {members:?}"
    );
    let problems = problems(&read(&root.join(MAP)), &root, &members);
    assert!(
        problems.is_empty(),
        "{MAP} does not match the repository:\n{}",
        problems.join("\n")
    );
}

#[test]
fn each_check_reports_what_it_is_for() {
    let root = root();
    let mut members = members(&root);
    members.insert(
        "leader-odd".into(),
        Member {
            folder: "tools/odd".into(),
            published: true,
            dependencies: BTreeSet::new(),
        },
    );
    let map = "\
| folder | package | kind | its one job |
|---|---|---|---|
| `leader-core/` | `leader-core` | tool | a published crate called a tool |
| `tools/leader-drills/` | `leader-drill` | tool | a package name that is not a member's |
| `tools/leader-model/` | `leader-runtime` | published | a package at another folder |

| crate | must never depend on | why |
|---|---|---|
| `leaderctl` | `leader-core` | a rule its manifest breaks |

`leader-core/src/no_such_file.rs` `leader-core/src/fence.rs::no_such_item`
`leader-core/src/fence.rs::Fence` `leader-nothing` `leader_runtime::__private` `tick.spawn`

```text
`not/a/path/checked.rs`
```
";
    let problems = problems(map, &root, &members);
    let found = |text: &str| problems.iter().any(|problem| problem.contains(text));
    for expected in [
        "`leader-core/src/no_such_file.rs`: no such path",
        "defines no fn, const, type or module `no_such_item`",
        "`leader-nothing` is not a workspace member",
        "`leader-drill` is not a workspace member",
        "`leader-core`'s kind is `published`, not `tool`",
        "`leader-runtime` is in `leader-runtime/`, not `tools/leader-model/`",
        "`leaderctl` must never depend on `leader-core`",
        "the code map lacks the member `leaderctl`",
        "`leader-odd` is in `tools/odd/`: name the folder as its package",
        "`leader-odd` sits in `tools/`, which holds only unpublished",
    ] {
        assert!(
            found(expected),
            "expected {expected:?} among:\n{}",
            problems.join("\n")
        );
    }
    for fine in ["fence.rs::Fence`", "__private", "tick.spawn", "not/a/path"] {
        assert!(
            !found(fine),
            "{fine:?} was reported:\n{}",
            problems.join("\n")
        );
    }
}
