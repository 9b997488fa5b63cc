//! A small element tree read with quick-xml's streaming reader, each element with its line:
//! the one tree behind `modelDescription.xml`, `cosimo validate` and SSP files.
//!
//! Hostile files cannot exhaust the stack: the tree is built with an explicit stack, dropped
//! with one (see `Drop for Element`), and nesting deeper than [`MAX_DEPTH`] is an error, so
//! the readers' own walks over it stay shallow.

use std::collections::HashSet;

use quick_xml::events::{BytesStart, Event};
use quick_xml::name::ResolveResult;
use quick_xml::{NsReader, Reader};

/// The deepest nesting of elements read. cosimo interprets elements a few levels deep (SSP's
/// nested systems a few per level); deeper content is refused rather than read, as a file that
/// needs it is far more likely hostile than real.
pub(crate) const MAX_DEPTH: usize = 1000;

/// The most namespace declarations in scope at once when reading with namespaces: quick-xml
/// looks each element's namespace up among all of them, so many thousands of them make a
/// small file take minutes. Real files declare a handful.
pub(crate) const MAX_NAMESPACES: usize = 100;

/// A parse failure at a 1-based line.
#[derive(Debug)]
pub(crate) struct Fail {
    pub line: usize,
    pub message: String,
}

impl Fail {
    /// A failure at `line` with `message`.
    pub fn new(line: usize, message: impl Into<String>) -> Fail {
        Fail {
            line,
            message: message.into(),
        }
    }
}

/// Result of the internal parsing steps.
pub(crate) type R<T> = std::result::Result<T, Fail>;

/// One XML element: its namespace (`()` when read without namespaces), local name, attributes
/// (unescaped), line and child elements.
pub(crate) struct Element<N = ()> {
    pub ns: N,
    pub name: String,
    pub attrs: Vec<(String, String)>,
    pub line: usize,
    pub children: Vec<Element<N>>,
}

impl<N> Element<N> {
    /// The value of attribute `name`, if present.
    pub fn attr(&self, name: &str) -> Option<&str> {
        self.attrs
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

impl Element {
    /// The first child element called `name`.
    pub fn child(&self, name: &str) -> Option<&Element> {
        self.children.iter().find(|c| c.name == name)
    }

    /// All child elements called `name`.
    pub fn children_named<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a Element> {
        self.children.iter().filter(move |c| c.name == name)
    }
}

impl<N: std::fmt::Debug> std::fmt::Debug for Element<N> {
    /// Shallow (the children are counted): the derived one recurses once per level.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Element")
            .field("ns", &self.ns)
            .field("name", &self.name)
            .field("attrs", &self.attrs)
            .field("line", &self.line)
            .field("children", &self.children.len())
            .finish()
    }
}

impl<N> Drop for Element<N> {
    /// Iterative: the derived drop recurses once per level of nesting.
    fn drop(&mut self) {
        let mut pending = std::mem::take(&mut self.children);
        while let Some(mut element) = pending.pop() {
            pending.append(&mut element.children);
        }
    }
}

/// Maps byte offsets to 1-based line numbers (a binary search over the newlines).
struct Lines {
    newlines: Vec<usize>,
}

impl Lines {
    fn new(text: &str) -> Lines {
        Lines {
            newlines: text
                .bytes()
                .enumerate()
                .filter(|(_, b)| *b == b'\n')
                .map(|(i, _)| i)
                .collect(),
        }
    }

