//! The CI surfaces of `cosimo check`: the HTML report (opened in headless Chromium, and its
//! files scanned for anything a strict content security policy forbids), JUnit with unique
//! test names and plot attachments, and the GitHub job summary.

mod common;

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::skip::Skip;
use common::{cosimo, fmu};

fn show(out: &Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The Dahlquist solution exp(-t) on 0..10 s in 100 steps, scaled by `gain`.
fn dahlquist_csv(gain: f64) -> String {
    let mut text = String::from("\"time\",\"x\"\n");
    for k in 0..=100 {
        let t = k as f64 / 10.0;
        text.push_str(&format!("{t},{}\n", gain * (-t).exp()));
    }
    text
}

/// A case folder `dir/name` with a check.json naming `model` and a reference.
fn case(dir: &Path, name: &str, model: &Path, reference: &str) {
    let folder = dir.join(name);
    std::fs::create_dir_all(&folder).unwrap();
    let model = serde_json::to_string(&model.display().to_string()).unwrap();
    std::fs::write(
        folder.join("check.json"),
        format!("{{ \"model\": {model} }}"),
    )
    .unwrap();
    std::fs::write(folder.join("reference.csv"), reference).unwrap();
}

/// `dir/cases` with a failing case (`bad`: the reference 10 % too high, so x is off by 0.1 at
/// t = 0), a passing one (`good`) and one that cannot load (`broken`: a reference without
/// rows).
fn cases(dir: &Path) -> PathBuf {
    let cases = dir.join("cases");
    case(&cases, "bad", &fmu("Dahlquist", 2), &dahlquist_csv(1.1));
    case(&cases, "good", &fmu("Dahlquist", 3), &dahlquist_csv(1.0));
    case(&cases, "broken", &fmu("Dahlquist", 2), "time,x\n");
    cases
}

/// `cosimo check CASES --html DIR` (exit code 2: a case did not run).
fn html_report(dir: &Path) -> PathBuf {
    let report = dir.join("report");
    let out = cosimo([
        "check".as_ref(),
        cases(dir).as_os_str(),
        "--html".as_ref(),
        report.as_os_str(),
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));
    report
}

/// Every file under `dir`.
fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(files(&path));
        } else {
            out.push(path);
        }
    }
    out.sort();
    out
}

/// The (name, value) attributes of every tag of an HTML page, with the tag's name.
fn html_tags(text: &str) -> Vec<(String, Vec<(String, String)>)> {
    let mut tags = Vec::new();
    let mut rest = text;
    while let Some(open) = rest.find('<') {
        rest = &rest[open + 1..];
        if rest.starts_with('!') || rest.starts_with('/') {
            continue;
        }
        let mut chars = rest.char_indices().peekable();
        let mut name = String::new();
        while let Some(&(_, c)) = chars.peek() {
            if c.is_whitespace() || c == '>' || c == '/' {
                break;
            }
            name.push(c.to_ascii_lowercase());
            chars.next();
        }
        let mut attributes = Vec::new();
        let mut end = rest.len();
        loop {
            while chars
                .peek()
                .is_some_and(|&(_, c)| c.is_whitespace() || c == '/')
            {
                chars.next();
            }
            let Some(&(i, c)) = chars.peek() else { break };
            if c == '>' {
                end = i + 1;
                break;
            }
            let mut key = String::new();
            while let Some(&(_, c)) = chars.peek() {
                if c.is_whitespace() || c == '=' || c == '>' {
                    break;
                }
                key.push(c.to_ascii_lowercase());
                chars.next();
            }
            let mut value = String::new();
            if chars.peek().is_some_and(|&(_, c)| c == '=') {
                chars.next();
                match chars.peek().map(|&(_, c)| c) {
                    Some(q @ ('"' | '\'')) => {
                        chars.next();
                        for (_, c) in chars.by_ref() {
                            if c == q {
                                break;
                            }
                            value.push(c);
                        }
                    }
                    _ => {
                        while let Some(&(_, c)) = chars.peek() {
                            if c.is_whitespace() || c == '>' {
                                break;
                            }
                            value.push(c);
                            chars.next();
                        }
                    }
                }
            }
            attributes.push((key, value));
        }
        tags.push((name, attributes));
        rest = &rest[end.min(rest.len())..];
    }
    tags
}

