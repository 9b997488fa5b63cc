//! A small element tree read with quick-xml's streaming reader, each element with its line.

use quick_xml::events::{BytesStart, Event};
use quick_xml::Reader;

/// A parse failure at a 1-based line.
#[derive(Debug)]
pub(super) struct Fail {
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
pub(super) type R<T> = std::result::Result<T, Fail>;

/// One XML element: its local name, attributes (unescaped), line and child elements.
#[derive(Debug)]
pub(super) struct Element {
    pub name: String,
    pub attrs: Vec<(String, String)>,
    pub line: usize,
    pub children: Vec<Element>,
}

impl Element {
    /// The value of attribute `name`, if present.
    pub fn attr(&self, name: &str) -> Option<&str> {
        self.attrs
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// The first child element called `name`.
    pub fn child(&self, name: &str) -> Option<&Element> {
        self.children.iter().find(|c| c.name == name)
    }

    /// All child elements called `name`.
    pub fn children_named<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a Element> {
        self.children.iter().filter(move |c| c.name == name)
    }
}

/// Maps byte offsets to 1-based line numbers.
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

/// Read `xml` into a tree and return its root element.
pub(super) fn parse_tree(xml: &str) -> R<Element> {
    let lines = Lines::new(xml);
    let mut reader = Reader::from_str(xml);
    let mut stack: Vec<Element> = Vec::new();
    let mut root: Option<Element> = None;
    loop {
        let line = lines.line(reader.buffer_position());
        let event = reader.read_event().map_err(|e| {
            Fail::new(
                lines.line(reader.error_position()),
                format!("malformed XML: {e}"),
            )
        })?;
        match event {
            Event::Start(start) => stack.push(element(&start, line)?),
            Event::Empty(start) => {
                let element = element(&start, line)?;
                attach(&mut stack, &mut root, element);
            }
            Event::End(_) => {
                if let Some(element) = stack.pop() {
                    attach(&mut stack, &mut root, element);
                }
            }
            Event::Eof => break,
            _ => {}
        }
    }
    if let Some(open) = stack.last() {
        return Err(Fail::new(
            lines.line(xml.len() as u64),
            format!(
                "malformed XML: element <{}> opened on line {} is never closed",
                open.name, open.line
            ),
        ));
    }
    root.ok_or_else(|| Fail::new(1, "malformed XML: the file has no root element"))
}

fn attach(stack: &mut [Element], root: &mut Option<Element>, element: Element) {
    match stack.last_mut() {
        Some(parent) => parent.children.push(element),
        None => {
            if root.is_none() {
                *root = Some(element);
            }
        }
    }
}

fn element(start: &BytesStart<'_>, line: usize) -> R<Element> {
    let name = String::from_utf8_lossy(start.local_name().as_ref()).into_owned();
    let mut attrs = Vec::new();
    for attr in start.attributes() {
        let attr = attr.map_err(|e| Fail::new(line, format!("malformed XML in <{name}>: {e}")))?;
        let key = String::from_utf8_lossy(attr.key.as_ref()).into_owned();
        let value = attr.unescape_value().map_err(|e| {
            Fail::new(
                line,
                format!("malformed XML in <{name}>, attribute \"{key}\": {e}"),
            )
        })?;
        attrs.push((key, value.into_owned()));
    }
    Ok(Element {
        name,
        attrs,
        line,
        children: Vec::new(),
    })
}
