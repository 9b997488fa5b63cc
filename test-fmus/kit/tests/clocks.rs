//! FMI 3 clocks of the kit through the C API: the model description's `<Clock>` elements and
//! `clocks` attributes, clocked inputs refused outside their ticks, the clocked partition run
//! once per Event Mode instant, output clocks raised there, countdown intervals reported once
//! as changed, clocks inactive again after `fmi3UpdateDiscreteStates`.

use std::ffi::c_int;

mod common;

use common::{fmi3_instance, last_log};
use fmu_kit::{
    fmi3, model_description, Clock, IntervalVariability, Model, Table, Ticks, Values, Variable,
};

const U: u32 = 1;
const N: u32 = 2;
const TICK: u32 = 10;
const DONE: u32 = 11;
const LATER: u32 = 12;
const OK: c_int = 0;
const ERROR: c_int = 3;

/// Counts ticks of `tick` in `n`, takes `u` into nothing, raises `done`, schedules `later`.
#[derive(Default)]
struct Clocked;

impl Model for Clocked {
    const NAME: &'static str = "Clocked";
    fn variables(&self) -> Vec<Variable> {
        vec![
            Variable::float64(U, "u")
                .input()
                .clocked_by(&[TICK])
                .start(0.0),
            Variable::int32(N, "n")
                .output()
                .discrete()
                .start(0)
                .depends_on(&[]),
        ]
    }
    fn clocks(&self) -> Vec<Clock> {
        vec![
            Clock::triggered_input(TICK, "tick"),
            Clock::triggered_output(DONE, "done"),
            Clock::countdown(LATER, "later", 0.5),
        ]
    }
    fn evaluate(&self, _v: &mut Values, _t: f64) -> Result<(), String> {
        Ok(())
    }
    fn clock_tick(&self, v: &mut Values, _t: f64, ticks: &mut Ticks<'_>) -> Result<(), String> {
        if ticks.active(TICK) {
            v.set_i32(N, v.i32(N) + 1);
            ticks.raise(DONE)?;
            ticks.schedule(LATER, 0.25)?;
        }
        Ok(())
    }
}

#[test]
fn the_description_declares_clocks_and_clocked_variables() {
    let xml = model_description::<Clocked>(3).expect("FMI 3 description");
    assert!(xml.contains("hasEventMode=\"true\""), "{xml}");
    let line = |name: &str| {
        xml.lines()
            .find(|l| l.contains(&format!("name=\"{name}\"")))
            .unwrap_or_else(|| panic!("{name} in {xml}"))
            .to_string()
    };
    assert!(line("u").contains("clocks=\"10\""));
    assert!(
        line("tick").starts_with("    <Clock")
            && line("tick").contains("intervalVariability=\"triggered\"")
    );
    assert!(line("done").contains("causality=\"output\""));
    assert!(line("later").contains("intervalVariability=\"countdown\""));
    assert!(
        !line("later").contains("intervalDecimal"),
        "a countdown interval is reported, not declared"
    );
    let bad = Clock::periodic(U, "clash", IntervalVariability::Fixed, 0.1);
    let table = Table::new("T", Clocked.variables()).unwrap();
    assert!(fmu_kit::clock::check_clocks(&table, &[bad]).is_err());
}

#[test]
fn a_tick_runs_the_partition_once_and_ends_with_the_instant() {
    unsafe {
        let c = fmi3_instance::<Clocked>(true);
        assert_eq!(
            fmi3::enter_initialization_mode::<Clocked>(c, false, 0.0, 0.0, false, 0.0),
            OK
        );
        assert_eq!(fmi3::exit_initialization_mode::<Clocked>(c), OK);
        let (mut interval, mut qualifier) = ([0.0], [0]);
        assert_eq!(
            fmi3::get_interval_decimal::<Clocked>(
                c,
                [LATER].as_ptr(),
                1,
                interval.as_mut_ptr(),
                qualifier.as_mut_ptr()
            ),
            OK
        );
        assert_eq!(
            (interval[0], qualifier[0]),
            (0.5, 2),
            "the first countdown, changed"
        );
        assert_eq!(fmi3::enter_step_mode::<Clocked>(c), OK);
        // Step Mode: no clocked input, no clock.
        let set_u = |x: f64| fmi3::set_float64::<Clocked>(c, [U].as_ptr(), 1, [x].as_ptr(), 1);
        assert_eq!(set_u(1.0), ERROR);
        assert!(last_log().contains("clocked"), "{}", last_log());
        assert_eq!(
            fmi3::set_clock::<Clocked>(c, [TICK].as_ptr(), 1, [true].as_ptr()),
            ERROR
        );
        assert_eq!(fmi3::enter_event_mode::<Clocked>(c), OK);
        assert_eq!(set_u(1.0), ERROR, "not before its clock ticks");
        assert_eq!(
            fmi3::set_clock::<Clocked>(c, [DONE].as_ptr(), 1, [true].as_ptr()),
            ERROR,
            "an output clock"
        );
        assert_eq!(
            fmi3::set_clock::<Clocked>(c, [TICK].as_ptr(), 1, [true].as_ptr()),
            OK
        );
        assert_eq!(set_u(1.0), OK);
        let mut active = [false; 3];
        for _ in 0..2 {
            assert_eq!(
                fmi3::get_clock::<Clocked>(c, [TICK, DONE, LATER].as_ptr(), 3, active.as_mut_ptr()),
                OK
            );
            assert_eq!(active, [true, true, false]);
        }
        let mut n = [0];
        assert_eq!(
            fmi3::get_int32::<Clocked>(c, [N].as_ptr(), 1, n.as_mut_ptr(), 1),
            OK
        );
        assert_eq!(n[0], 1, "the partition ran once for two reads");
        let mut flags = [false; 5];
        let mut next = 0.0;
        assert_eq!(
            fmi3::update_discrete_states::<Clocked>(
                c,
                &mut flags[0],
                &mut flags[1],
                &mut flags[2],
                &mut flags[3],
                &mut flags[4],
                &mut next
            ),
            OK
        );
        assert_eq!(
            fmi3::get_clock::<Clocked>(c, [TICK, DONE].as_ptr(), 2, active.as_mut_ptr()),
            OK
        );
        assert_eq!(active[..2], [false, false], "the instant is over");
        assert_eq!(
            fmi3::get_interval_decimal::<Clocked>(
                c,
                [LATER].as_ptr(),
                1,
                interval.as_mut_ptr(),
                qualifier.as_mut_ptr()
            ),
            OK
        );
        assert_eq!(
            (interval[0], qualifier[0]),
            (0.25, 2),
            "scheduled by the tick"
        );
        assert_eq!(
            fmi3::get_interval_decimal::<Clocked>(
                c,
                [LATER].as_ptr(),
                1,
                interval.as_mut_ptr(),
                qualifier.as_mut_ptr()
            ),
            OK
        );
        assert_eq!(qualifier[0], 1, "reported once as changed");
        assert_eq!(fmi3::enter_step_mode::<Clocked>(c), OK);
        assert_eq!(set_u(2.0), ERROR, "the clock is inactive again");
        fmi3::free_instance::<Clocked>(c);
    }
}
