//! Every relative link of the README, ARCHITECTURE.md and the pages under `docs/` points to a file
//! of the repository, and a `#fragment` into a Markdown file to one of its headings: the README
//! is a guide that links to where each reference lives, so a page moved or renamed must take its
//! links along.
//!
//! A link is `[text](target)` outside fenced code blocks and inline code; a target with a scheme
//! (`https:`, `mailto:`) is not the repository's and is not checked. A heading's fragment is
//! GitHub's: lowercase, spaces to `-`, punctuation other than `-` and `_` dropped.

mod common;

use std::path::{Path, PathBuf};

use common::{read, root};

/// The Markdown files whose links are checked: the README, the code map, and every page under
/// `docs/`.
fn pages(root: &Path) -> Vec<PathBuf> {
    fn walk(dir: &Path, found: &mut Vec<PathBuf>) {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .map(|entry| entry.expect("a readable directory entry").path())
            .collect();
        entries.sort();
        for path in entries {
            if path.is_dir() {
                walk(&path, found);
            } else if path.extension().is_some_and(|ext| ext == "md") {
                found.push(path);
            }
        }
    }
    let mut found = vec![root.join("README.md"), root.join("ARCHITECTURE.md")];
    walk(&root.join("docs"), &mut found);
    found
}

/// The text of `markdown` outside fenced code blocks, line by line with its 1-based number, with
/// inline code spans blanked.
fn prose(markdown: &str) -> Vec<(usize, String)> {
    let mut in_fence = false;
    let mut lines = Vec::new();
    for (index, line) in markdown.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            in_fence = !in_fence;
            continue;
        }
        if in_fence {
            continue;
        }
        let mut text = String::with_capacity(line.len());
        for (i, part) in line.split('`').enumerate() {
            if i % 2 == 0 {
                text.push_str(part);
            } else {
                text.push_str(&" ".repeat(part.len()));
            }
        }
        lines.push((index + 1, text));
    }
    lines
}

/// The targets of the `[text](target)` links on `line`.
fn link_targets(line: &str) -> Vec<String> {
    let mut targets = Vec::new();
    let mut rest = line;
    while let Some(at) = rest.find("](") {
        let after = &rest[at + 2..];
        let Some(end) = after.find(')') else { break };
        targets.push(after[..end].trim().to_string());
        rest = &after[end..];
    }
    targets
}

/// GitHub's fragment for a heading's text.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The fragments of `markdown`'s headings (code spans keep their text).
fn fragments(markdown: &str) -> Vec<String> {
    let mut in_fence = false;
    let mut found = Vec::new();
    for line in markdown.lines() {
        if line.trim_start().starts_with("```") {
            in_fence = !in_fence;
            continue;
        }
        if !in_fence && line.starts_with('#') {
            found.push(slug(line.trim_start_matches('#')));
        }
    }
    found
}

/// What is wrong with the relative link `target` of `page`, if anything.
fn broken(root: &Path, page: &Path, target: &str) -> Option<String> {
    if target.contains("://") || target.starts_with("mailto:") {
        return None;
    }
    let (path, fragment) = match target.split_once('#') {
        Some((path, fragment)) => (path, Some(fragment)),
        None => (target, None),
    };
    let file = if path.is_empty() {
        page.to_path_buf()
    } else {
        page.parent().expect("a page has a folder").join(path)
    };
    if !file.exists() {
        return Some(format!("{path} does not exist"));
    }
    let canonical = file.canonicalize().expect("an existing path resolves");
    if !canonical.starts_with(root.canonicalize().expect("the root resolves")) {
        return Some(format!("{path} is outside the repository"));
    }
    match fragment {
        Some(fragment) if file.extension().is_some_and(|ext| ext == "md") => {
            let headings = fragments(&read(&file));
            (!headings.iter().any(|heading| heading == fragment))
                .then(|| format!("{path} has no heading #{fragment} (it has {headings:?})"))
        }
        _ => None,
    }
}

/// Every broken relative link of the checked pages, as `page:line: target: why`.
fn broken_links(root: &Path) -> Vec<String> {
    let mut found = Vec::new();
    for page in pages(root) {
        let name = page
            .strip_prefix(root)
            .unwrap_or(&page)
            .display()
            .to_string();
        for (line, text) in prose(&read(&page)) {
            for target in link_targets(&text) {
                if let Some(why) = broken(root, &page, &target) {
                    found.push(format!("{name}:{line}: ({target}): {why}"));
                }
            }
        }
    }
    found
}

#[test]
fn every_relative_link_of_the_readme_and_the_docs_resolves() {
    let root = root();
    let checked: usize = pages(&root)
        .iter()
        .map(|page| {
            prose(&read(page))
                .iter()
                .map(|(_, text)| link_targets(text).len())
                .sum::<usize>()
        })
        .sum();
    assert!(
        checked >= 20,
        "only {checked} links found: is the parser reading the pages?"
    );
    let broken = broken_links(&root);
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn a_missing_file_and_a_missing_heading_are_reported() {
    let root = root();
    let readme = root.join("README.md");
    assert!(broken(&root, &readme, "docs/no-such-page.md").is_some());
    assert!(broken(&root, &readme, "docs/metrics.md#no-such-heading").is_some());
    assert!(broken(&root, &readme, "docs/metrics.md#metrics").is_none());
    assert!(broken(&root, &readme, "https://example.com/x.md").is_none());
    assert_eq!(slug(" Why PostgreSQL's parser"), "why-postgresqls-parser");
    assert_eq!(
        link_targets("see [a](x.md) and [b](y/z.md#h) (not a link)"),
        ["x.md", "y/z.md#h"]
    );
}
