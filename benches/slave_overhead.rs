//! The cost of the `Slave` layer: one `set` + `do_step` + `get` through `dyn Slave` against the
//! same three FMI calls made directly through the raw function pointers of the same library.
//!
//! Run with `cargo bench --bench slave_overhead`. The FMU is the project's Oscillator (exact
//! step by matrix exponential), FMI 2 and FMI 3.

use std::ffi::{c_void, CString};
use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion};

use cosimo::fmu::ffi::fmi2;
use cosimo::fmu::instance::InstanceOptions;
use cosimo::fmu::Fmu;

const H: f64 = 1e-3;

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

fn vr(fmu: &Fmu, name: &str) -> u32 {
    fmu.description()
        .variable(name)
        .expect("Oscillator variable")
        .value_reference
}

fn bench_version(c: &mut Criterion, version: u8) {
    let fmu = Fmu::open(&fmu_pack::fmu_path("Oscillator", version)).expect("Oscillator opens");
    let input = [vr(&fmu, "F")];
    let outputs = [vr(&fmu, "x"), vr(&fmu, "v"), vr(&fmu, "a")];
    let mut group = c.benchmark_group(format!("fmi{version}_set_step_get"));

    let mut slave = fmu
        .instantiate("bench", InstanceOptions::default())
        .expect("instantiates");
    slave.enter_initialization_mode(None, 0.0, None).unwrap();
    slave.exit_initialization_mode().unwrap();
    let mut t = 0.0;
    let mut values = [0.0; 3];
    group.bench_function("slave", |b| {
        b.iter(|| {
            slave.set_float64(&input, &[black_box(0.5)]).unwrap();
            slave.do_step(t, H).unwrap();
            slave.get_float64(&outputs, &mut values).unwrap();
            t += H;
            black_box(values[0])
        })
    });
    drop(slave);

    let library = fmu.library().expect("library loads");
    let token = CString::new(fmu.description().instantiation_token.clone()).unwrap();
    let name = CString::new("raw").unwrap();
    let mut t = 0.0;
    match version {
        2 => {
            let f = library.fmi2().expect("FMI 2 functions");
            let callbacks = fmi2::fmi2CallbackFunctions {
                logger: None,
                allocateMemory: Some(alloc_memory),
                freeMemory: Some(free_memory),
                stepFinished: None,
                componentEnvironment: std::ptr::null_mut(),
            };
            // SAFETY: the calls follow the FMI 2 sequence on one valid component.
            unsafe {
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
                (f.setup_experiment)(comp, fmi2::fmi2False, 0.0, 0.0, fmi2::fmi2False, 0.0);
                (f.enter_initialization_mode)(comp);
                (f.exit_initialization_mode)(comp);
                group.bench_function("raw", |b| {
                    b.iter(|| {
                        let u = [black_box(0.5)];
                        let s1 = (f.set_real)(comp, input.as_ptr(), 1, u.as_ptr());
                        let s2 = f.do_step.expect("fmi*DoStep")(comp, t, H, fmi2::fmi2False);
                        let s3 = (f.get_real)(comp, outputs.as_ptr(), 3, values.as_mut_ptr());
                        assert_eq!(s1 | s2 | s3, 0);
                        t += H;
                        black_box(values[0])
                    })
                });
                (f.terminate)(comp);
                (f.free_instance)(comp);
            }
        }
        _ => {
            let f = library.fmi3().expect("FMI 3 functions");
            // SAFETY: the calls follow the FMI 3 sequence on one valid instance.
            unsafe {
                let inst = f
                    .instantiate_co_simulation
                    .expect("fmi3InstantiateCoSimulation")(
                    name.as_ptr(),
                    token.as_ptr(),
                    std::ptr::null(),
                    false,
                    false,
                    false,
                    false,
                    std::ptr::null(),
                    0,
                    std::ptr::null_mut(),
                    None,
                    None,
                );
                assert!(!inst.is_null());
                (f.enter_initialization_mode)(inst, false, 0.0, 0.0, false, 0.0);
                (f.exit_initialization_mode)(inst);
                let (mut event, mut terminate, mut early, mut last) = (false, false, false, 0.0);
                group.bench_function("raw", |b| {
                    b.iter(|| {
                        let u = [black_box(0.5)];
                        let s1 = (f.set_float64)(inst, input.as_ptr(), 1, u.as_ptr(), 1);
                        let s2 = f.do_step.expect("fmi*DoStep")(
                            inst,
                            t,
                            H,
                            true,
                            &mut event,
                            &mut terminate,
                            &mut early,
                            &mut last,
                        );
                        let s3 = (f.get_float64)(inst, outputs.as_ptr(), 3, values.as_mut_ptr(), 3);
                        assert_eq!(s1 | s2 | s3, 0);
                        t += H;
                        black_box(values[0])
                    })
                });
                (f.terminate)(inst);
                (f.free_instance)(inst);
            }
        }
    }
    group.finish();
}

fn slave_overhead(c: &mut Criterion) {
    bench_version(c, 2);
    bench_version(c, 3);
}

criterion_group!(benches, slave_overhead);
criterion_main!(benches);
