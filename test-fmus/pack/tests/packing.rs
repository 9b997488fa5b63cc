//! Packing builds every model, and each archive is complete and self-consistent.

use std::collections::BTreeSet;
use std::io::Read;

use fmu_pack::{fmu_path, packed_fmus, xml_attr, PackedFmu};
use quick_xml::events::Event;

/// A model variable as listed in a model description: (name, value reference, FMI 3 type).
type Var = (String, u32, String);

/// Variables of a model description, with whether each is an FMI 3 array.
fn variables(xml: &str) -> Vec<(Var, bool)> {
    let mut reader = quick_xml::Reader::from_str(xml);
    let mut out: Vec<(Var, bool)> = Vec::new();
    let (mut in_vars, mut depth) = (false, 0);
    let mut fmi2_name: Option<(String, u32)> = None;
    loop {
        let ev = reader.read_event().expect("well-formed XML");
        let (e, empty) = match &ev {
            Event::Start(e) => (e.clone(), false),
            Event::Empty(e) => (e.clone(), true),
            Event::End(e) => {
                if e.name().as_ref() == b"ModelVariables" {
                    in_vars = false;
                }
                if in_vars {
                    depth -= 1;
                }
                continue;
            }
            Event::Eof => break,
            _ => continue,
        };
        let tag = String::from_utf8_lossy(e.name().as_ref()).into_owned();
        let attr = |k: &str| {
            e.try_get_attribute(k)
                .ok()
                .flatten()
                .map(|a| String::from_utf8_lossy(&a.value).into_owned())
        };
        if tag == "ModelVariables" {
            in_vars = true;
            depth = 0;
            continue;
        }
        if !in_vars {
            continue;
        }
        if depth == 0 {
            let name = attr("name").expect("name");
            let vr: u32 = attr("valueReference")
                .expect("vr")
                .parse()
                .expect("vr number");
            if tag == "ScalarVariable" {
                fmi2_name = Some((name, vr));
            } else {
                out.push(((name, vr, tag.clone()), false));
            }
        } else if depth == 1 {
            if let Some((name, vr)) = fmi2_name.take() {
                let ty = match tag.as_str() {
                    "Real" => "Float64",
                    "Integer" => "Int32",
                    t => t,
                };
                out.push(((name, vr, ty.to_owned()), false));
            } else if tag == "Dimension" {
                if let Some(last) = out.last_mut() {
                    last.1 = true;
                }
            }
        }
        if !empty {
            depth += 1;
        }
    }
    out
}

fn read_zip(f: &PackedFmu) -> (BTreeSet<String>, String) {
    let file = std::fs::File::open(&f.path).expect("fmu exists");
    let mut zip = zip::ZipArchive::new(file).expect("a zip archive");
    let names: BTreeSet<String> = zip.file_names().map(str::to_owned).collect();
    let mut xml = String::new();
    zip.by_name("modelDescription.xml")
        .expect("modelDescription.xml")
        .read_to_string(&mut xml)
        .expect("utf-8");
    (names, xml)
}

#[test]
fn every_model_is_packed_for_both_versions_with_matching_variables() {
    let fmus = packed_fmus().expect("packing succeeds");
    for model in ["Oscillator", "Dahlquist", "CouplingSpring"] {
        for v in [2, 3] {
            assert!(
                fmus.iter().any(|f| f.model == model && f.fmi_version == v),
                "{model} FMI {v} missing"
            );
            assert!(fmu_path(model, v).is_file());
        }
    }
    let models: BTreeSet<&str> = fmus.iter().map(|f| f.model.as_str()).collect();
    for model in models {
        let get = |v: u8| {
            let f = fmus
                .iter()
                .find(|f| f.model == model && f.fmi_version == v)
                .unwrap_or_else(|| panic!("{model} FMI {v} missing"));
            read_zip(f)
        };
        let (names2, xml2) = get(2);
        let (names3, xml3) = get(3);
        assert!(xml2.contains("fmiVersion=\"2.0\""));
        assert!(xml3.contains("fmiVersion=\"3.0\""));
        let id2 = xml_attr(&xml2, "modelIdentifier").expect("identifier");
        let id3 = xml_attr(&xml3, "modelIdentifier").expect("identifier");
        assert!(
            names2.contains(&format!("binaries/linux64/{id2}.so")),
            "{names2:?}"
        );
        assert!(
            names3.contains(&format!("binaries/x86_64-linux/{id3}.so")),
            "{names3:?}"
        );
        assert_eq!(
            xml_attr(&xml2, "guid"),
            xml_attr(&xml3, "instantiationToken")
        );

        let vars2: BTreeSet<Var> = variables(&xml2).into_iter().map(|v| v.0).collect();
        // The types FMI 2 can show: Real, Integer, Boolean, String and Enumeration.
        let fmi2_types = ["Float64", "Int32", "Boolean", "String", "Enumeration"];
        let vars3: BTreeSet<Var> = variables(&xml3)
            .into_iter()
            .filter(|(v, array)| !array && fmi2_types.contains(&v.2.as_str()))
            .map(|v| v.0)
            .collect();
        assert!(vars2.len() >= 2, "{model}: {vars2:?}");
        assert_eq!(vars2, vars3, "{model}: FMI 2 and FMI 3 variables differ");
    }
}

#[test]
fn unknown_model_panics_with_a_clear_message() {
    let r = std::panic::catch_unwind(|| fmu_path("NoSuchModel", 2));
    let msg = r.expect_err("must panic");
    let text = msg.downcast_ref::<String>().cloned().unwrap_or_default();
    assert!(
        text.contains("NoSuchModel") && text.contains("Oscillator"),
        "{text}"
    );
}
