//! Enumeration variables and `reinit` in the variable table and both model descriptions.

use fmu_kit::{EnumerationType, Table, Variable};

fn option() -> EnumerationType {
    EnumerationType::new("Option", &[("Option 1", 1), ("Option 2", 2)])
}

#[test]
fn the_table_checks_enumerations_and_reinit() {
    let ok = Table::new(
        "E",
        vec![
            Variable::enumeration(1, "e", &option()).input().start(2i64),
            Variable::enumeration(2, "f", &option())
                .output()
                .depends_on(&[1]),
        ],
    );
    assert!(ok.is_ok(), "{ok:?}");
    let cases = [
        (
            vec![Variable::enumeration(1, "e", &option()).input().start(3i64)],
            "not an item",
        ),
        (
            vec![
                Variable::enumeration(1, "e", &EnumerationType::new("Empty", &[]))
                    .input()
                    .start(0i64),
            ],
            "no items",
        ),
        (
            vec![
                Variable::enumeration(1, "e", &option()).input().start(1i64),
                Variable::enumeration(2, "f", &EnumerationType::new("Option", &[("A", 1)]))
                    .input()
                    .start(1i64),
            ],
            "different items",
        ),
        (
            vec![Variable::float64(1, "x").output().start(0.0).reinit()],
            "only continuous states may be reinit",
        ),
    ];
    for (vars, want) in cases {
        match Table::new("E", vars) {
            Ok(_) => panic!("accepted a table that should fail with {want:?}"),
            Err(e) => assert!(e.contains(want), "{e:?} does not mention {want:?}"),
        }
    }
}
