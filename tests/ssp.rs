//! SSP import through the real importer: packages, nested systems, parameters, transformations,
//! units, signal dictionaries, vendor files, bad inputs; imported systems run.

mod common;

use std::path::{Path, PathBuf};

use common::systems::{column, run};
use cosimo::system::ssp::{Imported, SspPackage};
use cosimo::system::{config, Connection, Endpoint, System};

const NS: &str = r#"xmlns:ssd="http://ssp-standard.org/SSP1/SystemStructureDescription"
    xmlns:ssc="http://ssp-standard.org/SSP1/SystemStructureCommon"
    xmlns:ssv="http://ssp-standard.org/SSP1/SystemStructureParameterValues"
    xmlns:ssm="http://ssp-standard.org/SSP1/SystemStructureParameterMapping"
    xmlns:ssb="http://ssp-standard.org/SSP1/SystemStructureSignalDictionary"
    xmlns:cosimo="urn:cosimo:ssp""#;

/// Replace `@Model-fmiN@` with the absolute path of that packed FMU.
fn with_fmus(text: &str) -> String {
    let mut out = text.to_string();
    for model in ["Oscillator", "Feedthrough", "CouplingSpring", "Dahlquist"] {
        for version in [2, 3] {
            let key = format!("@{model}-fmi{version}@");
            if out.contains(&key) {
                let path = common::fmu(model, version);
                out = out.replace(&key, &path.display().to_string());
            }
        }
    }
    out
}

/// An unpacked SSP folder in a temporary folder with `files` (name, text; FMU placeholders
/// replaced).
fn package(files: &[(&str, &str)]) -> (tempfile::TempDir, PathBuf) {
    let dir = common::temp_dir();
    let root = dir.path().join("model.ssp");
    for (name, text) in files {
        let path = root.join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, with_fmus(text)).unwrap();
    }
    (dir, root)
}

/// An SSD document around a root system's body.
fn ssd(body: &str) -> String {
    format!(
        r#"<?xml version="1.0" encoding="UTF-8"?>
<ssd:SystemStructureDescription version="1.0" name="test" {NS}>
{body}
</ssd:SystemStructureDescription>
"#
    )
}

fn import(files: &[(&str, &str)]) -> Imported {
    let (_dir, root) = package(files);
    let package = SspPackage::open(&root).unwrap_or_else(|e| panic!("open: {e}"));
    package
        .import(None)
        .unwrap_or_else(|e| panic!("import: {e}"))
}

fn import_error(files: &[(&str, &str)]) -> String {
    let (dir, root) = package(files);
    let message = match SspPackage::open(&root).and_then(|p| p.import(None)) {
        Ok(_) => panic!("the import succeeded"),
        Err(e) => e.to_string(),
    };
    message.replace(&dir.path().display().to_string(), "TMP")
}

fn example(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fmus")
        .join(name)
}

/// The same system in a comparable form: FMU paths canonical.
fn canonical(mut system: System) -> System {
    for c in &mut system.components {
        c.fmu = c
            .fmu
            .canonicalize()
            .unwrap_or_else(|e| panic!("{}: {e}", c.fmu.display()));
    }
    system
}

#[test]
fn the_examples_ssp_twins_equal_their_json_twins_bit_for_bit() {
    common::fmu("Oscillator", 2);
    for (ssp, json, record) in [
        (
            "two-mass-force-force.ssp",
            "two-mass-force-force.json",
            &["mass1.x", "mass2.x", "spring.F1"][..],
        ),
        (
            "rigid-link.ssp",
            "rigid-link.json",
            &["mass1.x", "mass2.x"][..],
        ),
        (
            "two-mass-implicit-adaptive.ssp",
            "two-mass-implicit-adaptive.json",
            &["mass1.x", "mass2.x", "spring.F1"][..],
        ),
        (
            "two-mass-extended.ssp",
            "two-mass-extended.json",
            &["mass1.x", "mass2.x", "spring.F1"][..],
        ),
        (
            "conformance-chain.ssp",
            "conformance-chain.json",
            &[
                "osc.x",
                "last.Float32_continuous_output",
                "last.Int64_output",
            ][..],
        ),
    ] {
        let package = SspPackage::open(&example(ssp)).unwrap();
        assert_eq!(package.ssd_files(), vec!["SystemStructure.ssd"]);
        let imported = package
            .import(None)
            .unwrap_or_else(|e| panic!("{ssp}: {e}"));
        assert!(
            imported.warnings.is_empty(),
            "{ssp}: {:?}",
            imported.warnings
        );
        let from_ssp = canonical(imported.system);
        let from_json = canonical(config::from_file(&example(json)).unwrap());
        assert_eq!(from_ssp.connections, from_json.connections, "{ssp}");
        assert_eq!(from_ssp.experiment, from_json.experiment, "{ssp}");
        for (a, b) in from_ssp.components.iter().zip(&from_json.components) {
            assert_eq!(
                (&a.name, &a.fmu, a.sub_steps),
                (&b.name, &b.fmu, b.sub_steps)
            );
            let names = |c: &cosimo::system::Component| {
                c.start_values
                    .iter()
                    .map(|(n, _)| n.clone())
                    .collect::<Vec<_>>()
            };
            assert_eq!(names(a), names(b), "{ssp}: {}", a.name);
        }
        let (ta, _) = run(&from_ssp, record);
        let (tb, _) = run(&from_json, record);
        assert_eq!(ta.columns(), tb.columns());
        for name in record {
            let (a, b) = (column(&ta, name), column(&tb, name));
            assert_eq!(a.len(), b.len());
            for (x, y) in a.iter().zip(b) {
                assert_eq!(x.to_bits(), y.to_bits(), "{ssp}: {name}");
            }
        }
    }
}

/// A component element: `name`, FMU placeholder, connectors `(name, kind, type)`, extra body.
fn component(name: &str, fmu: &str, connectors: &[(&str, &str, &str)], extra: &str) -> String {
    let connectors: String = connectors
        .iter()
        .map(|(n, k, t)| format!("<ssd:Connector name=\"{n}\" kind=\"{k}\">{t}</ssd:Connector>\n"))
        .collect();
    format!(
        "<ssd:Component name=\"{name}\" type=\"application/x-fmu-sharedlibrary\" source=\"{fmu}\">\n\
         <ssd:Connectors>{connectors}</ssd:Connectors>{extra}</ssd:Component>\n"
    )
}

fn connection(a: &str, ac: &str, b: &str, bc: &str) -> String {
    let start = if a.is_empty() {
        String::new()
    } else {
        format!("startElement=\"{a}\" ")
    };
    let end = if b.is_empty() {
        String::new()
    } else {
        format!("endElement=\"{b}\" ")
    };
    format!("<ssd:Connection {start}startConnector=\"{ac}\" {end}endConnector=\"{bc}\"/>\n")
}

const REAL: &str = "<ssc:Real/>";

