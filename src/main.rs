//! The `cosimo` command line: parse (clap derive), call the library, print, exit code.
//!
//! Exit codes: 0 ok, 1 simulation failed, 2 bad input or usage, 3 regression check failed.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

mod cli;
use cli::check::{check_command, CheckArgs};
use cli::inspect::{inspect, InspectArgs};
use cli::plot::{plot_command, PlotArgs};
use cli::run::{run, RunArgs};
use cli::validate::{validate_command, ValidateArgs};

use cosimo::settings::AlgorithmKind;
use cosimo::Error;

#[derive(Parser)]
#[command(
    name = "cosimo",
    version,
    about = "An FMI 2.0 / 3.0 co-simulation master"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Show what an FMU declares: model, capabilities, default experiment, variables.
    Inspect(InspectArgs),
    /// Simulate a Co-Simulation FMU and write its results to CSV.
    Run(Box<RunArgs>),
    /// Simulate and compare with reference results; exit code 3 when a signal leaves its
    /// tolerance.
    Check(Box<CheckArgs>),
    /// Check an FMU statically: model description consistency and exported functions.
    Validate(ValidateArgs),
    /// Plot one variable from one or more result files into a PNG.
    Plot(PlotArgs),
    /// Stability of a master algorithm on the two-mass oscillator: a map of the spectral radius
    /// over the eigenvalue plane, or the largest stable macro step of a physical system.
    Stability(Box<StabilityArgs>),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let (quiet, log_calls, debug) = match &cli.command {
        Command::Run(r) => (r.quiet, r.log_fmi_calls, r.debug_logging),
        Command::Inspect(_) => (false, false, false),
        Command::Check(c) => (c.quiet, false, false),
        Command::Validate(_) | Command::Plot(_) | Command::Stability(_) => (false, false, false),
    };
    init_logging(quiet, log_calls, debug);
    let result = match cli.command {
        Command::Inspect(args) => inspect(&args),
        Command::Run(args) => run(&args),
        Command::Check(args) => return check_command(&args),
        Command::Validate(args) => return validate_command(&args),
        Command::Plot(args) => plot_command(&args),
        Command::Stability(args) => stability_command(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            // Every error's message already includes its cause.
            eprintln!("error: {error}");
            ExitCode::from(exit_code(&error))
        }
    }
}

/// 1 when a simulation ran and failed, 2 when the input or the usage was wrong.
pub(crate) fn exit_code(error: &Error) -> u8 {
    match error {
        // Bad input found only once the run started is still bad input.
        Error::Simulation { source, .. } => exit_code(source),
        Error::Fmi { .. }
        | Error::Discard { .. }
        | Error::Numerics(_)
        | Error::Internal(_)
        | Error::Worker { .. }
        | Error::WrongState { .. } => 1,
        _ => 2,
    }
}

fn init_logging(quiet: bool, log_fmi_calls: bool, debug_logging: bool) {
    let mut builder = env_logger::Builder::new();
    builder.format_timestamp(None).format_target(false);
    builder.filter_level(if quiet {
        log::LevelFilter::Error
    } else {
        log::LevelFilter::Warn
    });
    if debug_logging {
        builder.filter_module("fmu", log::LevelFilter::Trace);
    }
    if log_fmi_calls {
        builder.filter_module("fmi_calls", log::LevelFilter::Trace);
    }
    builder.parse_env("COSIMO_LOG");
    builder.init();
}

// ---------------------------------------------------------------------------------------------
// cosimo check / cosimo validate

#[derive(Args)]
struct StabilityArgs {
    /// Decomposition of the two-mass oscillator: ff (force/force), fd (force/displacement) or dd.
    #[arg(long, default_value = "ff", value_parser = ["ff", "fd", "dd"])]
    decomposition: String,
    /// Master algorithm; constraint: the two masses joined rigidly (x2 - x1 = 0) with index-1
    /// coupling of --order 2 or 3, the index-1 paper's Appendix A model.
    #[arg(long, default_value = "jacobi", value_parser = ["jacobi", "gauss-seidel", "implicit", "constraint"])]
    algorithm: String,
    /// constraint: the Appendix A ratios alpha_m, alpha_Lr, alpha_Li (Eq. 41).
    #[arg(long, value_delimiter = ',', default_value = "1,1,1")]
    ratios: Vec<f64>,
    /// Extrapolation / interpolation order k.
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u8).range(0..=3))]
    order: u8,
    /// implicit: the thesis' extended coupling (Sect. 3.4): derivative (D) with half-step
    /// values of the forces (F/F), the force and velocity (F/D) or the velocities (D/D);
    /// integral (I) with the forces, the force and position, or the positions; k = 0, 1, 2
    /// select the C, L, Q functions.
    #[arg(long, default_value = "none", value_parser = ["none", "derivative", "integral"])]
    extension: String,
    /// The plane's ranges of the thesis: implicit (Λr in [-2, 0], Λi in [0, 10]) or explicit
    /// ([-1, 0] x [0, 2]); the symmetric model.
    #[arg(long, default_value = "explicit", value_parser = ["explicit", "implicit"])]
    plane: String,
    /// Grid points per axis.
    #[arg(long, default_value_t = 21)]
    points: usize,
    /// Folder with the project's packed FMUs (Oscillator, CouplingSpring).
    #[arg(long, default_value = "target/fmus")]
    fmus: PathBuf,
    /// CSV of the spectral radius per grid point.
    #[arg(long)]
    output: Option<PathBuf>,
    /// PNG stability map.
    #[arg(long)]
    png: Option<PathBuf>,
    /// Instead of a map: the largest stable macro step of the physical system given by
    /// --m1 --c1 --d1 --m2 --c2 --d2 --cc --dc, by bisection in [--h-low, --h-high].
    #[arg(long)]
    max_step: bool,
    #[arg(long, default_value_t = 1.0)]
    m1: f64,
    #[arg(long, default_value_t = 1000.0)]
    c1: f64,
    #[arg(long, default_value_t = 10.0)]
    d1: f64,
    #[arg(long, default_value_t = 1.0)]
    m2: f64,
    #[arg(long, default_value_t = 1000.0)]
    c2: f64,
    #[arg(long, default_value_t = 10.0)]
    d2: f64,
    #[arg(long, default_value_t = 1000.0)]
    cc: f64,
    #[arg(long, default_value_t = 10.0)]
    dc: f64,
    #[arg(long, default_value_t = 1e-4)]
    h_low: f64,
    #[arg(long, default_value_t = 1.0)]
    h_high: f64,
}

