//! Scenario files in libcosim's format (what `cosim run --scenario FILE` reads), in JSON or YAML:
//! timed events that override, bias or reset one variable of one component.
//!
//! The file is one mapping: `description` (optional), `defaults` (`model`, `variable`, `action`
//! for events that leave them out), `events` (each with `time`, `model`, `variable`, `action` in
//! override / bias / reset, and `value` for override and bias) and `end` (optional). This module
//! only reads and checks the file; whether a component, a variable and the value's type exist is
//! for the master to check against the system, with [`Scenario::location`] in its message.
//!
//! Deliberately stricter than libcosim, which ignores what it does not know: unknown or repeated
//! keys, negative or non-finite times, an event after `end` and an empty `value` are refused,
//! since each would otherwise be a silent mistake.

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};

/// A scenario: timed changes to variables of a running system, as read from a file.
#[derive(Debug, Clone, PartialEq)]
pub struct Scenario {
    /// The file it was read from (or the name given to a parser), for messages.
    pub path: PathBuf,
    /// The file's `description`, if it has one.
    pub description: Option<String>,
    /// Seconds after the start at which the scenario ends and every change it made is undone.
    /// Without it libcosim undoes them at the first step after the last event has run.
    pub end: Option<f64>,
    /// The events sorted by time; events at equal times keep the file's order.
    pub events: Vec<ScenarioEvent>,
}

/// One timed change to one variable.
#[derive(Debug, Clone, PartialEq)]
pub struct ScenarioEvent {
    /// Seconds after the start of the simulation (libcosim counts from the scenario's loading,
    /// which `cosim run` does at the start); it applies at the first step starting at or after it.
    pub time: f64,
    /// The component's name, from the event or from `defaults`.
    pub model: String,
    /// The variable's name, from the event or from `defaults`.
    pub variable: String,
    /// What happens to the variable.
    pub action: ScenarioAction,
    /// The 1-based line of the file where the event is written.
    pub line: usize,
}

/// What an event does to its variable.
#[derive(Debug, Clone, PartialEq)]
pub enum ScenarioAction {
    /// The variable reads this value from now on, whatever it is set to or computes.
    Override(ScenarioValue),
    /// This value is added to the variable's own value from now on.
    Bias(ScenarioValue),
    /// Undo the variable's override or bias.
    Reset,
}

/// An event's value as the file writes it; the master checks it against the variable's type.
#[derive(Debug, Clone, PartialEq)]
pub enum ScenarioValue {
    /// A number written with a fraction or an exponent (finite).
    Float(f64),
    /// A number written without a fraction.
    Integer(i64),
    /// `true` or `false`.
    Boolean(bool),
    /// A string (libcosim overrides String variables with it).
    String(String),
}

/// The actions a scenario knows, as files spell them.
const ACTIONS: [&str; 3] = ["override", "bias", "reset"];

/// The latest time a scenario may name: libcosim counts time in 64-bit nanoseconds, so a file
/// valid for it stays below this, and anything beyond is a typo or a hostile file.
const MAX_TIME: f64 = 9.2e9;

/// Deepest nesting a scenario file may have (it needs 3: file, events, event).
const MAX_DEPTH: usize = 16;

impl Scenario {
    /// Read a scenario file: `.json` as JSON, `.yaml` / `.yml` as YAML, anything else as JSON.
    pub fn read(path: &Path) -> Result<Scenario, String> {
        if let Some(message) = crate::fs_checks::special_file_message(path, "a scenario") {
            return Err(format!("{}: {message}", path.display()));
        }
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("{}: cannot read the scenario: {e}", path.display()))?;
        let extension = path
            .extension()
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase);
        match extension.as_deref() {
            Some("json") => Scenario::parse_json(&text, path),
            Some("yaml" | "yml") => Scenario::parse_yaml(&text, path),
            _ => Scenario::parse_json(&text, path).map_err(|e| {
                format!(
                    "{e}\n(read as JSON because the name ends in neither .json nor .yaml / .yml: \
                     name a YAML scenario *.yaml or *.yml)"
                )
            }),
        }
    }

    /// Parse the text of a JSON scenario; `name` names it in messages.
    pub fn parse_json(text: &str, name: &Path) -> Result<Scenario, String> {
        let reader = Reader {
            path: name,
            syntax: Syntax::Json,
        };
        let root = json_tree(strip_bom(text), &reader)?;
        reader.scenario(root)
    }

    /// Parse the text of a YAML scenario; `name` names it in messages.
    pub fn parse_yaml(text: &str, name: &Path) -> Result<Scenario, String> {
        let reader = Reader {
            path: name,
            syntax: Syntax::Yaml,
        };
        let root = yaml_tree(strip_bom(text), &reader)?;
        reader.scenario(root)
    }

    /// Where `event` is written, as `FILE:LINE`, for messages about it.
    pub fn location(&self, event: &ScenarioEvent) -> String {
        format!("{}:{}", self.path.display(), event.line)
    }
}

impl ScenarioAction {
    /// The action's name as files spell it.
    pub fn name(&self) -> &'static str {
        match self {
            ScenarioAction::Override(_) => "override",
            ScenarioAction::Bias(_) => "bias",
            ScenarioAction::Reset => "reset",
        }
    }

    /// The value of an override or a bias.
    pub fn value(&self) -> Option<&ScenarioValue> {
        match self {
            ScenarioAction::Override(v) | ScenarioAction::Bias(v) => Some(v),
            ScenarioAction::Reset => None,
        }
    }
}