/// What a strict policy forbids in a report's files, and links that lead nowhere: the
/// problems found in `report`.
fn policy_problems(report: &Path) -> Vec<String> {
    let policy = "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; \
                  img-src 'self'; style-src 'self'\">";
    let mut problems = Vec::new();
    for file in files(report) {
        let shown = file.strip_prefix(report).unwrap().display().to_string();
        let mut problem = |what: String| problems.push(format!("{shown}: {what}"));
        let name = file.file_name().unwrap().to_string_lossy().into_owned();
        let text = std::fs::read_to_string(&file).unwrap();
        let lower = text.to_lowercase();
        for forbidden in [
            "data:",
            "javascript:",
            "http://",
            "https://",
            "@import",
            "url(",
        ] {
            // The SVG namespace is a name, not an address.
            let count = lower.matches(forbidden).count()
                - lower
                    .matches("xmlns=\"http://www.w3.org/2000/svg\"")
                    .count()
                    * usize::from(forbidden == "http://");
            if count > 0 {
                problem(format!("holds {forbidden}"));
            }
        }
        match file.extension().and_then(|e| e.to_str()) {
            Some("html") => {
                if !text.contains(policy) {
                    problem("does not declare the content security policy".into());
                }
                for (tag, attributes) in html_tags(&text) {
                    if [
                        "script", "style", "iframe", "object", "embed", "base", "form",
                    ]
                    .contains(&tag.as_str())
                    {
                        problem(format!("has a <{tag}> element"));
                    }
                    for (key, value) in attributes {
                        if key == "style" || key.starts_with("on") || key == "srcset" {
                            problem(format!("<{tag}> has a {key} attribute"));
                        }
                        if key == "src" || key == "href" {
                            let target = value.split('#').next().unwrap_or("");
                            if target.contains(':') || target.starts_with('/') {
                                problem(format!("<{tag} {key}=\"{value}\"> leaves the folder"));
                            } else if !file.parent().unwrap().join(target).is_file() {
                                problem(format!("<{tag} {key}=\"{value}\"> leads nowhere"));
                            }
                        }
                    }
                }
            }
            Some("svg") => {
                let mut reader = quick_xml::Reader::from_str(&text);
                loop {
                    use quick_xml::events::Event;
                    match reader.read_event() {
                        Ok(Event::Start(e) | Event::Empty(e)) => {
                            let tag = String::from_utf8_lossy(e.name().as_ref()).to_lowercase();
                            if ["script", "style", "foreignobject", "image", "use", "a"]
                                .contains(&tag.as_str())
                            {
                                problem(format!("has a <{tag}> element"));
                            }
                            for attribute in e.attributes() {
                                let attribute = attribute.unwrap();
                                let key =
                                    String::from_utf8_lossy(attribute.key.as_ref()).to_lowercase();
                                if key == "style" || key.starts_with("on") || key.ends_with("href")
                                {
                                    problem(format!("<{tag}> has a {key} attribute"));
                                }
                            }
                        }
                        Ok(Event::Eof) => break,
                        Err(e) => {
                            problem(format!("is not well-formed XML: {e}"));
                            break;
                        }
                        _ => {}
                    }
                }
            }
            Some("css") => {}
            _ if name == ".cosimo-report" => {}
            _ => problem("is not a page, an image or the stylesheet".into()),
        }
    }
    problems
}