fn stability_command(args: &StabilityArgs) -> Result<(), Error> {
    use cosimo::analysis::stability::{
        max_stable_step, symmetric_map, Decomposition, Scheme, TestFmus, TwoMass,
    };
    let scheme = Scheme {
        decomposition: match args.decomposition.as_str() {
            "fd" => Decomposition::ForceDisplacement,
            "dd" => Decomposition::DisplacementDisplacement,
            _ => Decomposition::ForceForce,
        },
        algorithm: match args.algorithm.as_str() {
            "gauss-seidel" => AlgorithmKind::GaussSeidel,
            "implicit" => AlgorithmKind::Implicit,
            "constraint" => AlgorithmKind::Constraint,
            _ => AlgorithmKind::Jacobi,
        },
        order: args.order,
        extension: match args.extension.as_str() {
            "derivative" => cosimo::master::implicit::Extension::Derivative,
            "integral" => cosimo::master::implicit::Extension::Integral,
            _ => cosimo::master::implicit::Extension::None,
        },
    };
    if scheme.extension != cosimo::master::implicit::Extension::None
        && scheme.algorithm != AlgorithmKind::Implicit
    {
        return Err(Error::Usage(
            "--extension applies to the implicit algorithm; add --algorithm implicit".into(),
        ));
    }
    let fmus = TestFmus::in_folder(&args.fmus);
    for path in [&fmus.oscillator, &fmus.spring] {
        if !path.exists() {
            return Err(Error::Usage(format!(
                "{}: not found; the analyser runs the project's own FMUs: build them with `cargo run -p fmu-pack` or give --fmus",
                path.display()
            )));
        }
    }
    if args.max_step && args.algorithm == "constraint" {
        return Err(Error::Usage(
            "--max-step analyses applied-force coupling; draw a map for --algorithm constraint"
                .into(),
        ));
    }
    if args.max_step {
        let model = TwoMass {
            m1: args.m1,
            c1: args.c1,
            d1: args.d1,
            m2: args.m2,
            c2: args.c2,
            d2: args.d2,
            cc: args.cc,
            dc: args.dc,
        };
        let h = max_stable_step(&fmus, &model, scheme, args.h_low, args.h_high, 1e-3)?;
        println!("largest stable macro step: {h:.6e} s");
        return Ok(());
    }
    let map = if args.algorithm == "constraint" {
        if (args.order != 2 && args.order != 3) || args.ratios.len() != 3 {
            return Err(Error::Usage(
                "--algorithm constraint needs --order 2 or 3 and --ratios alpha_m,alpha_Lr,alpha_Li".into(),
            ));
        }
        // The index-1 paper's squares: [-10, 0] x [0, 10] (--plane explicit) or
        // [-1000, 0] x [0, 1000] (--plane implicit).
        let size = if args.plane == "implicit" {
            1000.0
        } else {
            10.0
        };
        let ratios = (args.ratios[0], args.ratios[1], args.ratios[2]);
        cosimo::analysis::stability::constraint_map(
            &fmus,
            args.order,
            ratios,
            (-size, 0.0),
            (0.0, size),
            args.points,
        )?
    } else {
        let (re, im) = if args.plane == "implicit" {
            ((-2.0, -0.02), (0.0, 10.0))
        } else {
            ((-1.0, -0.02), (0.0, 2.0))
        };
        symmetric_map(&fmus, scheme, re, im, args.points)?
    };
    let stable = map
        .iter()
        .filter(|p| p.spectral_radius <= 1.0 + 1e-9)
        .count();
    println!(
        "{stable} of {} grid points stable (spectral radius <= 1)",
        map.len()
    );
    if let Some(path) = &args.output {
        let mut text = String::from("\"lambda_re\",\"lambda_im\",\"spectral_radius\"\n");
        for p in &map {
            text.push_str(&format!(
                "{},{},{}\n",
                p.lambda_re, p.lambda_im, p.spectral_radius
            ));
        }
        std::fs::write(path, text).map_err(|e| Error::io(path, e))?;
    }
    if let Some(path) = &args.png {
        let points: Vec<(f64, f64, bool)> = map
            .iter()
            .map(|p| (p.lambda_re, p.lambda_im, p.spectral_radius <= 1.0 + 1e-9))
            .collect();
        let title = if args.algorithm == "constraint" {
            format!(
                "index-1 constraint coupling k = {}, rigid link, ratios ({})",
                args.order,
                args.ratios
                    .iter()
                    .map(|r| r.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        } else {
            format!(
                "{} {} k = {}, symmetric two-mass oscillator",
                args.decomposition.to_uppercase(),
                args.algorithm,
                args.order
            )
        };
        cosimo::results::plot::plot_stability_map(path, &title, &points)?;
        eprintln!("map: {}", path.display());
    }
    Ok(())
}