impl ScenarioValue {
    /// The value for a Real variable: a float, or an integer read as a float (as libcosim does).
    pub fn as_real(&self) -> Option<f64> {
        match self {
            ScenarioValue::Float(x) => Some(*x),
            ScenarioValue::Integer(i) => Some(*i as f64),
            _ => None,
        }
    }
}

impl fmt::Display for ScenarioValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ScenarioValue::Float(x) => write!(f, "the number {x:?}"),
            ScenarioValue::Integer(i) => write!(f, "the integer {i}"),
            ScenarioValue::Boolean(b) => write!(f, "the boolean {b}"),
            ScenarioValue::String(s) => write!(f, "the string {s:?}"),
        }
    }
}

fn strip_bom(text: &str) -> &str {
    text.strip_prefix('\u{feff}').unwrap_or(text)
}

/// Which syntax a file is in: its examples in messages are written in it.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Syntax {
    Json,
    Yaml,
}

/// A value of either syntax with where it starts (1-based line and column).
#[derive(Debug)]
struct Node {
    line: usize,
    column: usize,
    kind: Kind,
    /// A YAML plain scalar's text as written: a name like `1` or `true` is still a name.
    text: Option<String>,
}

#[derive(Debug)]
enum Kind {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    Seq(Vec<Node>),
    Map(Vec<(Key, Node)>),
    /// Anything a scenario has no use for, described for messages.
    Other(&'static str),
}

#[derive(Debug)]
struct Key {
    name: String,
    line: usize,
    column: usize,
}

struct Reader<'a> {
    path: &'a Path,
    syntax: Syntax,
}

/// What `defaults` gives events that leave a key out.
#[derive(Default)]
struct Defaults {
    model: Option<String>,
    variable: Option<String>,
    action: Option<String>,
}