fn parameters(values: &[(&str, &str)]) -> String {
    let list: String = values
        .iter()
        .map(|(n, v)| {
            format!("<ssv:Parameter name=\"{n}\"><ssv:Real value=\"{v}\"/></ssv:Parameter>")
        })
        .collect();
    format!(
        "<ssd:ParameterBindings><ssd:ParameterBinding><ssd:ParameterValues>\
         <ssv:ParameterSet version=\"1.0\" name=\"p\"><ssv:Parameters>{list}</ssv:Parameters>\
         </ssv:ParameterSet></ssd:ParameterValues></ssd:ParameterBinding></ssd:ParameterBindings>"
    )
}

const EXPERIMENT: &str = r#"<ssd:DefaultExperiment startTime="0" stopTime="0.5">
  <ssc:Annotations><ssc:Annotation type="org.cosimo.experiment">
    <cosimo:Experiment stepSize="1e-3" outputInterval="0.05" algorithm="jacobi"/>
  </ssc:Annotation></ssc:Annotations>
</ssd:DefaultExperiment>"#;

fn oscillator(name: &str, version: u8, values: &[(&str, &str)]) -> String {
    component(
        name,
        &format!("@Oscillator-fmi{version}@"),
        &[
            ("F", "input", REAL),
            ("x", "output", REAL),
            ("v", "output", REAL),
        ],
        &parameters(values),
    )
}

fn spring() -> String {
    component(
        "spring",
        "@CouplingSpring-fmi2@",
        &[
            ("x1", "input", REAL),
            ("v1", "input", REAL),
            ("x2", "input", REAL),
            ("v2", "input", REAL),
            ("F1", "output", REAL),
            ("F2", "output", REAL),
        ],
        &parameters(&[("c1", "1000"), ("d1", "10"), ("c3", "0"), ("d3", "0")]),
    )
}

const MASS1: &[(&str, &str)] = &[
    ("m", "1"),
    ("c", "1000"),
    ("d", "10"),
    ("x0", "0.1"),
    ("v0", "0"),
];
const MASS2: &[(&str, &str)] = &[
    ("m", "1"),
    ("c", "1000"),
    ("d", "10"),
    ("x0", "0"),
    ("v0", "0"),
];

/// The flat two-mass system: mass1, spring, mass2.
fn flat_two_mass() -> String {
    let connections = [
        connection("mass1", "x", "spring", "x1"),
        connection("mass1", "v", "spring", "v1"),
        connection("mass2", "x", "spring", "x2"),
        connection("mass2", "v", "spring", "v2"),
        connection("spring", "F1", "mass1", "F"),
        connection("spring", "F2", "mass2", "F"),
    ]
    .concat();
    ssd(&format!(
        "<ssd:System name=\"root\"><ssd:Elements>{}{}{}</ssd:Elements>\
         <ssd:Connections>{connections}</ssd:Connections></ssd:System>{EXPERIMENT}",
        oscillator("mass1", 2, MASS1),
        spring(),
        oscillator("mass2", 3, MASS2)
    ))
}

#[test]
fn a_flat_system_imports_and_runs() {
    let imported = import(&[("SystemStructure.ssd", &flat_two_mass())]);
    assert_eq!(imported.name, "test");
    assert!(imported.warnings.is_empty(), "{:?}", imported.warnings);
    let s = &imported.system;
    let names: Vec<&str> = s.components.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["mass1", "spring", "mass2"]);
    assert_eq!(s.connections.len(), 6);
    assert_eq!(s.experiment.stop, 0.5);
    assert_eq!(s.experiment.step, 1e-3);
    let (table, _) = run(s, &["mass1.x"]);
    let x = column(&table, "mass1.x");
    assert_eq!(x.len(), 11);
    assert_eq!(x[0], 0.1);
}

#[test]
fn a_zipped_ssp_with_fmus_in_resources_imports_and_runs() {
    let dir = common::temp_dir();
    let path = dir.path().join("zipped.ssp");
    let text = flat_two_mass()
        .replace("@Oscillator-fmi2@", "resources/Oscillator-fmi2.fmu")
        .replace("@Oscillator-fmi3@", "file:resources/Oscillator-fmi3.fmu")
        .replace(
            "@CouplingSpring-fmi2@",
            "./resources/CouplingSpring-fmi2.fmu",
        );
    {
        let file = std::fs::File::create(&path).unwrap();
        let mut zip = zip::ZipWriter::new(file);
        let options = zip::write::SimpleFileOptions::default();
        zip.start_file("SystemStructure.ssd", options).unwrap();
        std::io::Write::write_all(&mut zip, text.as_bytes()).unwrap();
        for (model, version) in [("Oscillator", 2), ("Oscillator", 3), ("CouplingSpring", 2)] {
            zip.start_file(format!("resources/{model}-fmi{version}.fmu"), options)
                .unwrap();
            let bytes = std::fs::read(common::fmu(model, version)).unwrap();
            std::io::Write::write_all(&mut zip, &bytes).unwrap();
        }
        zip.finish().unwrap();
    }
    let package = SspPackage::open(&path).unwrap();
    let imported = package.import(None).unwrap();
    for c in &imported.system.components {
        assert!(c.fmu.starts_with(package.root()), "{}", c.fmu.display());
    }
    let (table, _) = run(&imported.system, &["mass2.x"]);
    assert_eq!(column(&table, "mass2.x").len(), 11);
}

/// The two-mass system with mass 2 two levels down (`outer/inner/mass2`) and the spring one
/// level down (`outer/spring`), every connection traced through system connectors.
fn nested_two_mass() -> String {
    let inner = format!(
        "<ssd:System name=\"inner\"><ssd:Connectors>\
           <ssd:Connector name=\"F\" kind=\"input\"><ssc:Real/></ssd:Connector>\
           <ssd:Connector name=\"x\" kind=\"output\"><ssc:Real/></ssd:Connector>\
           <ssd:Connector name=\"v\" kind=\"output\"><ssc:Real/></ssd:Connector>\
         </ssd:Connectors><ssd:Elements>{}</ssd:Elements><ssd:Connections>{}{}{}</ssd:Connections></ssd:System>",
        oscillator("mass2", 3, MASS2),
        connection("", "F", "mass2", "F"),
        connection("mass2", "x", "", "x"),
        connection("mass2", "v", "", "v"),
    );
    let outer = format!(
        "<ssd:System name=\"outer\"><ssd:Connectors>\
           <ssd:Connector name=\"x1\" kind=\"input\"><ssc:Real/></ssd:Connector>\
           <ssd:Connector name=\"v1\" kind=\"input\"><ssc:Real/></ssd:Connector>\
           <ssd:Connector name=\"F1\" kind=\"output\"><ssc:Real/></ssd:Connector>\
         </ssd:Connectors><ssd:Elements>{}{inner}</ssd:Elements><ssd:Connections>{}</ssd:Connections></ssd:System>",
        spring(),
        [
            connection("", "x1", "spring", "x1"),
            connection("", "v1", "spring", "v1"),
            connection("spring", "F1", "", "F1"),
            connection("inner", "x", "spring", "x2"),
            connection("inner", "v", "spring", "v2"),
            connection("spring", "F2", "inner", "F"),
        ]
        .concat()
    );
    ssd(&format!(
        "<ssd:System name=\"root\"><ssd:Elements>{}{outer}</ssd:Elements><ssd:Connections>{}</ssd:Connections></ssd:System>{EXPERIMENT}",
        oscillator("mass1", 2, MASS1),
        [
            connection("mass1", "x", "outer", "x1"),
            connection("mass1", "v", "outer", "v1"),
            connection("outer", "F1", "mass1", "F"),
        ]
        .concat()
    ))
}

