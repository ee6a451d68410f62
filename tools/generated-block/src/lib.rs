//! The generated block of a text file: the text between a begin marker and an end marker, which a
//! tool rewrites while what lies outside the markers (hand-written notes) survives.
//!
//! Written once for the benchmarks' reports (`leader-benches`), the differential page
//! (`fence-differential`) and the expansion docs `leader-macros`' snapshot test checks.
//!
//! ```
//! use generated_block::{Markers, replace};
//!
//! let markers = Markers::new("<!-- BEGIN x -->", "<!-- END -->");
//! let page = "intro\n<!-- BEGIN x -->\nold\n<!-- END -->\nnotes\n";
//! assert_eq!(
//!     replace(page, &markers, "new\n"),
//!     "intro\n<!-- BEGIN x -->\nnew\n<!-- END -->\nnotes\n",
//! );
//! ```

use std::io;
use std::path::Path;

/// The two lines that open and close one generated block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Markers {
    begin: String,
    end: String,
}

impl Markers {
    /// The block that starts at the line `begin` and ends at the first `end` after it. `begin`
    /// should name its block, so that one file can hold several blocks closed by the same `end`.
    pub fn new(begin: impl Into<String>, end: impl Into<String>) -> Markers {
        Markers {
            begin: begin.into(),
            end: end.into(),
        }
    }

    /// The markers of the report the binary `binary` generates (a benchmark or the differential
    /// test): `<!-- BEGIN GENERATED REPORT (binary); … -->` to `<!-- END GENERATED REPORT -->`.
    pub fn report(binary: &str) -> Markers {
        Markers::new(
            format!("<!-- BEGIN GENERATED REPORT ({binary}); edit only outside these markers -->"),
            REPORT_END,
        )
    }

    /// The line that opens the block.
    pub fn begin(&self) -> &str {
        &self.begin
    }

    /// The line that closes the block.
    pub fn end(&self) -> &str {
        &self.end
    }

    /// The block holding `generated`, markers included, ending with a newline.
    pub fn block(&self, generated: &str) -> String {
        format!("{}\n{generated}{}\n", self.begin, self.end)
    }
}

/// Ends every generated report.
pub const REPORT_END: &str = "<!-- END GENERATED REPORT -->";

/// What lies between the markers in `text` (the newline after the begin marker excluded), or
/// `None` when `text` has no such block.
pub fn between<'t>(text: &'t str, markers: &Markers) -> Option<&'t str> {
    let (start, end) = span(text, markers)?;
    let inner = &text[start + markers.begin.len()..end];
    Some(inner.strip_prefix('\n').unwrap_or(inner))
}

/// The byte offsets of the begin marker and of the end marker that closes it (not another
/// block's earlier in the text).
fn span(text: &str, markers: &Markers) -> Option<(usize, usize)> {
    let start = text.find(markers.begin.as_str())?;
    let after_begin = start + markers.begin.len();
    let end = text[after_begin..].find(markers.end.as_str())?;
    Some((start, after_begin + end))
}

/// `text` with its block replaced by one holding `generated`; a text without the block gets it
/// appended after a blank line (an empty one becomes the block alone).
pub fn replace(text: &str, markers: &Markers, generated: &str) -> String {
    let block = markers.block(generated);
    match span(text, markers) {
        Some((start, end)) => {
            let after = &text[end + markers.end.len()..];
            let after = after.strip_prefix('\n').unwrap_or(after);
            format!("{}{block}{after}", &text[..start])
        }
        None if text.trim().is_empty() => block,
        None => format!("{}\n\n{block}", text.trim_end()),
    }
}

/// Puts `generated` between the markers in the file at `path`, as [`replace`] does, creating
/// the file (and its folder) when it does not exist.
///
/// # Errors
///
/// When the file exists but cannot be read (a permission, a file that is not UTF-8: rewriting
/// it would lose what it holds), or cannot be written.
pub fn write(path: impl AsRef<Path>, markers: &Markers, generated: &str) -> io::Result<()> {
    let path = path.as_ref();
    let content = match std::fs::read_to_string(path) {
        Ok(old) => replace(&old, markers, generated),
        Err(e) if e.kind() == io::ErrorKind::NotFound => markers.block(generated),
        Err(e) => return Err(e),
    };
    if let Some(dir) = path.parent()
        && !dir.as_os_str().is_empty()
    {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::write(path, content)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> std::path::PathBuf {
        std::env::temp_dir().join(format!("generated-block-{name}-{}", std::process::id()))
    }

    #[test]
    fn a_rewrite_keeps_what_lies_outside_the_markers() {
        let dir = scratch("outside");
        let path = dir.join("r.md");
        let x = Markers::report("x-bench");
        write(&path, &x, "one\n").unwrap();
        let first = std::fs::read_to_string(&path).unwrap();
        assert_eq!(first, format!("{}\none\n{REPORT_END}\n", x.begin()));
        std::fs::write(&path, format!("intro\n{first}\n## notes\n")).unwrap();
        write(&path, &x, "two\n").unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            format!("intro\n{}\ntwo\n{REPORT_END}\n\n## notes\n", x.begin())
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn only_its_own_block_among_several_is_replaced() {
        let a = Markers::report("a-bench").block("a1\n");
        let b = |body: &str| Markers::report("b-bench").block(body);
        let text = format!("{a}\nnotes\n{}tail\n", b("b1\n"));
        assert_eq!(
            replace(&text, &Markers::report("b-bench"), "b2\n"),
            format!("{a}\nnotes\n{}tail\n", b("b2\n"))
        );
        assert_eq!(
            between(&text, &Markers::report("b-bench")),
            Some("b1\n"),
            "the end marker that closes b's block, not a's earlier one"
        );
    }

    #[test]
    fn a_new_block_is_appended_after_what_is_there() {
        let a = format!("{}\nnotes on a\n", Markers::report("a-bench").block("a1\n"));
        let b = Markers::report("b-bench");
        assert_eq!(
            replace(&a, &b, "b1\n"),
            format!("{}\n\n{}", a.trim_end(), b.block("b1\n"))
        );
        assert_eq!(replace(" \n", &b, "b1\n"), b.block("b1\n"));
        assert_eq!(between(&a, &b), None);
    }

    #[test]
    fn a_file_that_exists_but_cannot_be_read_is_an_error_and_left_alone() {
        let dir = scratch("unreadable");
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("latin1.md");
        // Not UTF-8: rewriting it from nothing would lose what it holds.
        std::fs::write(&path, b"caf\xe9\n").unwrap();
        let error = write(&path, &Markers::report("x"), "one\n").unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::InvalidData);
        assert_eq!(std::fs::read(&path).unwrap(), b"caf\xe9\n");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_missing_file_is_created_with_its_folder() {
        let dir = scratch("missing");
        let path = dir.join("deeper").join("r.md");
        write(&path, &Markers::report("x"), "one\n").unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            Markers::report("x").block("one\n")
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