impl Reader<'_> {
    fn error(&self, line: usize, column: usize, message: impl fmt::Display) -> String {
        format!("{}:{line}:{column}: {message}", self.path.display())
    }

    fn at(&self, node: &Node, message: impl fmt::Display) -> String {
        self.error(node.line, node.column, message)
    }

    /// `key: value` as the file's syntax writes it.
    fn example(&self, key: &str, value: &str) -> String {
        match self.syntax {
            Syntax::Json => format!("\"{key}\": {value}"),
            Syntax::Yaml => format!("{key}: {value}"),
        }
    }

    fn describe(&self, kind: &Kind) -> &'static str {
        match (kind, self.syntax) {
            (Kind::Null, _) => "empty (null)",
            (Kind::Bool(_), _) => "a boolean",
            (Kind::Int(_), _) => "an integer",
            (Kind::Float(_), _) => "a number",
            (Kind::Str(_), _) => "a string",
            (Kind::Seq(_), Syntax::Json) => "an array",
            (Kind::Seq(_), Syntax::Yaml) => "a list",
            (Kind::Map(_), Syntax::Json) => "an object",
            (Kind::Map(_), Syntax::Yaml) => "a mapping",
            (Kind::Other(what), _) => what,
        }
    }

    /// The entries of a mapping, refusing keys outside `known` and keys given twice.
    fn entries<'n>(
        &self,
        node: &'n Node,
        what: &str,
        known: &[&str],
        hint: &str,
    ) -> Result<HashMap<&'n str, &'n Node>, String> {
        let Kind::Map(entries) = &node.kind else {
            return Err(self.at(
                node,
                format_args!(
                    "{what} is {}, not {}{hint}",
                    self.describe(&node.kind),
                    self.describe(&Kind::Map(Vec::new()))
                ),
            ));
        };
        let mut seen: HashMap<&str, &Node> = HashMap::new();
        let mut lines: HashMap<&str, usize> = HashMap::new();
        for (key, value) in entries {
            if !known.contains(&key.name.as_str()) {
                let extra = if what == "defaults" && key.name == "value" {
                    "; a value belongs to each event".to_string()
                } else {
                    String::new()
                };
                return Err(self.error(
                    key.line,
                    key.column,
                    format_args!(
                        "unknown key {:?} in {what}: write {}{extra}",
                        key.name,
                        one_of(known)
                    ),
                ));
            }
            if let Some(first) = lines.insert(&key.name, key.line) {
                return Err(self.error(
                    key.line,
                    key.column,
                    format_args!(
                        "{:?} is given twice in {what} (first on line {first}): keep one",
                        key.name
                    ),
                ));
            }
            seen.insert(&key.name, value);
        }
        Ok(seen)
    }

    /// A name (model, variable, action): a string, or a YAML plain scalar's text.
    fn name(&self, node: &Node, key: &str, example: &str) -> Result<String, String> {
        let name = match (&node.kind, &node.text) {
            (Kind::Str(s), _) => s.clone(),
            (Kind::Bool(_) | Kind::Int(_) | Kind::Float(_), Some(text)) => text.clone(),
            (kind, _) => {
                return Err(self.at(
                    node,
                    format_args!(
                        "{key} is {}, not a name: write e.g. {}",
                        self.describe(kind),
                        self.example(key, example)
                    ),
                ))
            }
        };
        if name.trim().is_empty() {
            return Err(self.at(
                node,
                format_args!("{key} is empty: write e.g. {}", self.example(key, example)),
            ));
        }
        Ok(name)
    }

    /// A time in seconds: a finite number in [0, MAX_TIME].
    fn time(&self, node: &Node, key: &str) -> Result<f64, String> {
        let time = match node.kind {
            Kind::Int(i) => i as f64,
            Kind::Float(x) => x,
            ref kind => {
                return Err(self.at(
                    node,
                    format_args!(
                        "{key} is {}, not a number of seconds: write e.g. {}",
                        self.describe(kind),
                        self.example(key, "0.5")
                    ),
                ))
            }
        };
        if !time.is_finite() || !(0.0..=MAX_TIME).contains(&time) {
            return Err(self.at(
                node,
                format_args!(
                    "{key} {time} is not a time: write a finite number of seconds from 0 to \
                     {MAX_TIME:e} (libcosim's clock ends there)"
                ),
            ));
        }
        Ok(time)
    }

    fn action(&self, node: &Node) -> Result<String, String> {
        let action = self.name(node, "action", "\"override\"")?;
        if ACTIONS.contains(&action.as_str()) {
            Ok(action)
        } else {
            Err(self.at(
                node,
                format_args!("unknown action {action:?}: write {}", one_of(&ACTIONS)),
            ))
        }
    }

    fn value(&self, node: &Node, action: &str) -> Result<ScenarioValue, String> {
        match &node.kind {
            Kind::Bool(b) => Ok(ScenarioValue::Boolean(*b)),
            Kind::Int(i) => Ok(ScenarioValue::Integer(*i)),
            Kind::Float(x) if x.is_finite() => Ok(ScenarioValue::Float(*x)),
            Kind::Float(x) => Err(self.at(
                node,
                format_args!("the value of the {action} is {x}: write a finite number"),
            )),
            Kind::Str(s) => Ok(ScenarioValue::String(s.clone())),
            kind => Err(self.at(
                node,
                format_args!(
                    "the value of the {action} is {}: write a number, true / false or a string, \
                     e.g. {}",
                    self.describe(kind),
                    self.example("value", "1.5")
                ),
            )),
        }
    }

    fn scenario(&self, root: Node) -> Result<Scenario, String> {
        let top = self.entries(
            &root,
            "the scenario",
            &["description", "defaults", "events", "end"],
            "; a scenario file is one mapping with events (and optionally defaults, end and \
             description)",
        )?;
        let description = match top.get("description") {
            None => None,
            Some(node) => match &node.kind {
                Kind::Str(s) => Some(s.clone()),
                kind => {
                    return Err(self.at(
                        node,
                        format_args!("description is {}, not a string", self.describe(kind)),
                    ))
                }
            },
        };
        let mut defaults = Defaults::default();
        if let Some(node) = top.get("defaults") {
            let entries = self.entries(node, "defaults", &["model", "variable", "action"], "")?;
            if let Some(n) = entries.get("model") {
                defaults.model = Some(self.name(n, "model", "\"mass1\"")?);
            }
            if let Some(n) = entries.get("variable") {
                defaults.variable = Some(self.name(n, "variable", "\"F\"")?);
            }
            if let Some(n) = entries.get("action") {
                defaults.action = Some(self.action(n)?);
            }
        }
        let end = top.get("end").map(|n| self.time(n, "end")).transpose()?;
        let Some(events_node) = top.get("events") else {
            return Err(self.at(
                &root,
                format_args!(
                    "the scenario has no events: list them, e.g. {}",
                    match self.syntax {
                        Syntax::Json => "\"events\": [{ \"time\": 1, \"model\": \"mass1\", \
                                         \"variable\": \"F\", \"action\": \"bias\", \"value\": 10 }]",
                        Syntax::Yaml => "events: [{ time: 1, model: mass1, variable: F, \
                                         action: bias, value: 10 }]",
                    }
                ),
            ));
        };
        let Kind::Seq(items) = &events_node.kind else {
            return Err(self.at(
                events_node,
                format_args!(
                    "events is {}, not {} of events",
                    self.describe(&events_node.kind),
                    self.describe(&Kind::Seq(Vec::new()))
                ),
            ));
        };
        let mut events = Vec::with_capacity(items.len());
        for item in items {
            let event = self.event(item, &defaults)?;
            if let Some(end) = end {
                if event.time > end {
                    return Err(self.at(
                        item,
                        format_args!(
                            "the event at time {} comes after the scenario's end {end}: move it \
                             before the end or raise end",
                            event.time
                        ),
                    ));
                }
            }
            events.push(event);
        }
        // Stable: events at the same time apply in the file's order.
        events.sort_by(|a, b| a.time.total_cmp(&b.time));
        Ok(Scenario {
            path: self.path.to_path_buf(),
            description,
            end,
            events,
        })
    }

    fn event(&self, node: &Node, defaults: &Defaults) -> Result<ScenarioEvent, String> {
        let fields = self.entries(
            node,
            "an event",
            &["time", "model", "variable", "action", "value"],
            "",
        )?;
        let time = match fields.get("time") {
            Some(n) => self.time(n, "time")?,
            None => {
                return Err(self.at(
                    node,
                    format_args!(
                        "the event has no time: write its time in seconds, e.g. {}",
                        self.example("time", "0.5")
                    ),
                ))
            }
        };
        let pick = |key: &str, default: &Option<String>, example: &str| match fields.get(key) {
            Some(n) => self.name(n, key, example),
            None => default.clone().ok_or_else(|| {
                self.at(
                    node,
                    format_args!(
                        "the event has no {key} and defaults give none: write e.g. {} in the \
                         event or in defaults",
                        self.example(key, example)
                    ),
                )
            }),
        };
        let model = pick("model", &defaults.model, "\"mass1\"")?;
        let variable = pick("variable", &defaults.variable, "\"F\"")?;
        let action = match fields.get("action") {
            Some(n) => self.action(n)?,
            None => pick("action", &defaults.action, "\"override\"")?,
        };
        let value = fields.get("value");
        let action = match (action.as_str(), value) {
            ("reset", None) => ScenarioAction::Reset,
            ("reset", Some(n)) => {
                // libcosim reads no value for a reset; say so rather than drop it unseen.
                log::warn!(
                    "{}",
                    self.at(
                        n,
                        "the value of a reset is ignored: a reset undoes the override or bias"
                    )
                );
                ScenarioAction::Reset
            }
            (action, None) => {
                return Err(self.at(
                    node,
                    format_args!(
                        "the {action} has no value: write e.g. {}",
                        self.example("value", "1.5")
                    ),
                ))
            }
            ("override", Some(n)) => ScenarioAction::Override(self.value(n, "override")?),
            (_, Some(n)) => ScenarioAction::Bias(self.value(n, "bias")?),
        };
        Ok(ScenarioEvent {
            time,
            model,
            variable,
            action,
            line: node.line,
        })
    }
}