#[test]
fn a_nested_system_two_levels_deep_runs_like_the_flat_one() {
    let nested = import(&[("SystemStructure.ssd", &nested_two_mass())]);
    assert!(nested.warnings.is_empty(), "{:?}", nested.warnings);
    let s = &nested.system;
    let names: Vec<&str> = s.components.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["mass1", "outer/spring", "outer/inner/mass2"]);
    let mut links: Vec<String> = s
        .connections
        .iter()
        .map(|c| format!("{} -> {}", c.from, c.to))
        .collect();
    links.sort();
    assert_eq!(
        links,
        [
            "mass1.v -> outer/spring.v1",
            "mass1.x -> outer/spring.x1",
            "outer/inner/mass2.v -> outer/spring.v2",
            "outer/inner/mass2.x -> outer/spring.x2",
            "outer/spring.F1 -> mass1.F",
            "outer/spring.F2 -> outer/inner/mass2.F",
        ]
    );
    let flat = import(&[("SystemStructure.ssd", &flat_two_mass())]);
    let (a, _) = run(s, &["mass1.x", "outer/inner/mass2.x"]);
    let (b, _) = run(&flat.system, &["mass1.x", "mass2.x"]);
    for (x, y) in [("mass1.x", "mass1.x"), ("outer/inner/mass2.x", "mass2.x")] {
        let (p, q) = (column(&a, x), column(&b, y));
        assert_eq!(p.len(), q.len());
        assert!(
            p.iter().zip(q).all(|(u, v)| u.to_bits() == v.to_bits()),
            "{x}"
        );
    }
}

fn start_values(imported: &Imported, component: &str) -> Vec<(String, String)> {
    imported
        .system
        .component(component)
        .unwrap_or_else(|| panic!("no component {component}"))
        .start_values
        .clone()
}

const PARAMS_SSV: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<ssv:ParameterSet version="1.0" name="component-file"
    xmlns:ssv="http://ssp-standard.org/SSP1/SystemStructureParameterValues"
    xmlns:ssc="http://ssp-standard.org/SSP1/SystemStructureCommon">
  <ssv:Parameters>
    <ssv:Parameter name="c"><ssv:Real value="9"/></ssv:Parameter>
    <ssv:Parameter name="v0"><ssv:Real value="200" unit="cm/s"/></ssv:Parameter>
  </ssv:Parameters>
  <ssv:Units>
    <ssc:Unit name="cm/s"><ssc:BaseUnit m="1" s="-1" factor="0.01"/></ssc:Unit>
  </ssv:Units>
</ssv:ParameterSet>
"#;

const SYSTEM_SSV: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<ssv:ParameterSet version="1.0" name="system-file"
    xmlns:ssv="http://ssp-standard.org/SSP1/SystemStructureParameterValues">
  <ssv:Parameters>
    <ssv:Parameter name="stiffness"><ssv:Real value="25"/></ssv:Parameter>
    <ssv:Parameter name="x0_mm"><ssv:Real value="500"/></ssv:Parameter>
    <ssv:Parameter name="flag"><ssv:Boolean value="true"/></ssv:Parameter>
    <ssv:Parameter name="n"><ssv:Integer value="1"/></ssv:Parameter>
    <ssv:Parameter name="mode"><ssv:Enumeration value="B"/></ssv:Parameter>
    <ssv:Parameter name="nowhere.p"><ssv:Real value="1"/></ssv:Parameter>
  </ssv:Parameters>
</ssv:ParameterSet>
"#;

const SYSTEM_SSM: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<ssm:ParameterMapping version="1.0"
    xmlns:ssm="http://ssp-standard.org/SSP1/SystemStructureParameterMapping"
    xmlns:ssc="http://ssp-standard.org/SSP1/SystemStructureCommon">
  <ssm:MappingEntry source="stiffness" target="osc.c"/>
  <ssm:MappingEntry source="x0_mm" target="osc.x0">
    <ssc:LinearTransformation factor="0.001" offset="0"/>
  </ssm:MappingEntry>
  <ssm:MappingEntry source="flag" target="ft.Boolean_input">
    <ssc:BooleanMappingTransformation>
      <ssc:MapEntry source="true" target="false"/>
      <ssc:MapEntry source="false" target="true"/>
    </ssc:BooleanMappingTransformation>
  </ssm:MappingEntry>
  <ssm:MappingEntry source="n" target="ft.Int32_input">
    <ssc:IntegerMappingTransformation><ssc:MapEntry source="1" target="7"/></ssc:IntegerMappingTransformation>
  </ssm:MappingEntry>
  <ssm:MappingEntry source="mode" target="ft.Enumeration_input">
    <ssc:EnumerationMappingTransformation>
      <ssc:MapEntry source="A" target="Option 1"/>
      <ssc:MapEntry source="B" target="Option 2"/>
    </ssc:EnumerationMappingTransformation>
  </ssm:MappingEntry>
</ssm:ParameterMapping>
"#;