    fn line(&self, offset: u64) -> usize {
        let offset = usize::try_from(offset).unwrap_or(usize::MAX);
        self.newlines.partition_point(|&n| n < offset) + 1
    }
}

/// Read `xml` (without namespaces) and return its first root element; later top-level elements
/// are ignored.
pub(crate) fn parse_tree(xml: &str) -> R<Element> {
    first_root(parse_roots(xml)?)
}

/// Read `xml` without namespaces and return every top-level element (a well-formed document
/// has exactly one).
pub(crate) fn parse_roots(xml: &str) -> R<Vec<Element>> {
    let xml = without_bom(xml);
    let mut reader = Reader::from_str(xml);
    let mut tree = Builder::new(xml);
    loop {
        let line = tree.line_at(reader.buffer_position());
        let event = reader
            .read_event()
            .map_err(|e| tree.malformed(reader.error_position(), e))?;
        if tree.event((), event, line)? {
            return tree.finish();
        }
    }
}

/// Read `xml` with namespaces and return its first root element, each element's namespace
/// being `classify(Some(uri))` (or `classify(None)` outside any namespace). A prefix that is
/// not declared is an error.
pub(crate) fn parse_tree_ns<N>(xml: &str, classify: impl Fn(Option<&str>) -> N) -> R<Element<N>> {
    let xml = without_bom(xml);
    let mut reader = NsReader::from_str(xml);
    let mut tree = Builder::new(xml);
    tree.max_namespaces = Some(MAX_NAMESPACES);
    loop {
        let line = tree.line_at(reader.buffer_position());
        let (ns, event) = match reader.read_resolved_event() {
            Ok((ResolveResult::Bound(uri), event)) => (
                classify(Some(&String::from_utf8_lossy(uri.as_ref()))),
                event,
            ),
            Ok((ResolveResult::Unbound, event)) => (classify(None), event),
            Ok((ResolveResult::Unknown(prefix), _)) => {
                return Err(Fail::new(
                    line,
                    format!(
                        "malformed XML: the namespace prefix \"{0}\" is not declared; add \
                         xmlns:{0}=\"...\" to the root element",
                        String::from_utf8_lossy(&prefix)
                    ),
                ))
            }
            Err(e) => return Err(tree.malformed(reader.error_position(), e)),
        };
        if tree.event(ns, event, line)? {
            return first_root(tree.finish()?);
        }
    }
}

fn without_bom(xml: &str) -> &str {
    xml.strip_prefix('\u{feff}').unwrap_or(xml)
}

fn first_root<N>(roots: Vec<Element<N>>) -> R<Element<N>> {
    roots
        .into_iter()
        .next()
        .ok_or_else(|| Fail::new(1, "malformed XML: the file has no root element"))
}

/// The tree under construction: the open elements and the finished top-level ones.
struct Builder<'x, N> {
    xml: &'x str,
    lines: Lines,
    open: Vec<Element<N>>,
    roots: Vec<Element<N>>,
    /// The namespace declarations of each open element, their sum, and its bound.
    declared: Vec<usize>,
    in_scope: usize,
    max_namespaces: Option<usize>,
}