/// "a, b or c" of quoted names.
fn one_of(names: &[&str]) -> String {
    let quoted: Vec<String> = names.iter().map(|n| format!("{n:?}")).collect();
    match quoted.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        _ => quoted.concat(),
    }
}

/// Turns byte offsets into 1-based lines and columns, counting on from the last offset asked
/// for: the walk only moves forward, so a long one-line file costs one pass, not one per event.
struct Lines<'t> {
    text: &'t str,
    /// The last offset asked for, with its line and column.
    cursor: std::cell::Cell<(usize, usize, usize)>,
}

impl<'t> Lines<'t> {
    fn new(text: &'t str) -> Self {
        Lines {
            text,
            cursor: std::cell::Cell::new((0, 1, 1)),
        }
    }

    fn at(&self, offset: usize) -> (usize, usize) {
        let (mut from, mut line, mut column) = self.cursor.get();
        if offset < from {
            (from, line, column) = (0, 1, 1);
        }
        let Some(between) = self.text.get(from..offset) else {
            return (line, column);
        };
        for c in between.chars() {
            if c == '\n' {
                line += 1;
                column = 1;
            } else {
                column += 1;
            }
        }
        self.cursor.set((offset, line, column));
        (line, column)
    }
}

/// The JSON text as a tree of nodes with positions. serde_json checks the syntax first (its
/// messages and its recursion limit); then a walk over the top three levels, with serde_json
/// reading every key and scalar, records where each starts.
fn json_tree(text: &str, reader: &Reader) -> Result<Node, String> {
    serde_json::from_str::<serde::de::IgnoredAny>(text).map_err(|e| {
        let location = format!(" at line {} column {}", e.line(), e.column());
        let message = e.to_string();
        let message = message.strip_suffix(&location).unwrap_or(&message);
        reader.error(e.line(), e.column(), message)
    })?;
    let mut walk = JsonWalk {
        text,
        pos: 0,
        lines: Lines::new(text),
    };
    // The text is valid JSON, so the walk fails only on a bug of its own: say where.
    walk.value(0).map_err(|m| {
        let (line, column) = walk.lines.at(walk.pos);
        reader.error(line, column, format_args!("cannot read the JSON here: {m}"))
    })
}

struct JsonWalk<'t> {
    text: &'t str,
    pos: usize,
    lines: Lines<'t>,
}

impl JsonWalk<'_> {
    fn skip_whitespace(&mut self) {
        let rest = &self.text[self.pos..];
        let trimmed = rest.trim_start_matches([' ', '\t', '\n', '\r']);
        self.pos += rest.len() - trimmed.len();
    }

    fn peek(&self) -> Option<u8> {
        self.text.as_bytes().get(self.pos).copied()
    }

    /// One JSON value read by serde_json from the current position.
    fn next<T: serde::de::DeserializeOwned>(&mut self) -> Result<T, String> {
        let rest = self.text.get(self.pos..).ok_or("offset out of the text")?;
        let mut stream = serde_json::Deserializer::from_str(rest).into_iter::<T>();
        match stream.next() {
            Some(Ok(value)) => {
                self.pos += stream.byte_offset();
                Ok(value)
            }
            Some(Err(e)) => Err(e.to_string()),
            None => Err("unexpected end of the text".into()),
        }
    }

    fn expect(&mut self, byte: u8) -> Result<(), String> {
        self.skip_whitespace();
        if self.peek() == Some(byte) {
            self.pos += 1;
            Ok(())
        } else {
            Err(format!("expected `{}`", byte as char))
        }
    }

    fn value(&mut self, depth: usize) -> Result<Node, String> {
        self.skip_whitespace();
        let (line, column) = self.lines.at(self.pos);
        let node = |kind| Node {
            line,
            column,
            kind,
            text: None,
        };
        // A scenario's objects and arrays sit in the top three levels; deeper ones are skipped
        // whole and only described.
        match self.peek() {
            Some(b'{') if depth < 3 => {
                self.pos += 1;
                let mut entries = Vec::new();
                self.skip_whitespace();
                if self.peek() == Some(b'}') {
                    self.pos += 1;
                    return Ok(node(Kind::Map(entries)));
                }
                loop {
                    self.skip_whitespace();
                    let (line, column) = self.lines.at(self.pos);
                    let name: String = self.next()?;
                    self.expect(b':')?;
                    let value = self.value(depth + 1)?;
                    entries.push((Key { name, line, column }, value));
                    self.skip_whitespace();
                    match self.peek() {
                        Some(b',') => self.pos += 1,
                        Some(b'}') => {
                            self.pos += 1;
                            return Ok(node(Kind::Map(entries)));
                        }
                        _ => return Err("expected `,` or `}`".into()),
                    }
                }
            }
            Some(b'[') if depth < 3 => {
                self.pos += 1;
                let mut items = Vec::new();
                self.skip_whitespace();
                if self.peek() == Some(b']') {
                    self.pos += 1;
                    return Ok(node(Kind::Seq(items)));
                }
                loop {
                    items.push(self.value(depth + 1)?);
                    self.skip_whitespace();
                    match self.peek() {
                        Some(b',') => self.pos += 1,
                        Some(b']') => {
                            self.pos += 1;
                            return Ok(node(Kind::Seq(items)));
                        }
                        _ => return Err("expected `,` or `]`".into()),
                    }
                }
            }
            // Skipped without recursion: serde_json's IgnoredAny walks nesting with a heap stack.
            Some(b'[') => {
                self.next::<serde::de::IgnoredAny>()?;
                Ok(node(Kind::Other("an array")))
            }
            Some(b'{') => {
                self.next::<serde::de::IgnoredAny>()?;
                Ok(node(Kind::Other("an object")))
            }
            _ => {
                let value: serde_json::Value = self.next()?;
                Ok(node(json_kind(value)))
            }
        }
    }
}