#[test]
fn parameters_from_inline_sets_ssv_files_and_ssm_mappings_follow_the_precedence_rules() {
    let osc = component(
        "osc",
        "@Oscillator-fmi2@",
        &[
            ("m", "parameter", REAL),
            ("v0", "parameter", "<ssc:Real unit=\"m/s\"/>"),
        ],
                    "<ssd:ParameterBindings>\
               <ssd:ParameterBinding><ssd:ParameterValues><ssv:ParameterSet version=\"1.0\" name=\"inline\"><ssv:Parameters>\
                 <ssv:Parameter name=\"m\"><ssv:Real value=\"1\"/></ssv:Parameter>\
                 <ssv:Parameter name=\"c\"><ssv:Real value=\"4\"/></ssv:Parameter>\
                 <ssv:Parameter name=\"d\"><ssv:Real value=\"0.5\"/></ssv:Parameter>\
                 <ssv:Parameter name=\"x0\"><ssv:Real value=\"1\"/></ssv:Parameter>\
               </ssv:Parameters></ssv:ParameterSet></ssd:ParameterValues></ssd:ParameterBinding>\
               <ssd:ParameterBinding source=\"resources/osc.ssv\"/>\
             </ssd:ParameterBindings>",
    );
    let ft = component("ft", "@Feedthrough-fmi2@", &[], "");
    let text = ssd(&format!(
        "<ssd:System name=\"root\">\
           <ssd:Connectors><ssd:Connector name=\"mass\" kind=\"parameter\"><ssc:Real/></ssd:Connector></ssd:Connectors>\
           <ssd:ParameterBindings>\
             <ssd:ParameterBinding source=\"resources/system.ssv\">\
               <ssd:ParameterMapping source=\"resources/system.ssm\"/>\
             </ssd:ParameterBinding>\
             <ssd:ParameterBinding prefix=\"osc.\"><ssd:ParameterValues><ssv:ParameterSet version=\"1.0\" name=\"prefixed\"><ssv:Parameters>\
               <ssv:Parameter name=\"d\"><ssv:Real value=\"0.25\"/></ssv:Parameter>\
             </ssv:Parameters></ssv:ParameterSet></ssd:ParameterValues></ssd:ParameterBinding>\
             <ssd:ParameterBinding><ssd:ParameterValues><ssv:ParameterSet version=\"1.0\" name=\"system\"><ssv:Parameters>\
               <ssv:Parameter name=\"mass\"><ssv:Real value=\"3\"/></ssv:Parameter>\
             </ssv:Parameters></ssv:ParameterSet></ssd:ParameterValues></ssd:ParameterBinding>\
           </ssd:ParameterBindings>\
           <ssd:Elements>{osc}{ft}</ssd:Elements>\
           <ssd:Connections>{}</ssd:Connections>\
         </ssd:System>         <ssd:Units><ssc:Unit name=\"m/s\"><ssc:BaseUnit m=\"1\" s=\"-1\"/></ssc:Unit></ssd:Units>{EXPERIMENT}",
        connection("", "mass", "osc", "m")
    ));
    let imported = import(&[
        ("SystemStructure.ssd", &text),
        ("resources/osc.ssv", PARAMS_SSV),
        ("resources/system.ssv", SYSTEM_SSV),
        ("resources/system.ssm", SYSTEM_SSM),
    ]);
    let osc = start_values(&imported, "osc");
    let value = |name: &str| {
        osc.iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
            .unwrap_or_else(|| panic!("{name} not set: {osc:?}"))
    };
    // Component inline < component .ssv (later binding) < system bindings (higher level).
    assert_eq!(
        value("c"),
        "25",
        "the system's mapped value overrides the component's"
    );
    assert_eq!(value("x0"), "0.5", "linear mapping 500 mm * 0.001");
    assert_eq!(value("d"), "0.25", "prefix osc. + d");
    assert_eq!(value("v0"), "2", "200 cm/s in the connector's m/s");
    assert_eq!(
        value("m"),
        "3",
        "the system parameter connector, passed along its connection"
    );
    assert_eq!(osc.len(), 5);
    assert_eq!(
        start_values(&imported, "ft"),
        [
            ("Boolean_input".to_string(), "false".to_string()),
            ("Int32_input".to_string(), "7".to_string()),
            ("Enumeration_input".to_string(), "Option 2".to_string()),
        ]
    );
    assert_eq!(imported.warnings.len(), 1, "{:?}", imported.warnings);
    assert!(
        imported.warnings[0].contains("parameter \"nowhere.p\"")
            && imported.warnings[0].contains("system.ssv:10)"),
        "{}",
        imported.warnings[0]
    );
    // The parameters reach the FMUs: x(t) of m x'' + d x' + c x = 0 from x0 = 0.5, v0 = 2.
    let (table, _) = run(&imported.system, &["osc.x"]);
    let x = column(&table, "osc.x");
    let t = 0.5;
    let exact = common::oscillator_position(3.0, 25.0, 0.25, 0.0, 0.5, 2.0, t);
    assert!(
        (x[x.len() - 1] - exact).abs() < 1e-3,
        "{} vs {exact}",
        x[x.len() - 1]
    );
}

/// Oscillator `osc` (x0 = 1) and Feedthrough FMI 2 `ft`, with `connections` (and extra
/// connectors on ft) in the root system.
fn osc_and_feedthrough(
    ft_connectors: &[(&str, &str, &str)],
    connections: &str,
    extra: &str,
) -> String {
    let osc = component(
        "osc",
        "@Oscillator-fmi2@",
        &[
            ("x", "output", "<ssc:Real unit=\"m\"/>"),
            ("F", "input", REAL),
        ],
        &parameters(&[("m", "1"), ("c", "1"), ("d", "0"), ("x0", "1"), ("v0", "0")]),
    );
    let ft = component("ft", "@Feedthrough-fmi2@", ft_connectors, "");
    ssd(&format!(
        "<ssd:System name=\"root\"><ssd:Elements>{osc}{ft}</ssd:Elements>\
         <ssd:Connections>{connections}</ssd:Connections></ssd:System>\
         <ssd:Units>\
           <ssc:Unit name=\"m\"><ssc:BaseUnit m=\"1\"/></ssc:Unit>\
           <ssc:Unit name=\"mm\"><ssc:BaseUnit m=\"1\" factor=\"0.001\"/></ssc:Unit>\
           <ssc:Unit name=\"s\"><ssc:BaseUnit s=\"1\"/></ssc:Unit>\
         </ssd:Units>{EXPERIMENT}{extra}"
    ))
}

const FT_FLOAT: &[(&str, &str, &str)] = &[
    ("Float64_continuous_input", "input", "<ssc:Real/>"),
    ("Float64_continuous_output", "output", "<ssc:Real/>"),
    ("Boolean_input", "input", "<ssc:Boolean/>"),
    ("Boolean_output", "output", "<ssc:Boolean/>"),
    ("Int32_input", "input", "<ssc:Integer/>"),
    ("Int32_output", "output", "<ssc:Integer/>"),
    (
        "Enumeration_input",
        "input",
        "<ssc:Enumeration name=\"Option\"/>",
    ),
    (
        "Enumeration_output",
        "output",
        "<ssc:Enumeration name=\"Option\"/>",
    ),
];

fn transformed(inner: &str, from: &str, to: &str) -> String {
    format!(
        "<ssd:Connection startElement=\"ft\" startConnector=\"{from}\" endElement=\"ft\" \
         endConnector=\"{to}\">{inner}</ssd:Connection>"
    )
}

#[test]
fn a_linear_transformation_becomes_factor_and_offset_and_runs() {
    let text = osc_and_feedthrough(
        FT_FLOAT,
        "<ssd:Connection startElement=\"osc\" startConnector=\"x\" endElement=\"ft\" \
         endConnector=\"Float64_continuous_input\">\
         <ssc:LinearTransformation factor=\"2\" offset=\"1\"/></ssd:Connection>",
        "",
    );
    let imported = import(&[("SystemStructure.ssd", &text)]);
    let c = &imported.system.connections[0];
    assert_eq!((c.factor, c.offset), (2.0, 1.0));
    let (table, _) = run(&imported.system, &["osc.x", "ft.Float64_continuous_output"]);
    let (x, y) = (
        column(&table, "osc.x"),
        column(&table, "ft.Float64_continuous_output"),
    );
    // Row 0 exactly; later rows lag the oscillator by at most one macro step (|x'| <= 1).
    assert_eq!(y[0], 3.0);
    for (x, y) in x.iter().zip(y) {
        assert!(
            (y - (2.0 * x + 1.0)).abs() <= 2.0 * 1e-3 * 1.01,
            "{y} vs {x}"
        );
    }
}

