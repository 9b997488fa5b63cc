//! The stepping overhead of cosimo itself: 100 Oscillator components in a chain (each driven by
//! its predecessor's position), 10,000 macro steps, through the master (Jacobi sequential,
//! sequential with a result row of every output after every step, and on the worker pool
//! with two threads chosen) against a raw loop making the same FMI calls (set input, doStep, get
//! output per component and step) directly through the function pointers.
//!
//! Run with `cargo bench --bench chain`; divide the reported time by 1,000,000 for the time per
//! component-step.

use std::ffi::{c_void, CString};
use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion};

use cosimo::fmu::ffi::fmi2;
use cosimo::fmu::Fmu;
use cosimo::master::execution::{Execution, RunOptions};
use cosimo::settings::Experiment;
use cosimo::system::{Component, Connection, Endpoint, System};

const COMPONENTS: usize = 100;
const STEPS: usize = 10_000;
const H: f64 = 1e-3;

fn chain(parallel: bool) -> System {
    let fmu = fmu_pack::fmu_path("Oscillator", 2);
    let components = (0..COMPONENTS)
        .map(|i| Component {
            name: format!("m{i}"),
            fmu: fmu.clone(),
            start_values: vec![("x0".into(), if i == 0 { "1" } else { "0" }.into())],
            sub_steps: 1,
            isolate: None,
            call_timeout: None,
            worker_group: None,
            interface: None,
            rank: None,
        })
        .collect();
    let connections = (1..COMPONENTS)
        .map(|i| {
            let end = |c: usize, v: &str| Endpoint {
                component: format!("m{c}"),
                variable: v.into(),
            };
            Connection::new(end(i - 1, "x"), end(i, "F"))
        })
        .collect();
    System {
        components,
        connections,
        experiment: Experiment {
            stop: STEPS as f64 * H * 2.0,
            step: H,
            parallel,
            ..Experiment::default()
        },
    }
}

/// The chain through the master; `record`: a result row of every output read after every
/// step (the record path), else no row at all (the step plan and the exchange alone).
fn master(c: &mut Criterion, name: &str, parallel: bool, record: bool) {
    let system = chain(parallel);
    c.bench_function(name, |b| {
        b.iter_batched(
            || {
                let options = RunOptions {
                    threads: 2,
                    ..RunOptions::default()
                };
                let mut exec =
                    Execution::instantiate(&system, &options).expect("the chain instantiates");
                exec.initialize().expect("the chain initializes");
                let row = exec.new_row();
                (exec, row)
            },
            |(mut exec, mut row)| {
                for _ in 0..STEPS {
                    exec.step(H).expect("steps");
                    if record {
                        exec.read_row(&mut row).expect("reads a row");
                        black_box(&row);
                    }
                }
                exec
            },
            BatchSize::PerIteration,
        )
    });
}

extern "C" {
    fn calloc(n: usize, size: usize) -> *mut c_void;
    fn free(p: *mut c_void);
}
unsafe extern "C" fn alloc_memory(n: usize, size: usize) -> *mut c_void {
    calloc(n, size)
}
unsafe extern "C" fn free_memory(p: *mut c_void) {
    free(p)
}

fn raw(c: &mut Criterion) {
    let fmu = Fmu::open(&fmu_pack::fmu_path("Oscillator", 2)).expect("Oscillator opens");
    let md = fmu.description().clone();
    let vr = |name: &str| md.variable(name).expect("variable").value_reference;
    let (f_vr, x_vr, x0_vr) = ([vr("F")], [vr("x")], [vr("x0")]);
    let library = fmu.library().expect("library loads").clone();
    let f = library.fmi2().expect("FMI 2");
    let do_step = f
        .do_step
        .expect("a Co-Simulation library exports fmi2DoStep");
    let token = CString::new(md.instantiation_token.clone()).unwrap();
    let callbacks = fmi2::fmi2CallbackFunctions {
        logger: None,
        allocateMemory: Some(alloc_memory),
        freeMemory: Some(free_memory),
        stepFinished: None,
        componentEnvironment: std::ptr::null_mut(),
    };
    c.bench_function("chain/raw_calls", |b| {
        b.iter_batched(
            || {
                // SAFETY: the FMI 2 call sequence on fresh, valid components.
                unsafe {
                    (0..COMPONENTS)
                        .map(|i| {
                            let name = CString::new(format!("m{i}")).unwrap();
                            let comp = (f.instantiate)(
                                name.as_ptr(),
                                fmi2::fmi2CoSimulation,
                                token.as_ptr(),
                                std::ptr::null(),
                                &callbacks,
                                fmi2::fmi2False,
                                fmi2::fmi2False,
                            );
                            assert!(!comp.is_null());
                            (f.set_real)(
                                comp,
                                x0_vr.as_ptr(),
                                1,
                                [if i == 0 { 1.0 } else { 0.0 }].as_ptr(),
                            );
                            (f.setup_experiment)(
                                comp,
                                fmi2::fmi2False,
                                0.0,
                                0.0,
                                fmi2::fmi2False,
                                0.0,
                            );
                            (f.enter_initialization_mode)(comp);
                            (f.exit_initialization_mode)(comp);
                            comp
                        })
                        .collect::<Vec<_>>()
                }
            },
            |comps| {
                let mut x = vec![0.0; COMPONENTS];
                let mut t = 0.0;
                for _ in 0..STEPS {
                    // SAFETY: as above.
                    unsafe {
                        for (i, &comp) in comps.iter().enumerate() {
                            if i > 0 {
                                let u = [x[i - 1]];
                                (f.set_real)(comp, f_vr.as_ptr(), 1, u.as_ptr());
                            }
                            do_step(comp, t, H, fmi2::fmi2False);
                        }
                        for (i, &comp) in comps.iter().enumerate() {
                            (f.get_real)(comp, x_vr.as_ptr(), 1, x[i..].as_mut_ptr());
                        }
                    }
                    t += H;
                }
                black_box(&x);
                for comp in comps {
                    // SAFETY: each component is freed once.
                    unsafe {
                        (f.terminate)(comp);
                        (f.free_instance)(comp);
                    }
                }
            },
            BatchSize::PerIteration,
        )
    });
}

fn benches(c: &mut Criterion) {
    raw(c);
    master(c, "chain/master_jacobi", false, false);
    master(c, "chain/master_jacobi_recording", false, true);
    master(c, "chain/master_jacobi_pool_2_threads", true, false);
}

criterion_group! {
    name = chain_benches;
    config = Criterion::default().sample_size(10).measurement_time(Duration::from_secs(30)).warm_up_time(Duration::from_secs(3));
    targets = benches
}
criterion_main!(chain_benches);