#[test]
fn the_html_report_holds_no_inline_script_style_data_uri_or_outside_address() {
    let dir = tempfile::tempdir().unwrap();
    let report = html_report(dir.path());
    let problems = policy_problems(&report);
    assert!(problems.is_empty(), "{problems:#?}");

    // The scan finds what it looks for: a page with an inline style and an image from the web.
    let spoiled = dir.path().join("spoiled");
    std::fs::create_dir(&spoiled).unwrap();
    std::fs::write(
        spoiled.join("page.html"),
        "<p style=\"color: red\"><img src=\"https://example.com/a.png\"></p>",
    )
    .unwrap();
    std::fs::write(spoiled.join("a.svg"), "<svg><script>x()</script></svg>").unwrap();
    let problems = policy_problems(&spoiled);
    for expected in [
        "page.html: holds https://",
        "page.html: does not declare",
        "page.html: <p> has a style attribute",
        "leaves the folder",
        "a.svg: has a <script> element",
    ] {
        assert!(
            problems.iter().any(|p| p.contains(expected)),
            "{expected}: {problems:#?}"
        );
    }

    // The index: the case that did not run first, then the failing one, then the passing one,
    // with their phases; the failing signal's page and picture exist.
    let index = std::fs::read_to_string(report.join("index.html")).unwrap();
    let at = |name: &str| {
        index
            .find(&format!(">{name}</a>"))
            .unwrap_or_else(|| panic!("{name} is not in the index:\n{index}"))
    };
    assert!(
        at("broken") < at("bad") && at("bad") < at("good"),
        "{index}"
    );
    let row = |name: &str| {
        let start = at(name);
        &index[start..start + index[start..].find("</tr>").unwrap()]
    };
    // Phases: the broken case stopped loading; the bad one failed comparing.
    assert_eq!(
        row("broken").matches("not run").count(),
        2,
        "{}",
        row("broken")
    );
    assert!(
        row("bad").contains("<td class=\"failed\">\u{2717} "),
        "{}",
        row("bad")
    );
    // Share of points inside the tube: all for the good case, not all for the bad one; the
    // largest deviation of the bad one (0.1) at t = 0.
    assert!(row("good").contains(">100 %<"), "{}", row("good"));
    assert!(
        !row("bad").contains("100 %") && row("bad").contains(" %<"),
        "{}",
        row("bad")
    );
    assert!(
        row("bad").contains(">0.1</td><td class=\"number\">0</td>"),
        "{}",
        row("bad")
    );
    let svg = std::fs::read_to_string(report.join("bad").join("x.svg")).unwrap();
    assert!(svg.contains("#d62728") && svg.contains("#1f77b4"), "{svg}");
    assert!(report.join("bad").join("x.html").is_file());
    assert!(!report.join("good").join("x.html").exists());
}

/// Chromium's program here, if there is one.
fn chromium() -> Option<&'static str> {
    ["chromium", "chromium-browser"]
        .into_iter()
        .find(|program| {
            Command::new(program)
                .arg("--version")
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success())
        })
}

/// Open `page` in headless Chromium with `what` (`--dump-dom` or `--screenshot=...`): its
/// standard output and its log (console messages included).
fn headless(program: &str, work: &Path, page: &Path, what: &str) -> (String, String) {
    let stdout_path = work.join("chromium.out");
    let stderr_path = work.join("chromium.err");
    let mut child = Command::new(program)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-extensions",
            "--enable-logging=stderr",
            "--v=0",
            "--force-device-scale-factor=1",
            "--window-size=1200,1000",
        ])
        .arg(format!(
            "--user-data-dir={}",
            work.join("profile").display()
        ))
        .arg(what)
        .arg(format!("file://{}", page.display()))
        .stdout(std::fs::File::create(&stdout_path).unwrap())
        .stderr(std::fs::File::create(&stderr_path).unwrap())
        .spawn()
        .unwrap_or_else(|e| panic!("{program}: {e}"));
    let started = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        if started.elapsed() > Duration::from_secs(120) {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "{program} did not finish {} within 2 minutes",
                page.display()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    (
        std::fs::read_to_string(stdout_path).unwrap_or_default(),
        std::fs::read_to_string(stderr_path).unwrap_or_default(),
    )
}

/// Pixels of a PNG within 12 of `color` in each channel.
fn pixels_near(png_file: &Path, color: [u8; 3]) -> usize {
    let decoder = png::Decoder::new(std::fs::File::open(png_file).unwrap());
    let mut reader = decoder.read_info().unwrap();
    let mut buffer = vec![0; reader.output_buffer_size()];
    let frame = reader.next_frame(&mut buffer).unwrap();
    let channels = frame.color_type.samples();
    assert!(channels >= 3, "{:?}", frame.color_type);
    buffer[..frame.buffer_size()]
        .chunks(channels)
        .filter(|p| (0..3).all(|i| p[i].abs_diff(color[i]) <= 12))
        .count()
}

