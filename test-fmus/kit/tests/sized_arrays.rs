//! Arrays sized by a structural parameter (`Variable::sized_by`): `<Dimension valueReference>`
//! in FMI 3, absent from FMI 2; resized on `fmi3ExitConfigurationMode`; get / set count the
//! configured size; hostile sizes refused; FMU states keep the configured size.

use std::ffi::{c_int, c_void};
use std::ptr::null_mut;

mod common;

use fmu_kit::{fmi3, model_description, Model, Table, Values, Variable};

const N: u32 = 1;
const U: u32 = 2;
const Y: u32 = 3;
const OK: c_int = 0;
const ERROR: c_int = 3;

/// `y[i] = (i + 1) u[i]`, `u` and `y` sized by `n` (start 3, no bounds: the kit's own limit
/// applies).
#[derive(Default)]
struct Weighted;

impl Model for Weighted {
    const NAME: &'static str = "Weighted";
    fn variables(&self) -> Vec<Variable> {
        vec![
            Variable::uint64(N, "n").structural_parameter().start(3u64),
            Variable::float64(U, "u")
                .input()
                .sized_by(N)
                .start(vec![1.0, 1.0, 1.0]),
            Variable::float64(Y, "y")
                .output()
                .sized_by(N)
                .depends_on(&[U]),
        ]
    }
    fn evaluate(&self, v: &mut Values, _t: f64) -> Result<(), String> {
        let y: Vec<f64> = v
            .get::<f64>(U)
            .iter()
            .enumerate()
            .map(|(i, u)| (i + 1) as f64 * u)
            .collect();
        v.get_mut::<f64>(Y).copy_from_slice(&y);
        Ok(())
    }
}

unsafe fn instance() -> *mut c_void {
    common::fmi3_instance::<Weighted>(false)
}

unsafe fn configure(c: *mut c_void, n: u64) -> c_int {
    assert_eq!(fmi3::enter_configuration_mode::<Weighted>(c), OK);
    assert_eq!(
        fmi3::set_uint64::<Weighted>(c, [N].as_ptr(), 1, [n].as_ptr(), 1),
        OK
    );
    fmi3::exit_configuration_mode::<Weighted>(c)
}

unsafe fn get_y(c: *mut c_void, count: usize) -> (c_int, Vec<f64>) {
    let mut y = vec![0.0; count];
    let status = fmi3::get_float64::<Weighted>(c, [Y].as_ptr(), 1, y.as_mut_ptr(), count);
    (status, y)
}

#[test]
fn fmi3_names_the_parameter_in_the_dimension_and_fmi2_shows_no_array() {
    let xml3 = model_description::<Weighted>(3).expect("FMI 3");
    assert!(xml3.contains("<Dimension valueReference=\"1\"/>"), "{xml3}");
    assert!(!xml3.contains("<Dimension start"), "{xml3}");
    let xml2 = model_description::<Weighted>(2).expect("FMI 2");
    assert!(
        !xml2.contains("name=\"u\"") && !xml2.contains("name=\"y\""),
        "{xml2}"
    );
}

#[test]
fn configuration_mode_resizes_and_get_set_count_the_new_size() {
    unsafe {
        let c = instance();
        assert_eq!(configure(c, 5), OK);
        let u = [1.0, 2.0, 3.0, 4.0, 5.0];
        assert_eq!(
            fmi3::set_float64::<Weighted>(c, [U].as_ptr(), 1, u[..3].as_ptr(), 3),
            ERROR,
            "three values for five elements"
        );
        assert_eq!(
            fmi3::set_float64::<Weighted>(c, [U].as_ptr(), 1, u.as_ptr(), 5),
            OK
        );
        assert_eq!(
            fmi3::enter_initialization_mode::<Weighted>(c, false, 0.0, 0.0, false, 0.0),
            OK
        );
        assert_eq!(
            get_y(c, 3).0,
            ERROR,
            "the start value's size no longer holds"
        );
        let (status, y) = get_y(c, 5);
        assert_eq!(status, OK);
        assert_eq!(y, [1.0, 4.0, 9.0, 16.0, 25.0]);
        // An FMU state keeps the configured size.
        let mut state = null_mut();
        assert_eq!(fmi3::get_fmu_state::<Weighted>(c, &mut state), OK);
        assert_eq!(fmi3::set_fmu_state::<Weighted>(c, state), OK);
        assert_eq!(get_y(c, 5).1, [1.0, 4.0, 9.0, 16.0, 25.0]);
        assert_eq!(fmi3::free_fmu_state::<Weighted>(c, &mut state), OK);
        // Reset: back to the start value's size and elements.
        assert_eq!(fmi3::reset::<Weighted>(c), OK);
        assert_eq!(configure(c, 2), OK);
        assert_eq!(
            fmi3::enter_initialization_mode::<Weighted>(c, false, 0.0, 0.0, false, 0.0),
            OK
        );
        assert_eq!(get_y(c, 2), (OK, vec![1.0, 2.0]), "start elements kept");
        fmi3::free_instance::<Weighted>(c);
    }
}

#[test]
fn zero_and_huge_sizes_are_refused_on_leaving_configuration_mode() {
    unsafe {
        for n in [0, fmu_kit::variable::MAX_CONFIGURED_ELEMENTS + 1, u64::MAX] {
            let c = instance();
            assert_eq!(configure(c, n), ERROR, "n = {n}");
            fmi3::free_instance::<Weighted>(c);
        }
    }
}

#[test]
fn the_table_refuses_a_size_parameter_that_cannot_size() {
    let cases = [
        Variable::float64(N, "n").structural_parameter().start(3.0),
        Variable::uint64(N, "n").parameter().start(3u64),
        Variable::uint64(N, "n").structural_parameter().start(0u64),
    ];
    for parameter in cases {
        let vars = vec![
            parameter,
            Variable::float64(U, "u")
                .input()
                .sized_by(N)
                .start(vec![0.0; 3]),
        ];
        match Table::new("T", vars) {
            Ok(_) => panic!("accepted a table whose size parameter cannot size"),
            Err(e) => assert!(e.contains("sized by 'n'"), "{e}"),
        }
    }
}
