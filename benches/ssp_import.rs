//! SSP import time: a generated system of 1,000 components and 5,000 connections (each
//! component with five inputs fed by the previous component's five outputs, and a parameter
//! set), opened and imported from an unpacked folder. Import must stay linear in the size.

use std::fmt::Write as _;
use std::path::Path;

use cosimo::system::ssp::SspPackage;
use criterion::{criterion_group, criterion_main, Criterion};

/// Write the generated SSP into `root`.
fn generate(root: &Path, components: usize, ports: usize) {
    std::fs::create_dir_all(root.join("resources")).expect("a package folder");
    // Import checks that each FMU exists but does not open it.
    std::fs::write(root.join("resources/Feedthrough.fmu"), b"").expect("a placeholder FMU");
    let mut text = String::from(
        r#"<?xml version="1.0" encoding="UTF-8"?>
<ssd:SystemStructureDescription version="1.0" name="large"
    xmlns:ssd="http://ssp-standard.org/SSP1/SystemStructureDescription"
    xmlns:ssc="http://ssp-standard.org/SSP1/SystemStructureCommon"
    xmlns:ssv="http://ssp-standard.org/SSP1/SystemStructureParameterValues">
<ssd:System name="root"><ssd:Elements>
"#,
    );
    for i in 0..components {
        let _ = write!(
            text,
            "<ssd:Component name=\"c{i}\" source=\"resources/Feedthrough.fmu\"><ssd:Connectors>"
        );
        for k in 0..ports {
            let _ = write!(
                text,
                "<ssd:Connector name=\"in{k}\" kind=\"input\"><ssc:Real unit=\"m\"/></ssd:Connector>\
                 <ssd:Connector name=\"out{k}\" kind=\"output\"><ssc:Real unit=\"m\"/></ssd:Connector>"
            );
        }
        let _ = writeln!(
            text,
            "</ssd:Connectors><ssd:ParameterBindings><ssd:ParameterBinding><ssd:ParameterValues>\
             <ssv:ParameterSet version=\"1.0\" name=\"p\"><ssv:Parameters>\
             <ssv:Parameter name=\"gain\"><ssv:Real value=\"{i}\"/></ssv:Parameter>\
             </ssv:Parameters></ssv:ParameterSet></ssd:ParameterValues></ssd:ParameterBinding>\
             </ssd:ParameterBindings></ssd:Component>"
        );
    }
    text.push_str("</ssd:Elements><ssd:Connections>\n");
    for i in 0..components {
        let next = (i + 1) % components;
        for k in 0..ports {
            let _ = writeln!(
                text,
                "<ssd:Connection startElement=\"c{i}\" startConnector=\"out{k}\" \
                 endElement=\"c{next}\" endConnector=\"in{k}\"><ssc:LinearTransformation \
                 factor=\"2\"/></ssd:Connection>"
            );
        }
    }
    text.push_str(
        "</ssd:Connections></ssd:System>\
         <ssd:Units><ssc:Unit name=\"m\"><ssc:BaseUnit m=\"1\"/></ssc:Unit></ssd:Units>\
         <ssd:DefaultExperiment startTime=\"0\" stopTime=\"1\"/>\
         </ssd:SystemStructureDescription>\n",
    );
    std::fs::write(root.join("SystemStructure.ssd"), text).expect("the .ssd");
}

fn import(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let mut group = c.benchmark_group("ssp_import");
    for (components, ports) in [(100, 5), (1000, 5)] {
        let root = dir.path().join(format!("large-{components}.ssp"));
        generate(&root, components, ports);
        group.bench_function(
            format!("{components}_components_{}_connections", components * ports),
            |b| {
                b.iter(|| {
                    let package = SspPackage::open(&root).expect("the package opens");
                    let imported = package.import(None).expect("the system imports");
                    assert_eq!(imported.system.connections.len(), components * ports);
                    imported
                })
            },
        );
    }
    group.finish();
}

criterion_group!(benches, import);
criterion_main!(benches);