fn json_kind(value: serde_json::Value) -> Kind {
    use serde_json::Value;
    match value {
        Value::Null => Kind::Null,
        Value::Bool(b) => Kind::Bool(b),
        Value::Number(n) => match (n.as_i64(), n.as_f64()) {
            (Some(i), _) if !n.is_f64() => Kind::Int(i),
            (None, _) if n.is_u64() => Kind::Other("an integer beyond 64 bits"),
            (_, Some(x)) => Kind::Float(x),
            _ => Kind::Other("a number out of range"),
        },
        Value::String(s) => Kind::Str(s),
        Value::Array(_) | Value::Object(_) => Kind::Other("a container"),
    }
}

/// The YAML text as a tree of nodes with positions. A first pass over the parser's events
/// refuses deep nesting (saphyr's loader recurses, and a deep tree would overflow the stack);
/// the second loads the one document, scalars left as written so that names keep their text.
fn yaml_tree(text: &str, reader: &Reader) -> Result<Node, String> {
    use saphyr::{MarkedYaml, YamlLoader};
    use saphyr_parser::{Event, Parser, ScanError};

    let scan_error = |e: &ScanError| {
        reader.error(
            e.marker().line(),
            e.marker().col() + 1,
            format_args!("not valid YAML: {}", e.info()),
        )
    };
    let mut depth = 0usize;
    for event in Parser::new_from_str(text) {
        let (event, span) = event.map_err(|e| scan_error(&e))?;
        match event {
            Event::SequenceStart(..) | Event::MappingStart(..) => {
                depth += 1;
                if depth > MAX_DEPTH {
                    return Err(reader.error(
                        span.start.line(),
                        span.start.col() + 1,
                        format_args!(
                            "nested more than {MAX_DEPTH} levels deep: a scenario is a mapping \
                             of an events list of mappings"
                        ),
                    ));
                }
            }
            Event::SequenceEnd | Event::MappingEnd => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    let mut loader = YamlLoader::<MarkedYaml>::default();
    loader.early_parse(false);
    Parser::new_from_str(text)
        .load(&mut loader, true)
        .map_err(|e| scan_error(&e))?;
    if let Some(e) = loader.error() {
        return Err(scan_error(e));
    }
    let mut documents = loader.into_documents().into_iter();
    let Some(document) = documents.next() else {
        return Err(reader.error(
            1,
            1,
            "the file is empty: a scenario is a mapping with events",
        ));
    };
    if let Some(second) = documents.next() {
        return Err(reader.error(
            second.span.start.line(),
            second.span.start.col() + 1,
            "a second YAML document: a scenario file holds one",
        ));
    }
    Ok(yaml_node(document))
}

fn yaml_node(node: saphyr::MarkedYaml<'_>) -> Node {
    use saphyr::{Scalar, YamlData};

    let line = node.span.start.line();
    let column = node.span.start.col() + 1;
    let mut text = None;
    let kind = match node.data {
        YamlData::Representation(value, style, tag) => {
            let plain = style == saphyr::ScalarStyle::Plain;
            let written = value.to_string();
            match Scalar::parse_from_cow_and_metadata(value, style, tag.as_ref()) {
                Some(scalar) => {
                    if plain {
                        text = Some(written);
                    }
                    match scalar {
                        Scalar::Null => Kind::Null,
                        Scalar::Boolean(b) => Kind::Bool(b),
                        Scalar::Integer(i) => Kind::Int(i),
                        Scalar::FloatingPoint(x) => Kind::Float(x.into_inner()),
                        Scalar::String(s) => Kind::Str(s.into_owned()),
                    }
                }
                None => Kind::Other("a value that does not match its tag"),
            }
        }
        YamlData::Value(scalar) => match scalar {
            Scalar::Null => Kind::Null,
            Scalar::Boolean(b) => Kind::Bool(b),
            Scalar::Integer(i) => Kind::Int(i),
            Scalar::FloatingPoint(x) => Kind::Float(x.into_inner()),
            Scalar::String(s) => Kind::Str(s.into_owned()),
        },
        YamlData::Sequence(items) => Kind::Seq(items.into_iter().map(yaml_node).collect()),
        YamlData::Mapping(entries) => {
            let mut pairs = Vec::with_capacity(entries.len());
            for (key, value) in entries {
                let key_line = key.span.start.line();
                let key_column = key.span.start.col() + 1;
                let key = yaml_node(key);
                let name = match (key.kind, key.text) {
                    (Kind::Str(s), _) => s,
                    (_, Some(text)) => text,
                    _ => "(a key that is not a name)".to_string(),
                };
                pairs.push((
                    Key {
                        name,
                        line: key_line,
                        column: key_column,
                    },
                    yaml_node(value),
                ));
            }
            Kind::Map(pairs)
        }
        YamlData::Tagged(_, inner) => return yaml_node(*inner),
        YamlData::Alias(_) => Kind::Other("an unresolved alias"),
        YamlData::BadValue => Kind::Other("a value that cannot be read"),
    };
    Node {
        line,
        column,
        kind,
        text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn json(text: &str) -> Result<Scenario, String> {
        Scenario::parse_json(text, Path::new("s.json"))
    }

    fn yaml(text: &str) -> Result<Scenario, String> {
        Scenario::parse_yaml(text, Path::new("s.yaml"))
    }

    /// The error of `result`, checked to start with `prefix` (file, line, column) and to
    /// contain `words`.
    fn fails(result: Result<Scenario, String>, prefix: &str, words: &str) {
        match result {
            Ok(s) => panic!("expected an error at {prefix}, got {s:?}"),
            Err(e) => assert!(
                e.starts_with(prefix) && e.contains(words),
                "expected {prefix} ... {words}, got: {e}"
            ),
        }
    }

    fn repo(path: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join(path)
    }

    const JSON: &str = r#"{
  "description": "every action on every type",
  "defaults": { "model": "plant", "action": "override" },
  "events": [
    { "time": 2, "variable": "gear", "value": 3 },
    { "time": 1.0, "variable": "force", "action": "bias", "value": -2.5 },
    { "time": 1.0, "model": "valve", "variable": "open", "value": true },
    { "time": 3.5, "variable": "force", "action": "reset" },
    { "time": 4, "variable": "gear", "action": "bias", "value": -1 },
    { "time": 5, "variable": "label", "value": "fast" }
  ],
  "end": 6.0
}"#;

    const YAML: &str = "description: every action on every type
defaults:
  model: plant
  action: override
events:
  - {time: 2, variable: gear, value: 3}
  - time: 1.0
    variable: force
    action: bias
    value: -2.5
  - time: 1.0
    model: valve
    variable: open
    value: true
  - time: 3.5
    variable: force
    action: reset
  - time: 4
    variable: gear
    action: bias
    value: -1
  - time: 5
    variable: label
    value: 'fast'
end: 6.0
";

    #[test]
    fn json_and_yaml_read_the_same_scenario() {
        let from_json = json(JSON).unwrap();
        let from_yaml = yaml(YAML).unwrap();
        let event = |time, model: &str, variable: &str, action, line| ScenarioEvent {
            time,
            model: model.into(),
            variable: variable.into(),
            action,
            line,
        };
        use ScenarioAction::*;
        use ScenarioValue::*;
        // Sorted by time; the two events at 1.0 keep the file's order.
        assert_eq!(
            from_json.events,
            vec![
                event(1.0, "plant", "force", Bias(Float(-2.5)), 6),
                event(1.0, "valve", "open", Override(Boolean(true)), 7),
                event(2.0, "plant", "gear", Override(Integer(3)), 5),
                event(3.5, "plant", "force", Reset, 8),
                event(4.0, "plant", "gear", Bias(Integer(-1)), 9),
                event(5.0, "plant", "label", Override(String("fast".into())), 10),
            ]
        );
        let lines: Vec<usize> = from_yaml.events.iter().map(|e| e.line).collect();
        assert_eq!(lines, [7, 11, 6, 15, 18, 22]);
        let strip_lines = |s: &Scenario| {
            let mut events = s.events.clone();
            events.iter_mut().for_each(|e| e.line = 0);
            (s.description.clone(), s.end, events)
        };
        assert_eq!(strip_lines(&from_json), strip_lines(&from_yaml));
        assert_eq!(from_json.end, Some(6.0));
        assert_eq!(
            from_json.description.as_deref(),
            Some("every action on every type")
        );
        assert_eq!(from_json.location(&from_json.events[0]), "s.json:6");
        assert_eq!(from_yaml.location(&from_yaml.events[0]), "s.yaml:7");
    }

    #[test]
    fn a_scenario_shaped_like_libcosims_tests_reads_alike_in_both_syntaxes() {
        let dir = repo("tests/data/scenarios");
        let from_json = Scenario::read(&dir.join("cosim-cli-defaults.json")).unwrap();
        let from_yaml = Scenario::read(&dir.join("cosim-cli-defaults.yml")).unwrap();
        assert_eq!(from_json.end, Some(10.0));
        let summary = |s: &Scenario| -> Vec<(
            f64,
            std::string::String,
            std::string::String,
            ScenarioAction,
        )> {
            s.events
                .iter()
                .map(|e| {
                    (
                        e.time,
                        e.model.clone(),
                        e.variable.clone(),
                        e.action.clone(),
                    )
                })
                .collect()
        };
        use ScenarioAction::*;
        use ScenarioValue::*;
        let pump = |t, v: &str, a| (t, "pump 1".to_string(), v.to_string(), a);
        assert_eq!(
            summary(&from_json),
            vec![
                pump(1.5, "speedSetpoint", Override(Float(900.0))),
                pump(2.5, "speedSetpoint", Reset),
                pump(4.0, "flowIn", Bias(Float(0.25))),
                pump(6.0, "stage", Override(Integer(3))),
                pump(7.5, "enabled", Override(Boolean(false))),
            ]
        );
        assert_eq!(summary(&from_json), summary(&from_yaml));
        assert_eq!(from_json.description, from_yaml.description);
        let lines = |s: &Scenario| s.events.iter().map(|e| e.line).collect::<Vec<_>>();
        assert_eq!(lines(&from_json), [15, 19, 9, 23, 28]);
        assert_eq!(lines(&from_yaml), [12, 14, 8, 16, 19]);
    }

    #[test]
    fn the_bundled_two_mass_scenarios_agree() {
        let dir = repo("fmus/scenarios");
        let from_json = Scenario::read(&dir.join("two-mass-scenario.json")).unwrap();
        let from_yaml = Scenario::read(&dir.join("two-mass-scenario.yaml")).unwrap();
        assert_eq!(from_json.description, from_yaml.description);
        assert_eq!(from_json.end, Some(0.8));
        let plain = |s: &Scenario| {
            s.events
                .iter()
                .map(|e| {
                    (
                        e.time,
                        e.model.clone(),
                        e.variable.clone(),
                        e.action.clone(),
                    )
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(plain(&from_json), plain(&from_yaml));
        assert_eq!(from_json.events.len(), 3);
    }

    #[test]
    fn missing_keys_name_the_event_and_what_to_write() {
        fails(
            json(r#"{"events": [{"model": "m", "variable": "v", "action": "reset"}]}"#),
            "s.json:1:13:",
            "the event has no time: write its time in seconds, e.g. \"time\": 0.5",
        );
        fails(
            yaml("events:\n  - time: 1\n    variable: v\n    action: reset\n"),
            "s.yaml:2:5:",
            "the event has no model and defaults give none: write e.g. model: \"mass1\"",
        );
        fails(
            yaml("defaults: {model: m}\nevents:\n  - time: 1\n    action: reset\n"),
            "s.yaml:3:5:",
            "has no variable",
        );
        fails(
            json("{\"events\": [\n {\"time\": 1, \"model\": \"m\", \"variable\": \"v\"}]}"),
            "s.json:2:2:",
            "has no action",
        );
        fails(
            json(r#"{"defaults": {"model": "m", "variable": "v"}}"#),
            "s.json:1:1:",
            "the scenario has no events: list them",
        );
    }

    #[test]
    fn actions_and_values_are_checked() {
        fails(
            yaml("events:\n  - {time: 1, model: m, variable: v, action: Override, value: 1}\n"),
            "s.yaml:2:",
            r#"unknown action "Override": write "override", "bias" or "reset""#,
        );
        fails(
            yaml("defaults: {action: set}\nevents: []\n"),
            "s.yaml:1:20:",
            "unknown action \"set\"",
        );
        for action in ["override", "bias"] {
            fails(
                json(&format!(
                    r#"{{"events": [{{"time": 1, "model": "m", "variable": "v", "action": "{action}"}}]}}"#
                )),
                "s.json:1:13:",
                &format!("the {action} has no value: write e.g. \"value\": 1.5"),
            );
        }
        fails(
            yaml("events:\n  - {time: 1, model: m, variable: v, action: bias, value: [1]}\n"),
            "s.yaml:2:",
            "the value of the bias is a list",
        );
        fails(
            yaml("events:\n  - {time: 1, model: m, variable: v, action: override, value: .nan}\n"),
            "s.yaml:2:",
            "write a finite number",
        );
        fails(
            yaml("events:\n  - {time: 1, model: m, variable: v, action: override, value:}\n"),
            "s.yaml:2:",
            "is empty (null)",
        );
        // libcosim reads no value for a reset: accepted (with a warning), as it does.
        let reset = json(
            r#"{"events": [{"time": 1, "model": "m", "variable": "v", "action": "reset", "value": 2}]}"#,
        )
        .unwrap();
        assert_eq!(reset.events[0].action, ScenarioAction::Reset);
    }

    #[test]
    fn times_must_be_finite_non_negative_and_not_after_the_end() {
        let event = |time: &str| {
            format!("events:\n  - {{time: {time}, model: m, variable: v, action: reset}}\n")
        };
        for (time, words) in [
            ("-1", "time -1 is not a time"),
            (".inf", "time inf is not a time"),
            (".nan", "time NaN is not a time"),
            ("1e300", "is not a time"),
            (
                "'1'",
                "time is a string, not a number of seconds: write e.g. time: 0.5",
            ),
            ("true", "time is a boolean"),
        ] {
            fails(yaml(&event(time)), "s.yaml:2:", words);
        }
        fails(
            json(r#"{"events": [], "end": 1e400}"#),
            "s.json:1:",
            "number out of range",
        );
        fails(
            json(r#"{"events": [], "end": -0.5}"#),
            "s.json:1:23:",
            "end -0.5 is not a time",
        );
        fails(
            json("{\"end\": 2, \"events\": [\n  {\"time\": 1, \"model\": \"m\", \"variable\": \"v\", \"action\": \"reset\"},\n  {\"time\": 2.5, \"model\": \"m\", \"variable\": \"v\", \"action\": \"reset\"}]}"),
            "s.json:3:3:",
            "the event at time 2.5 comes after the scenario's end 2",
        );
        // An event exactly at the end still runs.
        assert!(json(r#"{"end": 2, "events": [{"time": 2, "model": "m", "variable": "v", "action": "reset"}]}"#).is_ok());
    }

    #[test]
    fn wrong_shapes_and_unknown_keys_are_refused() {
        fails(
            json("[]"),
            "s.json:1:1:",
            "the scenario is an array, not an object",
        );
        fails(
            yaml("- 1\n"),
            "s.yaml:1:1:",
            "the scenario is a list, not a mapping",
        );
        fails(
            json(r#"{"events": {}}"#),
            "s.json:1:12:",
            "events is an object, not an array of events",
        );
        fails(
            json(r#"{"events": [], "evnts": []}"#),
            "s.json:1:16:",
            r#"unknown key "evnts" in the scenario: write "description", "defaults", "events" or "end""#,
        );
        fails(
            yaml("events:\n  - {time: 1, model: m, variable: v, acton: reset}\n"),
            "s.yaml:2:",
            "unknown key \"acton\" in an event",
        );
        fails(
            yaml("defaults: {value: 1}\nevents: []\n"),
            "s.yaml:1:12:",
            "a value belongs to each event",
        );
        fails(
            json(r#"{"events": [], "events": []}"#),
            "s.json:1:16:",
            "\"events\" is given twice in the scenario (first on line 1): keep one",
        );
        fails(
            json(r#"{"events": [{"time": 1, "model": 7, "variable": "v", "action": "reset"}]}"#),
            "s.json:1:",
            "model is an integer, not a name",
        );
        fails(
            json(r#"{"description": 1, "events": []}"#),
            "s.json:1:17:",
            "description is an integer",
        );
        fails(
            json("{\n  \"events\": [\n"),
            "s.json:3:0:",
            "EOF while parsing",
        );
        fails(yaml("events: [\n"), "s.yaml:", "not valid YAML");
        fails(yaml(""), "s.yaml:1:1:", "the file is empty");
        fails(
            yaml("events: []\n---\nevents: []\n"),
            "s.yaml:3:",
            "a second YAML document",
        );
        fails(
            yaml("events: []\nevents: []\n"),
            "s.yaml:2:",
            "not valid YAML",
        );
    }

    #[test]
    fn yaml_names_keep_their_text() {
        // yaml-cpp hands libcosim every scalar as text: a variable may be called 1 or true.
        let s =
            yaml("events:\n  - {time: 0, model: 0x10, variable: true, action: reset}\n").unwrap();
        assert_eq!(
            (s.events[0].model.as_str(), s.events[0].variable.as_str()),
            ("0x10", "true")
        );
    }

    #[test]
    fn deep_nesting_is_refused_without_overflowing_the_stack() {
        let open = "[".repeat(100_000);
        fails(json(&open), "s.json:1:100000:", "EOF while parsing a list");
        // saphyr's scanner limits flow nesting itself, ahead of the parser's events.
        fails(yaml(&open), "s.yaml:1:256:", "recursion limit exceeded");
        let closed = format!("{open}{}", "]".repeat(100_000));
        fails(json(&closed), "s.json:1:1:", "the scenario is an array");
        fails(yaml(&closed), "s.yaml:1:256:", "recursion limit exceeded");
        let objects = format!("{}1{}", r#"{"a": "#.repeat(100_000), "}".repeat(100_000));
        fails(json(&objects), "s.json:1:2:", "unknown key \"a\"");
        fails(yaml(&objects), "s.yaml:1:1531:", "recursion limit exceeded");
        // Block nesting has no limit in saphyr: the reader's own, before the tree is built.
        let mapping: std::string::String = (0..1000)
            .map(|i| format!("{}a:\n", " ".repeat(i)))
            .collect();
        fails(
            yaml(&mapping),
            "s.yaml:17:17:",
            "nested more than 16 levels",
        );
        let block = "- ".repeat(100_000);
        fails(yaml(&block), "s.yaml:1:", "nested more than 16 levels");
        let value = format!(
            r#"{{"events": [{{"time": 1, "model": "m", "variable": "v", "action": "bias", "value": {}1{}}}]}}"#,
            "[".repeat(100_000),
            "]".repeat(100_000)
        );
        fails(
            json(&value),
            "s.json:1:",
            "the value of the bias is an array",
        );
    }

    #[test]
    fn read_picks_the_syntax_by_extension() {
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, text: &str| {
            let path = dir.path().join(name);
            std::fs::write(&path, text).unwrap();
            path
        };
        let yaml_text = "events:\n  - {time: 1, model: m, variable: v, action: reset}\n";
        assert_eq!(
            Scenario::read(&write("a.YML", yaml_text))
                .unwrap()
                .events
                .len(),
            1
        );
        let err = Scenario::read(&write("a.txt", yaml_text)).unwrap_err();
        assert!(
            err.contains("a.txt:1:1:") && err.contains("*.yaml or *.yml"),
            "{err}"
        );
        let json_text =
            r#"{"events": [{"time": 1, "model": "m", "variable": "v", "action": "reset"}]}"#;
        assert_eq!(
            Scenario::read(&write("a.scenario", json_text))
                .unwrap()
                .events
                .len(),
            1
        );
        let missing = Scenario::read(&dir.path().join("none.json")).unwrap_err();
        assert!(
            missing.contains("none.json: cannot read the scenario"),
            "{missing}"
        );
    }
}
