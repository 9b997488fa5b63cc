//! FMI 3 Scheduled Execution of the kit through the C API: the model description declares
//! `<ScheduledExecution>` and the clocks' priorities; `fmi3ActivateModelPartition` runs one
//! partition with its clock alone active, at a time that never goes back; raised output
//! clocks and scheduled countdowns reach the importer through `clockUpdate`; the partition's
//! `lockPreemption` / `unlockPreemption` reach the importer's callbacks in pairs; the
//! Co-Simulation interface is refused.

use std::cell::Cell;
use std::ffi::{c_int, c_void};
use std::ptr::{null, null_mut};

mod common;

use common::{last_log, log3, token};
use fmu_kit::{
    fmi3, model_description, Clock, IntervalVariability, Model, Ticks, Values, Variable,
};

const A_COUNT: u32 = 1;
const B_SEEN: u32 = 2;
const A: u32 = 10;
const B: u32 = 11;
const LATER: u32 = 12;
const DONE: u32 = 13;
const OK: c_int = 0;
const ERROR: c_int = 3;

/// Partition `a` counts; partition `b` copies the count under a preemption lock, raises
/// `done` and schedules `later` 0.5 s on.
#[derive(Default)]
struct Two;

impl Model for Two {
    const NAME: &'static str = "Two";
    const SCHEDULED_EXECUTION: bool = true;
    fn variables(&self) -> Vec<Variable> {
        vec![
            Variable::int32(A_COUNT, "a_count")
                .output()
                .clocked_by(&[A])
                .start(0),
            Variable::int32(B_SEEN, "b_seen")
                .output()
                .clocked_by(&[B])
                .start(0),
        ]
    }
    fn clocks(&self) -> Vec<Clock> {
        vec![
            Clock::periodic(A, "a", IntervalVariability::Constant, 0.1).priority(1),
            Clock::periodic(B, "b", IntervalVariability::Constant, 0.2).priority(2),
            Clock::scheduled_countdown(LATER, "later").priority(3),
            Clock::triggered_output(DONE, "done"),
        ]
    }
    fn evaluate(&self, _v: &mut Values, _t: f64) -> Result<(), String> {
        Ok(())
    }
    fn clock_tick(&self, v: &mut Values, _t: f64, ticks: &mut Ticks<'_>) -> Result<(), String> {
        assert!(
            [A, B, LATER].iter().filter(|&&c| ticks.active(c)).count() == 1,
            "one partition at a time"
        );
        if ticks.active(A) {
            v.set_i32(A_COUNT, v.i32(A_COUNT) + 1);
        }
        if ticks.active(B) {
            ticks.lock_preemption();
            v.set_i32(B_SEEN, v.i32(A_COUNT));
            ticks.unlock_preemption();
            ticks.raise(DONE)?;
            ticks.schedule(LATER, 0.5)?;
        }
        Ok(())
    }
}

thread_local! {
    static UPDATES: Cell<u32> = const { Cell::new(0) };
    static LOCKS: Cell<i32> = const { Cell::new(0) };
    static MAX_LOCKS: Cell<i32> = const { Cell::new(0) };
}

unsafe extern "C" fn clock_update(_env: *mut c_void) {
    UPDATES.with(|u| u.set(u.get() + 1));
}
unsafe extern "C" fn lock() {
    LOCKS.with(|l| l.set(l.get() + 1));
    MAX_LOCKS.with(|m| m.set(m.get().max(LOCKS.with(Cell::get))));
}
unsafe extern "C" fn unlock() {
    LOCKS.with(|l| l.set(l.get() - 1));
}

unsafe fn instance() -> *mut c_void {
    let token = token::<Two>();
    let c = fmi3::instantiate_scheduled_execution::<Two>(
        c"se".as_ptr(),
        token.as_ptr(),
        null(),
        true,
        null_mut(),
        Some(log3),
        Some(clock_update),
        Some(lock),
        Some(unlock),
    );
    assert!(!c.is_null(), "{}", last_log());
    c
}

fn get_i32(c: *mut c_void, vr: u32) -> i32 {
    let mut v = [0];
    unsafe {
        assert_eq!(
            fmi3::get_int32::<Two>(c, [vr].as_ptr(), 1, v.as_mut_ptr(), 1),
            OK
        );
    }
    v[0]
}