#[test]
fn value_mapping_transformations_map_values_on_connections() {
    // Two Feedthrough components: a's outputs (its start values passed through) drive b's
    // inputs through the three value maps; b's outputs show what arrived.
    let typed = "<ssd:ParameterBindings><ssd:ParameterBinding><ssd:ParameterValues>\
         <ssv:ParameterSet version=\"1.0\" name=\"p\"><ssv:Parameters>\
         <ssv:Parameter name=\"Boolean_input\"><ssv:Boolean value=\"true\"/></ssv:Parameter>\
         <ssv:Parameter name=\"Int32_input\"><ssv:Integer value=\"1\"/></ssv:Parameter>\
         <ssv:Parameter name=\"Enumeration_input\"><ssv:Integer value=\"1\"/></ssv:Parameter>\
         </ssv:Parameters></ssv:ParameterSet></ssd:ParameterValues></ssd:ParameterBinding>\
         </ssd:ParameterBindings>";
    let a = component("a", "@Feedthrough-fmi2@", FT_FLOAT, typed);
    let b = component("b", "@Feedthrough-fmi2@", FT_FLOAT, "");
    let link = |from: &str, to: &str, inner: &str| {
        format!(
            "<ssd:Connection startElement=\"a\" startConnector=\"{from}\" endElement=\"b\" \
             endConnector=\"{to}\">{inner}</ssd:Connection>"
        )
    };
    let connections = [
        link(
            "Boolean_output",
            "Boolean_input",
            "<ssc:BooleanMappingTransformation><ssc:MapEntry source=\"true\" target=\"false\"/>\
             <ssc:MapEntry source=\"false\" target=\"true\"/></ssc:BooleanMappingTransformation>",
        ),
        link(
            "Int32_output",
            "Int32_input",
            "<ssc:IntegerMappingTransformation><ssc:MapEntry source=\"1\" target=\"7\"/></ssc:IntegerMappingTransformation>",
        ),
        link(
            "Enumeration_output",
            "Enumeration_input",
            "<ssc:EnumerationMappingTransformation><ssc:MapEntry source=\"Option 1\" target=\"Option 2\"/></ssc:EnumerationMappingTransformation>",
        ),
    ]
    .concat();
    let text = ssd(&format!(
        "<ssd:System name=\"root\"><ssd:Elements>{a}{b}</ssd:Elements>\
         <ssd:Connections>{connections}</ssd:Connections></ssd:System>{EXPERIMENT}"
    ));
    let imported = import(&[("SystemStructure.ssd", &text)]);
    let maps: Vec<&Vec<(String, String)>> = imported
        .system
        .connections
        .iter()
        .map(|c| &c.value_map)
        .collect();
    assert_eq!(
        maps[2],
        &vec![("Option 1".to_string(), "Option 2".to_string())]
    );
    let (table, _) = run(
        &imported.system,
        &["b.Boolean_output", "b.Int32_output", "b.Enumeration_output"],
    );
    assert!(
        column(&table, "b.Boolean_output").iter().all(|&v| v == 0.0),
        "true becomes false"
    );
    assert!(
        column(&table, "b.Int32_output").iter().all(|&v| v == 7.0),
        "1 becomes 7"
    );
    assert!(
        column(&table, "b.Enumeration_output")
            .iter()
            .all(|&v| v == 2.0),
        "Option 1 becomes Option 2"
    );
}

#[test]
fn transformations_that_do_not_fit_their_connectors_are_precise_errors() {
    let cases = [
        (
            transformed(
                "<ssc:LinearTransformation factor=\"2\"/>",
                "Boolean_output",
                "Boolean_input",
            ),
            "TMP/model.ssp/SystemStructure.ssd:22: <ssd:Connection> ft.Boolean_output -> ft.Boolean_input: \
             a LinearTransformation needs numeric connectors, but ft.Boolean_output is Boolean",
        ),
    ];
    for (connection, expected) in cases {
        let text = osc_and_feedthrough(FT_FLOAT, &connection, "");
        let message = import_error(&[("SystemStructure.ssd", &text)]);
        assert_eq!(message, expected);
    }
    // A mapping of every value onto itself changes nothing: a warning.
    let text = osc_and_feedthrough(
        FT_FLOAT,
        &transformed(
            "<ssc:BooleanMappingTransformation><ssc:MapEntry source=\"true\" target=\"true\"/></ssc:BooleanMappingTransformation>",
            "Boolean_output",
            "Boolean_input",
        ),
        "",
    );
    let imported = import(&[("SystemStructure.ssd", &text)]);
    assert_eq!(imported.warnings.len(), 1);
    assert!(imported.warnings[0].ends_with(
        "SystemStructure.ssd:22: <ssd:Connection> ft.Boolean_output -> ft.Boolean_input: its value \
         mapping maps every value onto itself; ignored"
    ), "{}", imported.warnings[0]);
}

#[test]
fn a_connector_in_mm_fed_from_one_in_m_gets_the_conversion_and_incompatible_units_are_errors() {
    let connect = connection("osc", "x", "ft", "Float64_continuous_input");
    let text = osc_and_feedthrough(
        &[
            (
                "Float64_continuous_input",
                "input",
                "<ssc:Real unit=\"mm\"/>",
            ),
            (
                "Float64_continuous_output",
                "output",
                "<ssc:Real unit=\"mm\"/>",
            ),
        ],
        &connect,
        "",
    );
    let imported = import(&[("SystemStructure.ssd", &text)]);
    assert!(imported.warnings.is_empty(), "{:?}", imported.warnings);
    let c = &imported.system.connections[0];
    assert_eq!((c.factor, c.offset), (1000.0, 0.0));
    let (table, _) = run(&imported.system, &["osc.x", "ft.Float64_continuous_output"]);
    let (x, y) = (
        column(&table, "osc.x"),
        column(&table, "ft.Float64_continuous_output"),
    );
    assert_eq!((x[0], y[0]), (1.0, 1000.0));
    for (x, y) in x.iter().zip(y) {
        assert!((y - 1000.0 * x).abs() <= 1000.0 * 1e-3 * 1.01, "{y} vs {x}");
    }

    let text = osc_and_feedthrough(
        &[(
            "Float64_continuous_input",
            "input",
            "<ssc:Real unit=\"s\"/>",
        )],
        &connect,
        "",
    );
    assert_eq!(
        import_error(&[("SystemStructure.ssd", &text)]),
        "TMP/model.ssp/SystemStructure.ssd:15: <ssd:Connection> osc.x -> ft.Float64_continuous_input: \
         incompatible units: unit \"m\" (m) cannot be converted to unit \"s\" (s): the dimensions \
         differ; connect connectors of compatible units (or set suppressUnitConversion=\"true\" if \
         the values are meant to pass unchanged)"
    );

    // suppressUnitConversion: the SSP's units and the FMUs' pass the value unchanged.
    let suppressed = connect.replace(
        "<ssd:Connection ",
        "<ssd:Connection suppressUnitConversion=\"true\" ",
    );
    let text = osc_and_feedthrough(
        &[(
            "Float64_continuous_input",
            "input",
            "<ssc:Real unit=\"s\"/>",
        )],
        &suppressed,
        "",
    );
    let imported = import(&[("SystemStructure.ssd", &text)]);
    let c = &imported.system.connections[0];
    assert!(
        c.ignore_units,
        "suppressUnitConversion reaches the connection"
    );
    assert_eq!((c.factor, c.offset), (1.0, 0.0));
}