#[test]
fn the_html_report_of_a_failing_check_renders_in_headless_chromium_without_console_errors() {
    let Some(program) = chromium() else {
        common::skip::skipped(
            Skip::NoChromium,
            "no chromium to open the HTML report in (Debian: apt-get install chromium)",
        );
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let report = html_report(dir.path());
    let work = dir.path().join("chromium");
    std::fs::create_dir(&work).unwrap();
    let pages = [
        report.join("index.html"),
        report.join("bad").join("index.html"),
        report.join("bad").join("x.html"),
        report.join("broken").join("index.html"),
    ];
    for page in &pages {
        let (dom, log) = headless(program, &work, page, "--dump-dom");
        // Every console message (a policy violation, a blocked request, a script error) is
        // one line of the log; a page that loads cleanly writes none.
        let console: Vec<&str> = log.lines().filter(|l| l.contains(":CONSOLE")).collect();
        assert!(console.is_empty(), "{}: {console:#?}", page.display());
        assert!(!log.contains("Content Security Policy"), "{log}");
        assert!(
            dom.contains("</html>"),
            "{}: no page:\n{dom}\n{log}",
            page.display()
        );
        assert!(dom.contains("cosimo"), "{dom}");
    }

    // The picture and the stylesheet load under the policy: the curves' colours and the
    // failed cell's background are on screen.
    let shot = work.join("signal.png");
    headless(
        program,
        &work,
        &pages[2],
        &format!("--screenshot={}", shot.display()),
    );
    let reference = pixels_near(&shot, [0x1f, 0x77, 0xb4]);
    let result = pixels_near(&shot, [0xd6, 0x27, 0x28]);
    assert!(
        reference > 200 && result > 200,
        "reference {reference}, result {result} pixels"
    );
    let shot = work.join("index.png");
    headless(
        program,
        &work,
        &pages[0],
        &format!("--screenshot={}", shot.display()),
    );
    let failed_cells = pixels_near(&shot, [0xfd, 0xe2, 0xe1]);
    assert!(failed_cells > 500, "{failed_cells} pixels of failed cells");
}

#[test]
fn an_html_folder_that_is_not_a_report_is_refused_and_a_previous_report_is_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let cases = cases(dir.path());
    let taken = dir.path().join("taken");
    std::fs::create_dir(&taken).unwrap();
    std::fs::write(taken.join("notes.txt"), "mine").unwrap();
    let out = cosimo([
        "check".as_ref(),
        cases.join("good").as_os_str(),
        "--html".as_ref(),
        taken.as_os_str(),
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains(&taken.display().to_string()), "{stderr}");
    assert!(stderr.contains("not a cosimo report"), "{stderr}");
    assert!(
        !String::from_utf8_lossy(&out.stdout).contains("PASS"),
        "ran anyway"
    );
    assert_eq!(
        std::fs::read_to_string(taken.join("notes.txt")).unwrap(),
        "mine"
    );
    assert!(!taken.join("index.html").exists());

    // A report, then one of another set of cases into the same folder: the first report's
    // case folders go, a file the user put there stays.
    let report = html_report(dir.path());
    assert!(report.join("bad").is_dir());
    std::fs::write(report.join("keep.txt"), "mine").unwrap();
    let out = cosimo([
        "check".as_ref(),
        cases.join("good").as_os_str(),
        "--html".as_ref(),
        report.as_os_str(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert!(!report.join("bad").exists());
    assert!(report.join("keep.txt").is_file());
    let index = std::fs::read_to_string(report.join("index.html")).unwrap();
    assert!(
        index.contains(">good</a>") && !index.contains(">bad</a>"),
        "{index}"
    );
}

/// Every testcase of a JUnit file: (classname, name, failure message, system-out).
fn junit_tests(xml: &str) -> Vec<(String, String, Option<String>, String)> {
    use quick_xml::events::Event;
    let attribute = |e: &quick_xml::events::BytesStart, key: &str| {
        e.try_get_attribute(key)
            .unwrap()
            .map(|a| a.unescape_value().unwrap().into_owned())
    };
    let mut reader = quick_xml::Reader::from_str(xml);
    let mut tests = Vec::new();
    let mut in_out = false;
    loop {
        match reader.read_event().unwrap_or_else(|e| panic!("{e}\n{xml}")) {
            Event::Start(e) | Event::Empty(e) => match e.name().as_ref() {
                b"testcase" => tests.push((
                    attribute(&e, "classname").unwrap_or_default(),
                    attribute(&e, "name").unwrap_or_default(),
                    None,
                    String::new(),
                )),
                b"failure" => {
                    if let Some(test) = tests.last_mut() {
                        test.2 = attribute(&e, "message");
                    }
                }
                b"system-out" => in_out = true,
                _ => {}
            },
            Event::End(e) if e.name().as_ref() == b"system-out" => in_out = false,
            Event::Text(text) if in_out => {
                if let Some(test) = tests.last_mut() {
                    test.3.push_str(&text.unescape().unwrap());
                }
            }
            Event::Eof => break,
            _ => {}
        }
    }
    tests
}

#[test]
fn junit_names_every_test_once_and_attaches_the_plots_of_failing_signals() {
    // Two folders of cases, each with a case "bad": two suites of one name.
    let dir = tempfile::tempdir().unwrap();
    let first = dir.path().join("first");
    let second = dir.path().join("second");
    case(&first, "bad", &fmu("Dahlquist", 2), &dahlquist_csv(1.1));
    case(&second, "bad", &fmu("Dahlquist", 3), &dahlquist_csv(1.1));
    let junit = dir.path().join("junit.xml");
    // Relative paths, as a CI job gives them: the attachments are relative to the job's folder.
    let out = Command::new(env!("CARGO_BIN_EXE_cosimo"))
        .current_dir(dir.path())
        .args([
            "check",
            "first",
            "second",
            "--junit",
            "junit.xml",
            "--html",
            "report",
            "--plot",
            "plots",
        ])
        .env_remove("COSIMO_LOG")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", show(&out));
    let xml = std::fs::read_to_string(&junit).unwrap();
    let tests = junit_tests(&xml);
    assert_eq!(tests.len(), 4, "{xml}");
    let unique: HashSet<(&str, &str)> =
        tests.iter().map(|t| (t.0.as_str(), t.1.as_str())).collect();
    assert_eq!(unique.len(), tests.len(), "{xml}");

    let failing: Vec<_> = tests.iter().filter(|t| t.2.is_some()).collect();
    assert_eq!(failing.len(), 2, "{xml}");
    let mut attached = HashSet::new();
    for (class, name, message, system_out) in failing {
        assert_eq!(name, "x");
        let message = message.as_deref().unwrap();
        assert!(
            message.starts_with("max deviation 0.1 at t = 0 "),
            "{class}: {message}"
        );
        assert!(
            message.contains("points outside the tolerance"),
            "{message}"
        );
        let paths: Vec<&str> = system_out
            .lines()
            .filter_map(|l| l.strip_prefix("[[ATTACHMENT|")?.strip_suffix("]]"))
            .collect();
        assert_eq!(paths.len(), 2, "{class}: {system_out}");
        assert!(
            paths[0].ends_with(".png") && paths[1].ends_with(".svg"),
            "{paths:?}"
        );
        for path in paths {
            assert!(Path::new(path).is_relative(), "{path}");
            assert!(dir.path().join(path).is_file(), "{path} does not exist");
            assert!(attached.insert(path.to_string()), "{path} attached twice");
        }
    }
}

#[test]
fn the_github_summary_appends_a_table_of_the_worst_signals() {
    let dir = tempfile::tempdir().unwrap();
    let cases = cases(dir.path());
    let summary = dir.path().join("summary.md");
    std::fs::write(&summary, "earlier step\n").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_cosimo"))
        .args([
            "check".as_ref(),
            cases.as_os_str(),
            "--github-summary".as_ref(),
        ])
        .env("GITHUB_STEP_SUMMARY", &summary)
        .env_remove("COSIMO_LOG")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));
    let text = std::fs::read_to_string(&summary).unwrap();
    assert!(
        text.starts_with("earlier step\n### cosimo check: failed"),
        "{text}"
    );
    assert!(
        text.contains("3 cases: 1 passed, 1 failed, 1 error"),
        "{text}"
    );
    let rows: Vec<&str> = text.lines().filter(|l| l.starts_with("| ")).collect();
    assert_eq!(rows[0], "| Case | Signal | Status | Deviation |", "{text}");
    // The case that did not run, then the failing signal, then the passing case's closest.
    assert!(rows[1].starts_with("| broken | – | error | "), "{text}");
    assert!(
        rows[2].starts_with("| bad | x | failed | max deviation 0.1 at t = 0 "),
        "{text}"
    );
    assert!(rows[3].starts_with("| good | x | passed | "), "{text}");
    assert_eq!(rows.len(), 4, "{text}");

    // Without the variable: refused before anything runs.
    let report = dir.path().join("report");
    let out = Command::new(env!("CARGO_BIN_EXE_cosimo"))
        .args([
            "check".as_ref(),
            cases.as_os_str(),
            "--github-summary".as_ref(),
            "--html".as_ref(),
            report.as_os_str(),
        ])
        .env_remove("GITHUB_STEP_SUMMARY")
        .env_remove("COSIMO_LOG")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("$GITHUB_STEP_SUMMARY"), "{stderr}");
    assert!(!report.exists(), "ran anyway");
}
