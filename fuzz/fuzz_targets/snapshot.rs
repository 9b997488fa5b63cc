//! `Simulation::restore_bytes` (the Python session's `restore_bytes`, snapshots kept on disk) on
//! bytes from outside, against live simulations of the example two-mass system under several
//! algorithms (fixed step, adaptive with extrapolation, implicit adaptive, with a scenario).
//! After a restore that is accepted, the simulation takes a few steps. An error is a fine
//! answer; a panic, a hang, a stack overflow or running out of memory is a bug.
//!
//! Random bytes rarely get past the header and the system's fingerprint, so the input is
//! `[case, mode, payload...]` and the payload is applied to a genuine snapshot of that case:
//! mode 0 the payload is the snapshot, 1 it replaces the master's state, 2 it patches the
//! master's state, 3 it patches the whole snapshot, 4 it replaces one FMU's state (each patch
//! is three bytes: a little-endian offset and a byte to XOR in). The FMUs are the project's
//! own, packed under target/fmus (`cargo xtask fuzz` packs them first).
#![no_main]

use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use cosimo::master::run::Observer;
use cosimo::master::scenario::ScenarioPlayer;
use cosimo::master::simulation::Simulation;
use cosimo::request::{prepare, RunRequest};
use cosimo::settings::scenario::Scenario;
use cosimo::settings::Overrides;
use libfuzzer_sys::fuzz_target;

/// The layout of a serialised snapshot after its 8-byte tag, as `Simulation::to_bytes` writes it.
#[derive(serde::Serialize, serde::Deserialize, Clone)]
struct Serialised {
    system: String,
    time: f64,
    fmu_states: Vec<Vec<u8>>,
    master: Vec<u8>,
}

const TAG_LEN: usize = 8;

struct Quiet;
impl Observer for Quiet {}

/// A live simulation and a genuine snapshot of it.
struct Case {
    simulation: Simulation,
    tag: Vec<u8>,
    genuine: Serialised,
}

/// What a case runs: a system file, overrides, a scenario.
struct Recipe {
    system: &'static str,
    overrides: Overrides,
    scenario: Option<&'static str>,
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("fuzz/ is inside the workspace")
        .to_path_buf()
}

fn recipes() -> Vec<Recipe> {
    vec![
        Recipe {
            system: "fmus/two-mass-force-force.json",
            overrides: Overrides::default(),
            scenario: None,
        },
        Recipe {
            system: "fmus/two-mass-force-force.json",
            overrides: Overrides {
                adaptive: true,
                extrapolation_order: Some(2),
                ..Overrides::default()
            },
            scenario: None,
        },
        Recipe {
            system: "fmus/two-mass-implicit-adaptive.json",
            overrides: Overrides::default(),
            scenario: None,
        },
        Recipe {
            system: "fmus/two-mass-force-force.json",
            overrides: Overrides::default(),
            scenario: Some("fmus/scenarios/two-mass-scenario.yaml"),
        },
    ]
}

fn build(recipe: &Recipe) -> Case {
    let root = root();
    let request = RunRequest {
        targets: vec![root.join(recipe.system).display().to_string()],
        overrides: recipe.overrides.clone(),
        ..RunRequest::default()
    };
    let prepared = prepare(&request, &mut |_| {}).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (the FMUs under target/fmus are packed by `cargo xtask fuzz`)",
            recipe.system
        )
    });
    let quiet: &mut [Quiet] = &mut [];
    let player = recipe.scenario.map(|file| {
        let scenario = Scenario::read(&root.join(file)).expect("the example scenario reads");
        ScenarioPlayer::new(&prepared.execution, Arc::new(scenario), 0.0)
            .expect("the example scenario fits")
    });
    let mut simulation = Simulation::start(prepared.execution, quiet).expect("starts");
    if let Some(player) = player {
        simulation.play(player).expect("plays");
    }
    simulation.advance_to(0.3, quiet).expect("advances");
    let snapshot = simulation.save().expect("saves");
    let bytes = simulation.to_bytes(&snapshot).expect("serialises");
    drop(snapshot);
    let genuine: Serialised =
        postcard::from_bytes(&bytes[TAG_LEN..]).expect("the snapshot layout of this version");
    simulation.advance_to(0.4, quiet).expect("advances");
    Case {
        simulation,
        tag: bytes[..TAG_LEN].to_vec(),
        genuine,
    }
}

thread_local! {
    /// Each case's simulation, made at its first input and kept for the run.
    static CASES: RefCell<Vec<Option<Case>>> = RefCell::new(recipes().iter().map(|_| None).collect());
}

/// XOR the patches of `payload` (offset lo, offset hi, byte) into `bytes`.
fn patch(bytes: &mut [u8], payload: &[u8]) {
    if bytes.is_empty() {
        return;
    }
    for p in payload.chunks_exact(3) {
        let at = usize::from(u16::from_le_bytes([p[0], p[1]])) % bytes.len();
        bytes[at] ^= p[2];
    }
}

fn encode(tag: &[u8], serialised: &Serialised) -> Vec<u8> {
    let mut bytes = tag.to_vec();
    bytes.extend(postcard::to_allocvec(serialised).expect("serialises"));
    bytes
}

fuzz_target!(|data: &[u8]| {
    let [case, mode, payload @ ..] = data else {
        return;
    };
    let recipes = recipes();
    let index = usize::from(*case) % recipes.len();
    CASES.with(|cases| {
        let mut cases = cases.borrow_mut();
        let case = cases[index].get_or_insert_with(|| build(&recipes[index]));
        let mut snapshot = case.genuine.clone();
        let bytes = match mode % 5 {
            0 => payload.to_vec(),
            1 => {
                snapshot.master = payload.to_vec();
                encode(&case.tag, &snapshot)
            }
            2 => {
                patch(&mut snapshot.master, payload);
                encode(&case.tag, &snapshot)
            }
            3 => {
                let mut bytes = encode(&case.tag, &snapshot);
                patch(&mut bytes, payload);
                bytes
            }
            _ => {
                let which = payload.first().map_or(0, |&b| usize::from(b));
                let states = snapshot.fmu_states.len();
                if states > 0 {
                    snapshot.fmu_states[which % states] = payload.get(1..).unwrap_or(&[]).to_vec();
                }
                encode(&case.tag, &snapshot)
            }
        };
        let quiet: &mut [Quiet] = &mut [];
        // A failed step leaves the simulation to a restore, which the next input makes.
        if case.simulation.restore_bytes(&bytes, quiet).is_ok() {
            for _ in 0..3 {
                if case.simulation.step(quiet).is_err() {
                    break;
                }
            }
        }
    });
});