const SIGNALS_SSB: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<ssb:SignalDictionary version="1.0"
    xmlns:ssb="http://ssp-standard.org/SSP1/SystemStructureSignalDictionary"
    xmlns:ssc="http://ssp-standard.org/SSP1/SystemStructureCommon">
  <ssb:DictionaryEntry name="position"><ssc:Real unit="m"/></ssb:DictionaryEntry>
</ssb:SignalDictionary>
"#;

#[test]
fn signal_dictionaries_inline_and_from_ssb_files_connect_writer_and_readers() {
    for dictionary in [
        "<ssd:SignalDictionary name=\"bus\" type=\"application/x-ssp-signal-dictionary\">\
           <ssb:DictionaryEntry name=\"position\"><ssc:Real unit=\"m\"/></ssb:DictionaryEntry>\
         </ssd:SignalDictionary>",
        "<ssd:SignalDictionary name=\"bus\" source=\"resources/signals.ssb\"/>",
    ] {
        let osc = component(
            "osc",
            "@Oscillator-fmi2@",
            &[("x", "output", "<ssc:Real unit=\"m\"/>")],
            &parameters(&[("x0", "1"), ("c", "1"), ("m", "1")]),
        );
        let ft = component(
            "ft",
            "@Feedthrough-fmi2@",
            &[(
                "Float64_continuous_input",
                "input",
                "<ssc:Real unit=\"mm\"/>",
            )],
            "",
        );
        let reference = |name: &str, kind: &str| {
            format!(
                "<ssd:SignalDictionaryReference name=\"{name}\" dictionary=\"bus\"><ssd:Connectors>\
                 <ssd:Connector name=\"position\" kind=\"{kind}\"><ssc:Real unit=\"m\"/></ssd:Connector>\
                 </ssd:Connectors></ssd:SignalDictionaryReference>"
            )
        };
        let text = ssd(&format!(
            "<ssd:System name=\"root\"><ssd:Elements>{osc}{ft}{}{}</ssd:Elements>\
             <ssd:Connections>{}{}</ssd:Connections>\
             <ssd:SignalDictionaries>{dictionary}</ssd:SignalDictionaries></ssd:System>\
             <ssd:Units><ssc:Unit name=\"m\"><ssc:BaseUnit m=\"1\"/></ssc:Unit>\
             <ssc:Unit name=\"mm\"><ssc:BaseUnit m=\"1\" factor=\"0.001\"/></ssc:Unit></ssd:Units>{EXPERIMENT}",
            reference("writer", "input"),
            reference("reader", "output"),
            connection("osc", "x", "writer", "position"),
            connection("reader", "position", "ft", "Float64_continuous_input"),
        ));
        let imported = import(&[
            ("SystemStructure.ssd", &text),
            ("resources/signals.ssb", SIGNALS_SSB),
        ]);
        assert!(imported.warnings.is_empty(), "{:?}", imported.warnings);
        assert_eq!(
            imported.system.connections,
            [Connection {
                factor: 1000.0,
                ..Connection::new(
                    Endpoint::parse("osc.x").unwrap(),
                    Endpoint::parse("ft.Float64_continuous_input").unwrap()
                )
            }]
        );
        let (table, _) = run(&imported.system, &["ft.Float64_continuous_output"]);
        assert_eq!(column(&table, "ft.Float64_continuous_output")[0], 1000.0);
    }
}

/// Debug notes logged by the importer (a process-wide logger that keeps every message).
fn logged() -> &'static std::sync::Mutex<Vec<String>> {
    struct Keep;
    static LOGGED: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());
    impl log::Log for Keep {
        fn enabled(&self, _: &log::Metadata) -> bool {
            true
        }
        fn log(&self, record: &log::Record) {
            if let Ok(mut all) = LOGGED.lock() {
                all.push(format!("{}: {}", record.level(), record.args()));
            }
        }
        fn flush(&self) {}
    }
    static INIT: std::sync::Once = std::sync::Once::new();
    INIT.call_once(|| {
        if log::set_boxed_logger(Box::new(Keep)).is_ok() {
            log::set_max_level(log::LevelFilter::Debug);
        }
    });
    &LOGGED
}

#[test]
fn files_written_like_omsimulator_fmpy_and_libcosim_users_write_them_load_and_run() {
    common::fmu("Oscillator", 2);
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/ssp");
    let logged = logged();
    for (file, annotation, record) in [
        ("omsimulator.ssp", "type=\"org.openmodelica\"", "mass1.x"),
        (
            "fmpy.ssd",
            "type=\"org.fmpy.ssp\"",
            "gain.Float64_continuous_output",
        ),
        (
            "libcosim.ssp",
            "type=\"com.opensimulationplatform\"",
            "mass2.x",
        ),
    ] {
        let package = SspPackage::open(&data.join(file)).unwrap();
        let imported = package
            .import(None)
            .unwrap_or_else(|e| panic!("{file}: {e}"));
        assert!(
            imported.warnings.is_empty(),
            "{file}: {:?}",
            imported.warnings
        );
        let notes = logged.lock().unwrap().clone();
        assert!(
            notes.iter().any(|n| n.starts_with("DEBUG")
                && n.contains(file)
                && n.contains(annotation)
                && n.ends_with("is ignored (not cosimo's)")),
            "{file}: no debug note about {annotation}: {notes:#?}"
        );
        let (table, _) = run(&imported.system, &[record]);
        assert!(column(&table, record).iter().all(|v| v.is_finite()));
    }
    // The OMSimulator file's system-level .ssv reaches the components.
    let oms = SspPackage::open(&data.join("omsimulator.ssp"))
        .unwrap()
        .import(None)
        .unwrap();
    assert_eq!(
        oms.system.components[0].start_values,
        [
            ("m".into(), "1".into()),
            ("c".into(), "1000".into()),
            ("x0".into(), "0.1".into())
        ]
    );
    let fmpy = SspPackage::open(&data.join("fmpy.ssd"))
        .unwrap()
        .import(None)
        .unwrap();
    assert_eq!(fmpy.name, "Chain");
    assert_eq!(fmpy.system.connections[0].factor, 3.0);
}

/// The two-mass system with one text replaced.
fn broken(from: &str, to: &str) -> String {
    let text = flat_two_mass();
    assert!(text.contains(from), "{from}");
    text.replacen(from, to, 1)
}