impl<'x, N> Builder<'x, N> {
    fn new(xml: &'x str) -> Builder<'x, N> {
        Builder {
            xml,
            lines: Lines::new(xml),
            open: Vec::new(),
            roots: Vec::new(),
            declared: Vec::new(),
            in_scope: 0,
            max_namespaces: None,
        }
    }

    /// The line of the event starting at `position`: whitespace before it is skipped, so that
    /// the line is the tag's.
    fn line_at(&self, position: u64) -> usize {
        let rest = usize::try_from(position)
            .ok()
            .and_then(|p| self.xml.get(p..))
            .unwrap_or("");
        let skipped = rest.len() - rest.trim_start().len();
        self.lines.line(position.saturating_add(skipped as u64))
    }

    fn malformed(&self, position: u64, e: quick_xml::Error) -> Fail {
        Fail::new(self.lines.line(position), format!("malformed XML: {e}"))
    }

    /// Take one event; true at the end of the document.
    fn event(&mut self, ns: N, event: Event<'_>, line: usize) -> R<bool> {
        match event {
            Event::Start(start) => {
                let (element, declared) = element(ns, &start, line)?;
                self.check(&element, declared)?;
                self.open.push(element);
                self.declared.push(declared);
                self.in_scope += declared;
            }
            Event::Empty(start) => {
                let (element, declared) = element(ns, &start, line)?;
                self.check(&element, declared)?;
                self.attach(element);
            }
            Event::End(_) => {
                if let Some(element) = self.open.pop() {
                    self.in_scope -= self.declared.pop().unwrap_or(0);
                    self.attach(element);
                }
            }
            Event::Eof => return Ok(true),
            _ => {}
        }
        Ok(false)
    }

    /// Whether `element`, with its `declared` namespaces, may join the open ones.
    fn check(&self, element: &Element<N>, declared: usize) -> R<()> {
        if self.open.len() >= MAX_DEPTH {
            return Err(self.too_deep(element.line));
        }
        if let Some(max) = self.max_namespaces {
            if self.in_scope + declared > max {
                return Err(Fail::new(
                    element.line,
                    format!(
                        "<{}>: more than {max} namespace declarations (xmlns) are in scope; \
                         cosimo reads at most {max}: declare each namespace once",
                        element.name
                    ),
                ));
            }
        }
        Ok(())
    }

    fn attach(&mut self, element: Element<N>) {
        match self.open.last_mut() {
            Some(parent) => parent.children.push(element),
            None => self.roots.push(element),
        }
    }

    fn too_deep(&self, line: usize) -> Fail {
        // Name the outermost elements below the root: that is where a user looks for it.
        let within: Vec<String> = self
            .open
            .iter()
            .skip(1)
            .take(2)
            .map(|e| match e.attr("name") {
                Some(name) => format!("<{} name=\"{name}\"> (line {})", e.name, e.line),
                None => format!("<{}> (line {})", e.name, e.line),
            })
            .collect();
        let within = match within.is_empty() {
            true => String::new(),
            false => format!(", inside {}", within.join(" and ")),
        };
        Fail::new(
            line,
            format!(
                "the elements are nested deeper than {MAX_DEPTH} levels{within}; cosimo reads \
                 at most {MAX_DEPTH} levels: remove or flatten the deeply nested content"
            ),
        )
    }

    fn finish(mut self) -> R<Vec<Element<N>>> {
        if let Some(open) = self.open.last() {
            return Err(Fail::new(
                self.lines.line(self.xml.len() as u64),
                format!(
                    "malformed XML: element <{}> opened on line {} is never closed",
                    open.name, open.line
                ),
            ));
        }
        Ok(std::mem::take(&mut self.roots))
    }
}

/// The element of a start tag, and how many namespaces it declares.
fn element<N>(ns: N, start: &BytesStart<'_>, line: usize) -> R<(Element<N>, usize)> {
    let name = String::from_utf8_lossy(start.local_name().as_ref()).into_owned();
    let mut attrs = Vec::new();
    // quick-xml's own check for repeated attributes compares each with every earlier one:
    // minutes for an element with 100,000 attributes. A set does it in linear time.
    let mut keys = HashSet::new();
    let mut declared = 0;
    for attr in start.attributes().with_checks(false) {
        let attr = attr.map_err(|e| Fail::new(line, format!("malformed XML in <{name}>: {e}")))?;
        let key = String::from_utf8_lossy(attr.key.as_ref()).into_owned();
        if !keys.insert(key.clone()) {
            return Err(Fail::new(
                line,
                format!("malformed XML in <{name}>: attribute \"{key}\" is given twice"),
            ));
        }
        if key == "xmlns" || key.starts_with("xmlns:") {
            declared += 1;
            continue;
        }
        let value = attr.unescape_value().map_err(|e| {
            Fail::new(
                line,
                format!("malformed XML in <{name}>, attribute \"{key}\": {e}"),
            )
        })?;
        attrs.push((key, value.into_owned()));
    }
    let element = Element {
        ns,
        name,
        attrs,
        line,
        children: Vec::new(),
    };
    Ok((element, declared))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn leaf(name: &str) -> Element {
        Element {
            ns: (),
            name: name.to_string(),
            attrs: Vec::new(),
            line: 1,
            children: Vec::new(),
        }
    }

    #[test]
    fn a_tree_far_deeper_than_the_stack_drops() {
        // Built by hand (the parser stops at MAX_DEPTH), dropped on a thread with a small stack.
        let dropped = std::thread::Builder::new()
            .stack_size(64 * 1024)
            .spawn(|| {
                let mut root = leaf("a");
                for _ in 0..1_000_000 {
                    let mut parent = leaf("a");
                    parent.children.push(root);
                    root = parent;
                }
                drop(root);
            })
            .expect("a thread")
            .join();
        assert!(dropped.is_ok());
    }

    #[test]
    fn lines_roots_and_the_depth_bound() {
        let tree =
            parse_tree("\u{feff}<?xml version=\"1.0\"?>\n<r>\n  <a x=\"&lt;\"/>\n</r>\n<s/>")
                .expect("parses");
        assert_eq!((tree.name.as_str(), tree.line), ("r", 2));
        assert_eq!(
            tree.child("a").map(|a| (a.line, a.attr("x"))),
            Some((3, Some("<")))
        );
        assert_eq!(parse_roots("<r/>\n<s/>").map(|r| r.len()).ok(), Some(2));
        let deep = |n: usize| format!("{}{}", "<a>".repeat(n), "</a>".repeat(n));
        assert!(parse_tree(&deep(MAX_DEPTH)).is_ok());
        let fail = parse_tree(&deep(MAX_DEPTH + 1)).expect_err("too deep");
        assert_eq!(fail.line, 1);
        assert!(fail
            .message
            .contains("inside <a> (line 1) and <a> (line 1)"));
        let ns = parse_tree_ns("<p:r xmlns:p=\"urn:x\"><q/></p:r>", |uri| {
            uri.map(String::from)
        })
        .expect("parses");
        assert_eq!(ns.ns.as_deref(), Some("urn:x"));
        assert_eq!(ns.children[0].ns, None);
        let fail = parse_tree_ns("<p:r/>", |_| ()).expect_err("undeclared prefix");
        assert!(fail.message.contains("prefix \"p\" is not declared"));
        // Namespaces in scope are bounded; declared again on each sibling is fine.
        let declare =
            |n: usize| -> String { (0..n).map(|i| format!(" xmlns:p{i}=\"urn:{i}\"")).collect() };
        let siblings = format!(
            "<r{}>{}</r>",
            declare(50),
            format!("<a{}/>", declare(50)).repeat(9)
        );
        assert!(parse_tree_ns(&siblings, |_| ()).is_ok());
        let fail = parse_tree_ns(
            &format!("<r{}>\n<a xmlns:q=\"urn:q\"/></r>", declare(100)),
            |_| (),
        )
        .expect_err("too many");
        assert_eq!(fail.line, 2);
        assert!(fail
            .message
            .starts_with("<a>: more than 100 namespace declarations"));
        assert!(parse_tree(&format!("<r{}/>", declare(1000))).is_ok());
    }
}