#[test]
fn the_description_declares_scheduled_execution_and_priorities() {
    let xml = model_description::<Two>(3).expect("FMI 3 description");
    assert!(
        xml.contains("<ScheduledExecution modelIdentifier=\"Two\""),
        "{xml}"
    );
    assert!(!xml.contains("<CoSimulation"), "{xml}");
    let line = |name: &str| {
        xml.lines()
            .find(|l| l.contains(&format!("name=\"{name}\"")))
            .unwrap_or_else(|| panic!("{name} in {xml}"))
            .to_string()
    };
    assert!(line("a").contains("priority=\"1\""), "{}", line("a"));
    assert!(line("b").contains("priority=\"2\""), "{}", line("b"));
    assert!(!line("done").contains("priority"), "{}", line("done"));
}

#[test]
fn activations_run_one_partition_and_report_clocks_through_clock_update() {
    unsafe {
        let c = instance();
        assert_eq!(
            fmi3::enter_initialization_mode::<Two>(c, false, 0.0, 0.0, false, 0.0),
            OK
        );
        assert_eq!(fmi3::exit_initialization_mode::<Two>(c), OK);
        let interval = |vr: u32| {
            let (mut i, mut q) = ([0.0], [0]);
            assert_eq!(
                fmi3::get_interval_decimal::<Two>(
                    c,
                    [vr].as_ptr(),
                    1,
                    i.as_mut_ptr(),
                    q.as_mut_ptr()
                ),
                OK
            );
            (i[0], q[0])
        };
        assert_eq!(interval(LATER).1, 0, "not scheduled yet: not known");
        let activate = |vr: u32, t: f64| fmi3::activate_model_partition::<Two>(c, vr, t);
        assert_eq!(activate(A, 0.0), OK);
        assert_eq!(activate(A, 0.1), OK);
        assert_eq!(UPDATES.with(Cell::get), 0, "partition a reports nothing");
        assert_eq!(activate(B, 0.1), OK);
        assert_eq!(get_i32(c, B_SEEN), 2, "b ran after both ticks of a");
        assert_eq!(
            UPDATES.with(Cell::get),
            1,
            "b raised done and scheduled later"
        );
        assert_eq!(
            (LOCKS.with(Cell::get), MAX_LOCKS.with(Cell::get)),
            (0, 1),
            "locked once, unlocked"
        );
        assert_eq!(interval(LATER), (0.5, 2));
        assert_eq!(interval(LATER).1, 1, "reported once as changed");
        let mut done = [false];
        assert_eq!(
            fmi3::get_clock::<Two>(c, [DONE].as_ptr(), 1, done.as_mut_ptr()),
            OK
        );
        assert!(done[0]);
        assert_eq!(
            fmi3::get_clock::<Two>(c, [DONE].as_ptr(), 1, done.as_mut_ptr()),
            OK
        );
        assert!(!done[0], "each raise is read once");
        // Time never goes back; output clocks are no partitions.
        assert_eq!(activate(A, 0.05), ERROR);
        assert!(last_log().contains("before"), "{}", last_log());
        assert_eq!(activate(DONE, 0.2), ERROR);
        assert!(last_log().contains("output clock"), "{}", last_log());
        assert_eq!(activate(LATER, 0.6), OK);
        assert_eq!(get_i32(c, A_COUNT), 2);
        // Co-Simulation's step does not exist here.
        let (mut e, mut t, mut r, mut l) = (false, false, false, 0.0);
        assert_eq!(
            fmi3::do_step::<Two>(c, 0.6, 0.1, false, &mut e, &mut t, &mut r, &mut l),
            ERROR
        );
        fmi3::free_instance::<Two>(c);
    }
}

#[test]
fn other_interfaces_and_missing_callbacks_are_refused() {
    unsafe {
        let token = token::<Two>();
        let cs = fmi3::instantiate_co_simulation::<Two>(
            c"cs".as_ptr(),
            token.as_ptr(),
            null(),
            false,
            true,
            false,
            false,
            null(),
            0,
            null_mut(),
            Some(log3),
            None,
        );
        assert!(cs.is_null());
        assert!(
            last_log().contains("Scheduled Execution only"),
            "{}",
            last_log()
        );
        let se = fmi3::instantiate_scheduled_execution::<Two>(
            c"se".as_ptr(),
            token.as_ptr(),
            null(),
            true,
            null_mut(),
            Some(log3),
            None,
            Some(lock),
            Some(unlock),
        );
        assert!(se.is_null());
        assert!(last_log().contains("clockUpdate"), "{}", last_log());
    }
}
