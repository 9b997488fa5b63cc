//! A small namespace-aware element tree of an SSP file, each element with its line.

use quick_xml::events::{BytesStart, Event};
use quick_xml::name::ResolveResult;
use quick_xml::NsReader;

/// The namespace of an element: one of SSP's, none, or a vendor's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Ns {
    /// `.../SystemStructureDescription`
    Ssd,
    /// `.../SystemStructureCommon`
    Ssc,
    /// `.../SystemStructureParameterValues`
    Ssv,
    /// `.../SystemStructureParameterMapping`
    Ssm,
    /// `.../SystemStructureSignalDictionary`
    Ssb,
    /// No namespace (hand-written files): read as SSP.
    None,
    /// Any other namespace URI (vendor extensions, cosimo's annotation).
    Other(String),
}

impl Ns {
    fn classify(uri: &str) -> Ns {
        let standard = uri.starts_with("http://ssp-standard.org/")
            || uri.starts_with("https://ssp-standard.org/");
        let suffix = uri.rsplit('/').next().unwrap_or("");
        match (standard, suffix) {
            (true, "SystemStructureDescription") => Ns::Ssd,
            (true, "SystemStructureCommon") => Ns::Ssc,
            (true, "SystemStructureParameterValues") => Ns::Ssv,
            (true, "SystemStructureParameterMapping") => Ns::Ssm,
            (true, "SystemStructureSignalDictionary") => Ns::Ssb,
            _ => Ns::Other(uri.to_string()),
        }
    }

    /// The usual prefix, for messages.
    fn prefix(&self) -> &str {
        match self {
            Ns::Ssd => "ssd:",
            Ns::Ssc => "ssc:",
            Ns::Ssv => "ssv:",
            Ns::Ssm => "ssm:",
            Ns::Ssb => "ssb:",
            Ns::None | Ns::Other(_) => "",
        }
    }
}

/// One XML element: namespace, local name, attributes (unescaped), line and child elements.
#[derive(Debug)]
pub(super) struct Element {
    pub ns: Ns,
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

    /// Whether this is the SSP element `name` (in any SSP namespace, or in none).
    pub fn is(&self, name: &str) -> bool {
        self.is_ssp() && self.name == name
    }

    /// In one of SSP's namespaces (or in none).
    pub fn is_ssp(&self) -> bool {
        !matches!(self.ns, Ns::Other(_))
    }

    /// The first SSP child element called `name`.
    pub fn child(&self, name: &str) -> Option<&Element> {
        self.children.iter().find(|c| c.is(name))
    }

    /// All SSP child elements called `name`.
    pub fn children_named<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a Element> {
        self.children.iter().filter(move |c| c.is(name))
    }

    /// `<ssd:Component name="x">` for messages.
    pub fn show(&self) -> String {
        match self.attr("name") {
            Some(name) => format!("<{}{} name=\"{name}\">", self.ns.prefix(), self.name),
            None => format!("<{}{}>", self.ns.prefix(), self.name),
        }
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

/// Read `xml` into a tree; on failure `(line, message)`.
pub(super) fn parse_tree(xml: &str) -> Result<Element, (usize, String)> {
    let xml = xml.strip_prefix('\u{feff}').unwrap_or(xml);
    let lines = Lines::new(xml);
    let mut reader = NsReader::from_str(xml);
    let mut stack: Vec<Element> = Vec::new();
    let mut root: Option<Element> = None;
    loop {
        // The event starts after leading whitespace: skip it so the line is the tag's.
        let position = reader.buffer_position();
        let rest = xml
            .get(usize::try_from(position).unwrap_or(0)..)
            .unwrap_or("");
        let skipped = rest.len() - rest.trim_start().len();
        let line = lines.line(position + skipped as u64);
        let (ns, event) = match reader.read_resolved_event() {
            Ok((ns, event)) => (ns.into_owned_result(), event),
            Err(e) => {
                let message = format!("malformed XML: {e}");
                return Err((lines.line(reader.error_position()), message));
            }
        };
        let ns = match ns {
            Resolved::Bound(uri) => Ns::classify(&uri),
            Resolved::Unbound => Ns::None,
            Resolved::Unknown(prefix) => {
                return Err((
                    line,
                    format!(
                        "malformed XML: the namespace prefix \"{}\" is not declared; add \
                         xmlns:{0}=\"...\" to the root element",
                        prefix
                    ),
                ))
            }
        };
        match event {
            Event::Start(start) => stack.push(element(ns, &start, line)?),
            Event::Empty(start) => {
                let element = element(ns, &start, line)?;
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
        return Err((
            lines.line(xml.len() as u64),
            format!(
                "malformed XML: element <{}> opened on line {} is never closed",
                open.name, open.line
            ),
        ));
    }
    root.ok_or_else(|| (1, "malformed XML: the file has no root element".to_string()))
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

fn element(ns: Ns, start: &BytesStart<'_>, line: usize) -> Result<Element, (usize, String)> {
    let name = String::from_utf8_lossy(start.local_name().as_ref()).into_owned();
    let mut attrs = Vec::new();
    for attr in start.attributes() {
        let attr = attr.map_err(|e| (line, format!("malformed XML in <{name}>: {e}")))?;
        let key = String::from_utf8_lossy(attr.key.as_ref()).into_owned();
        if key == "xmlns" || key.starts_with("xmlns:") {
            continue;
        }
        let value = attr.unescape_value().map_err(|e| {
            (
                line,
                format!("malformed XML in <{name}>, attribute \"{key}\": {e}"),
            )
        })?;
        attrs.push((key, value.into_owned()));
    }
    Ok(Element {
        ns,
        name,
        attrs,
        line,
        children: Vec::new(),
    })
}

/// A namespace resolution that does not borrow the reader.
enum Resolved {
    Bound(String),
    Unbound,
    Unknown(String),
}

trait IntoOwned {
    fn into_owned_result(self) -> Resolved;
}

impl IntoOwned for ResolveResult<'_> {
    fn into_owned_result(self) -> Resolved {
        match self {
            ResolveResult::Bound(ns) => {
                Resolved::Bound(String::from_utf8_lossy(ns.as_ref()).into_owned())
            }
            ResolveResult::Unbound => Resolved::Unbound,
            ResolveResult::Unknown(prefix) => {
                Resolved::Unknown(String::from_utf8_lossy(&prefix).into_owned())
            }
        }
    }
}