#[test]
fn bad_inputs_have_exact_messages() {
    let ft = |connectors: &[(&str, &str, &str)], connections: &str| {
        osc_and_feedthrough(connectors, connections, "")
    };
    let bad_ssv = "<?xml version=\"1.0\"?>\n<ssv:ParameterSet version=\"1.0\" name=\"p\" \
        xmlns:ssv=\"http://ssp-standard.org/SSP1/SystemStructureParameterValues\">\n\
        <ssv:Parameters>\n<ssv:Parameter name=\"c\"><ssv:Real value=\"1\"></ssv:Parameter>\n\
        </ssv:Parameters>\n</ssv:ParameterSet>\n";
    let bad_value_ssv = "<?xml version=\"1.0\"?>\n<ssv:ParameterSet version=\"1.0\" name=\"p\" \
        xmlns:ssv=\"http://ssp-standard.org/SSP1/SystemStructureParameterValues\">\n\
        <ssv:Parameters>\n<ssv:Parameter name=\"c\"><ssv:Real value=\"1,5\"/></ssv:Parameter>\n\
        </ssv:Parameters>\n</ssv:ParameterSet>\n";
    let with_ssv = |ssv: &'static str| {
        vec![
            ("SystemStructure.ssd".to_string(), broken(
                "<ssd:Connectors><ssd:Connector name=\"x1\"",
                "<ssd:ParameterBindings><ssd:ParameterBinding source=\"p.ssv\"/></ssd:ParameterBindings>\
                 <ssd:Connectors><ssd:Connector name=\"x1\"",
            )),
            ("p.ssv".to_string(), ssv.to_string()),
        ]
    };
    type Case = (&'static str, Vec<(String, String)>, &'static str);
    let cases: Vec<Case> = vec![
        (
            "missing SystemStructure.ssd",
            vec![("other.ssd".into(), flat_two_mass())],
            "TMP/model.ssp: no SystemStructure.ssd at the top level of the package (an SSP holds SystemStructure.ssd at its root); it holds other.ssd; choose one with --ssd other.ssd",
        ),
        (
            "a component whose FMU is missing",
            vec![("SystemStructure.ssd".into(), broken("@CouplingSpring-fmi2@", "resources/spring.fmu"))],
            "TMP/model.ssp/SystemStructure.ssd:13: <ssd:Component name=\"spring\">: the FMU \"resources/spring.fmu\" does not exist (looked for TMP/model.ssp/resources/spring.fmu); put it there or correct source=\"...\" (relative paths are relative to the .ssd file's folder)",
        ),
        (
            "a connection to an unknown connector",
            vec![("SystemStructure.ssd".into(), broken("endConnector=\"x1\"", "endConnector=\"x_1\""))],
            "TMP/model.ssp/SystemStructure.ssd:26: <ssd:Connection> endConnector=\"x_1\": <ssd:Component name=\"spring\"> declares no connector \"x_1\" in its <ssd:Connectors>; did you mean \"x1\"?",
        ),
        (
            "a connection to an unknown element",
            vec![("SystemStructure.ssd".into(), broken("endElement=\"spring\"", "endElement=\"sprung\""))],
            "TMP/model.ssp/SystemStructure.ssd:26: <ssd:Connection> endElement=\"sprung\": <ssd:System name=\"root\"> has no element \"sprung\"; did you mean \"spring\"?",
        ),
        (
            "a type mismatch",
            vec![("SystemStructure.ssd".into(), ft(FT_FLOAT, &connection("osc", "x", "ft", "Boolean_input")))],
            "TMP/model.ssp/SystemStructure.ssd:22: <ssd:Connection> osc.x -> ft.Boolean_input: type mismatch: osc.x is Real but ft.Boolean_input is Boolean; connect Real with Real, Integer and Enumeration with each other, Boolean with Boolean",
        ),
        (
            "two sources for one input",
            vec![("SystemStructure.ssd".into(), broken(
                "<ssd:Connection startElement=\"mass1\" startConnector=\"v\"",
                "<ssd:Connection startElement=\"mass2\" startConnector=\"x\" endElement=\"spring\" endConnector=\"x1\"/>\
                 <ssd:Connection startElement=\"mass1\" startConnector=\"v\"",
            ))],
            "TMP/model.ssp/SystemStructure.ssd:27: <ssd:Connection> mass2.x -> spring.x1: spring.x1 already has a source, mass1.x (line 26); an input takes exactly one source: remove one of the two connections",
        ),
        ("a malformed .ssv", with_ssv(bad_ssv), "TMP/model.ssp/p.ssv:4: malformed XML: ill-formed document: expected `</ssv:Real>`, but `</ssv:Parameter>` was found (the parameter set referenced by <ssd:ParameterBinding> at TMP/model.ssp/SystemStructure.ssd:14)"),
        ("a .ssv with a malformed value", with_ssv(bad_value_ssv), "TMP/model.ssp/p.ssv:4: <ssv:Real> of parameter \"c\": value=\"1,5\" is not a valid Real (expected a number such as 1.5 or 2e-3)"),
        (
            "a model-exchange component",
            vec![("SystemStructure.ssd".into(), broken(
                "type=\"application/x-fmu-sharedlibrary\" source=\"@CouplingSpring-fmi2@\"",
                "type=\"application/x-fmu-sharedlibrary\" source=\"@CouplingSpring-fmi2@\" implementation=\"ModelExchange\"",
            ))],
            "TMP/model.ssp/SystemStructure.ssd:13: <ssd:Component name=\"spring\">: implementation=\"ModelExchange\" is not supported; cosimo runs FMUs as co-simulation (implementation=\"CoSimulation\" or \"any\")",
        ),
        (
            "a name with a dot",
            vec![("SystemStructure.ssd".into(), broken("name=\"spring\"", "name=\"spring.1\""))],
            "TMP/model.ssp/SystemStructure.ssd:13: <ssd:Component name=\"spring.1\">: cosimo names components component.variable and nested ones outer/inner/component, so element names may not contain '.' or '/'; rename it, e.g. \"spring_1\"",
        ),
        (
            "an output connected to an output",
            vec![("SystemStructure.ssd".into(), broken("endElement=\"spring\" endConnector=\"x1\"", "endElement=\"spring\" endConnector=\"F2\""))],
            "TMP/model.ssp/SystemStructure.ssd:26: <ssd:Connection> mass1.x -> spring.F2: both connectors provide values (outputs); connect an output to an input",
        ),
        (
            "an http source",
            vec![("SystemStructure.ssd".into(), broken("@CouplingSpring-fmi2@", "https://example.com/spring.fmu"))],
            "TMP/model.ssp/SystemStructure.ssd:13: <ssd:Component name=\"spring\">: source \"https://example.com/spring.fmu\": only relative paths and file: URIs are supported, not https: URIs",
        ),
        (
            "a typo in cosimo's annotation",
            vec![("SystemStructure.ssd".into(), broken("stepSize=\"1e-3\"", "stepsize=\"1e-3\""))],
            "TMP/model.ssp/SystemStructure.ssd:34: <cosimo:Experiment>: stepsize=\"1e-3\": unknown attribute; cosimo:Experiment takes stepSize, outputInterval, algorithm, extrapolationOrder, parallel, tolerance, startTime, stopTime, loopSolver, loopAbsoluteTolerance, loopRelativeTolerance, loopMaxIterations, correctorMaxIterations, correctorAbsoluteTolerance, correctorRelativeTolerance, reuseJacobian, correctorJacobian, correctorExtension, divergenceLimit (and a <cosimo:StepControl> child)",
        ),
        (
            "malformed XML in the .ssd",
            vec![("SystemStructure.ssd".into(), broken("</ssd:Elements>", "</ssd:Element>"))],
            "TMP/model.ssp/SystemStructure.ssd:26: malformed XML: ill-formed document: expected `</ssd:Elements>`, but `</ssd:Element>` was found",
        ),
    ];
    let mut failures = Vec::new();
    for (what, files, expected) in cases {
        let files: Vec<(&str, &str)> = files
            .iter()
            .map(|(a, b)| (a.as_str(), b.as_str()))
            .collect();
        let message = import_error(&files);
        if message != expected {
            failures.push(format!(
                "{what}:\n  got:      {message}\n  expected: {expected}"
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn other_ssd_files_of_a_package_can_be_chosen() {
    let flat = flat_two_mass();
    let nested = nested_two_mass();
    let (_dir, root) = package(&[
        ("SystemStructure.ssd", &flat),
        ("variants/nested.ssd", &nested),
    ]);
    let package = SspPackage::open(&root).unwrap();
    assert_eq!(
        package.ssd_files(),
        ["SystemStructure.ssd", "variants/nested.ssd"]
    );
    let imported = package.import(Some("variants/nested.ssd")).unwrap();
    assert_eq!(imported.system.components.len(), 3);
    let message = package.import(Some("nested.ssd")).unwrap_err().to_string();
    assert_eq!(
        message,
        format!(
            "{}: there is no \"nested.ssd\" in the package; it holds SystemStructure.ssd, \
             variants/nested.ssd",
            root.display()
        )
    );
}

#[test]
fn truncated_and_mangled_files_give_errors_not_panics() {
    let text = with_fmus(&nested_two_mass());
    let dir = common::temp_dir();
    let root = dir.path().join("cut.ssp");
    std::fs::create_dir_all(&root).unwrap();
    let package = SspPackage::open(&root).unwrap();
    let step = (text.len() / 80).max(1);
    for cut in (0..text.len()).step_by(step) {
        let Some(prefix) = text.get(..cut) else {
            continue;
        };
        for variant in [
            prefix.to_string(),
            text.replacen(&text[cut..cut + 1], "\"", 1),
        ] {
            std::fs::write(root.join("SystemStructure.ssd"), &variant).unwrap();
            if let Err(e) = package.import(None) {
                assert!(e.to_string().contains("SystemStructure.ssd"), "{e}");
            }
        }
    }
}

// ------------------------------------------------------------------------------------------
// Hostile files (issue 15): deep nesting is an error naming the file and line, not a crash

/// `depth` levels of `<a>` inside an annotation of the root system.
fn deeply_annotated(depth: usize) -> String {
    ssd(&format!(
        "<ssd:System name=\"root\">\n<ssd:Annotations>\n<ssc:Annotation type=\"x\">{}{}\
         </ssc:Annotation>\n</ssd:Annotations>\n</ssd:System>",
        "<a>".repeat(depth),
        "</a>".repeat(depth)
    ))
}

#[test]
fn nesting_deeper_than_the_reader_takes_is_refused_with_file_and_line() {
    // 200,000 levels used to overflow the stack (the element tree was dropped recursively).
    let message = import_error(&[("SystemStructure.ssd", &deeply_annotated(200_000))]);
    assert_eq!(
        message,
        "TMP/model.ssp/SystemStructure.ssd:10: the elements are nested deeper than 1000 levels, \
         inside <System name=\"root\"> (line 8) and <Annotations> (line 9); cosimo reads at \
         most 1000 levels: remove or flatten the deeply nested content"
    );
}

/// A root system with `levels` systems nested in it.
fn nested_systems(levels: usize) -> String {
    let mut body = "<ssd:System name=\"root\"><ssd:Elements>\n".to_string();
    for level in 1..=levels {
        body.push_str(&format!("<ssd:System name=\"s{level}\"><ssd:Elements>\n"));
    }
    for _ in 0..=levels {
        body.push_str("</ssd:Elements></ssd:System>\n");
    }
    ssd(&body)
}

#[test]
fn systems_nested_deeper_than_the_reader_takes_are_refused_and_as_deep_are_read() {
    // The reader recurses per level of systems: as deep as it takes must fit a test thread's
    // stack in a debug build.
    let message = import_error(&[("SystemStructure.ssd", &nested_systems(100))]);
    assert!(message.contains("no component"), "{message}");
    let message = import_error(&[("SystemStructure.ssd", &nested_systems(101))]);
    assert_eq!(
        message,
        "TMP/model.ssp/SystemStructure.ssd:109: <ssd:System name=\"s101\">: systems are nested \
         deeper than 100 levels; cosimo reads at most 100: flatten the hierarchy"
    );
}

#[test]
fn thousands_of_namespace_declarations_are_refused_before_they_take_minutes() {
    // Each element's namespace is looked up among all declarations in scope: 30,000 of them
    // and as many elements took a minute.
    let declarations: String = (0..30_000)
        .map(|i| format!(" xmlns:p{i}=\"urn:{i}\""))
        .collect();
    let body = format!(
        "<ssd:System name=\"root\">{}</ssd:System>",
        "<ssd:Annotations/>".repeat(30_000)
    );
    let text = ssd(&body).replacen("name=\"test\"", &format!("name=\"test\"{declarations}"), 1);
    assert_eq!(
        import_error(&[("SystemStructure.ssd", &text)]),
        "TMP/model.ssp/SystemStructure.ssd:2: <SystemStructureDescription>: more than 100 \
         namespace declarations (xmlns) are in scope; cosimo reads at most 100: declare each \
         namespace once"
    );
}

#[test]
fn conversions_and_transformations_whose_product_overflows_are_an_error() {
    // Each factor is finite, their product is not: the connection would pass infinities on.
    let text = osc_and_feedthrough(
        &[(
            "Float64_continuous_input",
            "input",
            "<ssc:Real unit=\"mm\"/>",
        )],
        "<ssd:Connection startElement=\"osc\" startConnector=\"x\" endElement=\"ft\" \
         endConnector=\"Float64_continuous_input\">\
         <ssc:LinearTransformation factor=\"1e300\"/></ssd:Connection>",
        "",
    )
    .replace("factor=\"0.001\"", "factor=\"1e-300\"");
    let message = import_error(&[("SystemStructure.ssd", &text)]);
    assert_eq!(
        message,
        "TMP/model.ssp/SystemStructure.ssd:15: the unit conversions and transformations along \
         the connection to ft.Float64_continuous_input multiply to inf x + 0, which is not \
         finite; check their factors and offsets"
    );
}

#[test]
fn many_annotation_lists_and_unsupported_elements_cost_linear_time_and_bounded_warnings() {
    // Each <ssd:Annotations> of a system used to scan all of the system's lists (quadratic),
    // and each unsupported element's warning quoted its parent's name (here 100,000 long).
    let name = "s".repeat(100_000);
    let lists = "<ssd:Annotations><ssc:Annotation type=\"org.cosimo.unknown\"/></ssd:Annotations>"
        .repeat(20_000);
    let unsupported = "<ssd:Unsupported/>".repeat(20_000);
    let text = ssd(&format!(
        "<ssd:System name=\"{name}\">\n{lists}\n<ssd:Elements>{}{unsupported}</ssd:Elements>\n\
         </ssd:System>",
        component("osc", "@Oscillator-fmi2@", &[("x", "output", REAL)], "")
    ));
    let imported = import(&[("SystemStructure.ssd", &text)]);
    assert_eq!(imported.warnings.len(), 1001);
    assert!(imported.warnings.iter().all(|w| w.chars().count() <= 1003));
    assert!(
        imported.warnings[1000]
            .ends_with("further warnings are not shown after 1000; fix these first"),
        "{}",
        imported.warnings[1000]
    );
}
