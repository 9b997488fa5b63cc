//! A small namespace-aware element tree of an SSP file, each element with its line.

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

/// One element of an SSP file, with its namespace.
pub(super) type Element = crate::xml::Element<Ns>;

impl Element {
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

/// Read `xml` into a tree; on failure `(line, message)`.
pub(super) fn parse_tree(xml: &str) -> Result<Element, (usize, String)> {
    crate::xml::parse_tree_ns(xml, |uri| uri.map_or(Ns::None, Ns::classify))
        .map_err(|f| (f.line, f.message))
}
