//! `cosimo stability`: the stability analyser on a system file, or the thesis' two-mass
//! studies.

use std::path::{Path, PathBuf};

use clap::Args;

use super::{out, say};
use cosimo::numbers::seconds;

use cosimo::settings::{AlgorithmKind, Labels, Overrides};
use cosimo::Error;

#[derive(Args)]
pub(crate) struct StabilityArgs {
    /// A JSON system file with a "stability" section (the FMU states and the start values that
    /// set them): the spectral radius of that system's one-step map with its own algorithm at
    /// its macro step, or --max-stable-step, --map, --scan. Without a system file: the stability
    /// thesis' two-mass oscillator (--decomposition, --plane, ...).
    pub(crate) system: Option<PathBuf>,
    /// Thesis: decomposition of the two-mass oscillator: ff (force/force), fd
    /// (force/displacement) or dd [default: ff].
    #[arg(long, value_parser = ["ff", "fd", "dd"])]
    pub(crate) decomposition: Option<String>,
    /// Master algorithm [thesis default: jacobi; with a system file: the file's]. Thesis with
    /// constraint: the two masses joined rigidly (x2 - x1 = 0) with index-1 coupling of
    /// --extrapolation-order 2 or 3, the index-1 paper's Appendix A model.
    #[arg(long, value_parser = ["jacobi", "gauss-seidel", "implicit", "constraint"])]
    pub(crate) algorithm: Option<String>,
    /// Thesis map: the model's ratios. Applied-force coupling: alpha, a_Re, a_Im, k_Re, k_Im
    /// (Eqs. 3.31: the mass ratio, subsystem 2's eigenvalue parts and the coupling mode's over
    /// subsystem 1's); --algorithm constraint: the Appendix A ratios alpha_m, alpha_Lr,
    /// alpha_Li (Eq. 41) [default: all 1, the symmetric model].
    #[arg(long, value_delimiter = ',')]
    pub(crate) ratios: Option<Vec<f64>>,
    /// Extrapolation / interpolation order k [thesis default: 0; with a system file: the
    /// file's].
    #[arg(long, visible_alias = "order", value_parser = clap::value_parser!(u8).range(0..=3), allow_negative_numbers = true)]
    pub(crate) extrapolation_order: Option<u8>,
    /// implicit: the thesis' extended coupling (Sect. 3.4): derivative (D) with half-step
    /// values of the forces (F/F), the force and velocity (F/D) or the velocities (D/D);
    /// integral (I) with the forces, the force and position, or the positions; k = 0, 1, 2
    /// select the C, L, Q functions. With a system file: its connections marked "halfStep".
    #[arg(long, value_parser = ["none", "derivative", "integral"])]
    pub(crate) extension: Option<String>,
    /// Thesis map: the square of subsystem 1's eigenvalue plane (Λr1, Λi1), as the papers
    /// draw it: explicit ([-1, 0] x [0, 2]) or implicit ([-2, 0] x [0, 10]) for applied-force
    /// coupling [default: explicit]; 10 ([-10, 0] x [0, 10]) or 1000 ([-1000, 0] x [0, 1000])
    /// for --algorithm constraint [default: 10].
    #[arg(long, value_parser = ["explicit", "implicit", "10", "1000"])]
    pub(crate) plane: Option<String>,
    /// Grid points per axis of a map, or step sizes of --scan [default: 21].
    #[arg(long, allow_negative_numbers = true)]
    pub(crate) points: Option<usize>,
    /// Thesis: folder with the project's packed FMUs (`cargo run -p fmu-pack` builds them)
    /// [default: target/fmus of the current folder, else the one beside this cosimo's build].
    #[arg(long, value_name = "DIR")]
    pub(crate) fmus: Option<PathBuf>,
    /// CSV of the spectral radius per grid point (or per step size of --scan).
    #[arg(long, short, value_name = "FILE")]
    pub(crate) output: Option<PathBuf>,
    /// Stability map: a heat map of the spectral radius with the stability limit (spectral
    /// radius 1) drawn on top, as PNG or SVG by the extension (formerly --png).
    #[arg(long, alias = "png", value_name = "FILE")]
    pub(crate) plot: Option<PathBuf>,
    /// Instead of a map: the largest stable macro step above --h-low: the first loss of
    /// stability on a grid of 100 steps per decade up to --h-high, then bisection (a scheme
    /// unstable in a window and stable again above it is reported at the window's start);
    /// --h-high when all are stable (thesis: of the physical system given by --m1 --c1 --d1
    /// --m2 --c2 --d2 --cc --dc). Formerly --max-step, which `run` uses for the largest step
    /// of --adaptive.
    #[arg(long, alias = "max-step")]
    pub(crate) max_stable_step: bool,
    /// With a system file: the spectral radius over a grid of two parameters, --x and --y.
    #[arg(long)]
    pub(crate) map: bool,
    /// --map: the first axis, PARAMETER=LOW:HIGH, PARAMETER `component.parameter` or a
    /// named parameter of the file's "stability" section.
    #[arg(long, allow_hyphen_values = true)]
    pub(crate) x: Option<String>,
    /// --map: the second axis, PARAMETER=LOW:HIGH.
    #[arg(long, allow_hyphen_values = true)]
    pub(crate) y: Option<String>,
    /// With a system file: the spectral radius at --points macro steps spaced geometrically
    /// in [--h-low, --h-high].
    #[arg(long)]
    pub(crate) scan: bool,
    /// With a system file: the macro step of the map (or of the spectral radius) instead of
    /// the file's experiment.stepSize.
    #[arg(long, allow_negative_numbers = true)]
    pub(crate) step_size: Option<f64>,
    /// Thesis, --max-stable-step: mass 1 [default: 1].
    #[arg(long, allow_negative_numbers = true)]
    pub(crate) m1: Option<f64>,
    /// Thesis, --max-stable-step: stiffness of mass 1 [default: 1000].
    #[arg(long, allow_negative_numbers = true)]
    pub(crate) c1: Option<f64>,
    /// Thesis, --max-stable-step: damping of mass 1 [default: 10].
    #[arg(long, allow_negative_numbers = true)]
    pub(crate) d1: Option<f64>,
    /// Thesis, --max-stable-step: mass 2 [default: 1].
    #[arg(long, allow_negative_numbers = true)]
    pub(crate) m2: Option<f64>,
    /// Thesis, --max-stable-step: stiffness of mass 2 [default: 1000].
    #[arg(long, allow_negative_numbers = true)]
    pub(crate) c2: Option<f64>,
    /// Thesis, --max-stable-step: damping of mass 2 [default: 10].
    #[arg(long, allow_negative_numbers = true)]
    pub(crate) d2: Option<f64>,
    /// Thesis, --max-stable-step: coupling stiffness [default: 1000].
    #[arg(long, allow_negative_numbers = true)]
    pub(crate) cc: Option<f64>,
    /// Thesis, --max-stable-step: coupling damping [default: 10].
    #[arg(long, allow_negative_numbers = true)]
    pub(crate) dc: Option<f64>,
    /// --max-stable-step, --scan: the smallest macro step [default: 1e-4].
    #[arg(long, allow_negative_numbers = true)]
    pub(crate) h_low: Option<f64>,
    /// --max-stable-step, --scan: the largest macro step [default: 1].
    #[arg(long, allow_negative_numbers = true)]
    pub(crate) h_high: Option<f64>,
    /// Print nothing but errors and the results (no line naming the map written).
    #[arg(long, short)]
    pub(crate) quiet: bool,
}

pub(crate) fn stability_command(args: &StabilityArgs) -> Result<(), Error> {
    use cosimo::analysis::linear::{
        is_stable, write_map_csv, write_scan_csv, Axis, LinearAnalyser, MapPoint, STABILITY_LIMIT,
    };
    use cosimo::analysis::stability::{
        constraint_map, max_stable_step, plane_map, Decomposition, Plane, PlaneCount, Scheme,
        TestFmus, TwoMass,
    };
    use cosimo::master::implicit::Extension;
    // The first of `options` that was given is refused: "OPTION why".
    let refuse = |options: &[(&str, bool)], why: &str| match options.iter().find(|o| o.1) {
        Some((option, _)) => Err(Error::Usage(format!("{option} {why}"))),
        None => Ok(()),
    };
    let physical = [
        ("--m1", args.m1.is_some()),
        ("--c1", args.c1.is_some()),
        ("--d1", args.d1.is_some()),
        ("--m2", args.m2.is_some()),
        ("--c2", args.c2.is_some()),
        ("--d2", args.d2.is_some()),
        ("--cc", args.cc.is_some()),
        ("--dc", args.dc.is_some()),
    ];
    let bounds = [
        ("--h-low", args.h_low.is_some()),
        ("--h-high", args.h_high.is_some()),
    ];
    let (h_low, h_high) = (args.h_low.unwrap_or(1e-4), args.h_high.unwrap_or(1.0));
    let points = args.points.unwrap_or(21);
    cosimo::analysis::linear::check_points(points)
        .map_err(|message| Error::Usage(format!("--points: {message}")))?;
    let extension = args.extension.as_deref().map(|e| match e {
        "derivative" => Extension::Derivative,
        "integral" => Extension::Integral,
        _ => Extension::None,
    });
    let stable = |rho: f64| if is_stable(rho) { "stable" } else { "unstable" };
    // An image format the map cannot be drawn in is refused before the map is computed.
    if let Some(path) = &args.plot {
        cosimo::results::plot::ImageFormat::of_path(path)?;
    }
    let draw = |path: &Path, title: &str, axes: (&str, &str), map: &[MapPoint]| {
        let points: Vec<(f64, f64, f64)> =
            map.iter().map(|p| (p.x, p.y, p.spectral_radius)).collect();
        cosimo::results::stability_map::plot_stability_map(
            path,
            title,
            axes,
            &points,
            STABILITY_LIMIT,
        )?;
        if !args.quiet {
            say!("map: {}", path.display());
        }
        Ok::<(), Error>(())
    };

    if let Some(path) = &args.system {
        // A user's system: its own algorithm (unless --algorithm, --extrapolation-order or --extension
        // change it) at its own macro step.
        let thesis = [
            ("--decomposition", args.decomposition.is_some()),
            ("--ratios", args.ratios.is_some()),
            ("--plane", args.plane.is_some()),
            ("--fmus", args.fmus.is_some()),
        ];
        refuse(
            &[&thesis[..], &physical[..]].concat(),
            "belongs to the stability thesis' two-mass study, which runs without a system file; with a system file, set parameters in the file or map them with --map --x ... --y ...",
        )?;
        let studies = [
            ("--max-stable-step", args.max_stable_step),
            ("--map", args.map),
            ("--scan", args.scan),
        ];
        if studies.iter().filter(|s| s.1).count() > 1 {
            return Err(Error::Usage(
                "--max-stable-step, --map and --scan are separate studies: choose one".into(),
            ));
        }
        if !args.map {
            refuse(
                &[("--x", args.x.is_some()), ("--y", args.y.is_some())],
                "gives an axis of --map; add --map",
            )?;
            refuse(
                &[("--plot", args.plot.is_some())],
                "draws the map of --map; add --map --x ... --y ...",
            )?;
        }
        if args.max_stable_step || args.scan {
            refuse(
                &[("--step-size", args.step_size.is_some())],
                "fixes the macro step, which --max-stable-step and --scan vary; give --h-low and --h-high instead",
            )?;
        } else {
            refuse(
                &bounds,
                "bounds the macro step of --max-stable-step or --scan; add one of them",
            )?;
        }
        if !args.map && !args.scan {
            refuse(
                &[
                    ("--points", args.points.is_some()),
                    ("--output", args.output.is_some()),
                ],
                "applies to --map or --scan; add one of them",
            )?;
        }
        let (mut system, study) = cosimo::analysis::study::read(path)?;
        system.experiment = Overrides {
            algorithm: args.algorithm.as_deref().and_then(AlgorithmKind::parse),
            extrapolation_order: args.extrapolation_order,
            extension,
            step: args.step_size,
            ..Overrides::default()
        }
        .apply(&system.experiment, Labels::SYSTEM_FILE)
        .map_err(Error::Usage)?;
        let mut analyser = LinearAnalyser::new(&system, &study)?;
        if args.max_stable_step {
            let h = analyser.max_stable_step(h_low, h_high, 1e-3)?;
            out!("largest stable macro step: {h:.6e} s");
        } else if args.scan {
            let scan = analyser.step_scan(h_low, h_high, points)?;
            for (h, rho) in &scan {
                out!("H = {h:.6e} s: spectral radius {rho:.9} ({})", stable(*rho));
            }
            if let Some(path) = &args.output {
                write_scan_csv(path, &scan)?;
            }
        } else if args.map {
            let axis = |option: &str, text: &Option<String>| match text {
                Some(text) => Axis::parse(text).map_err(|e| Error::Usage(format!("{option} {e}"))),
                None => Err(Error::Usage(format!(
                    "--map needs {option} PARAMETER=LOW:HIGH (both --x and --y)"
                ))),
            };
            let (x, y) = (axis("--x", &args.x)?, axis("--y", &args.y)?);
            let map = analyser.parameter_map(&x, &y, points)?;
            let count = map.iter().filter(|p| p.stable()).count();
            out!(
                "{count} of {} grid points stable (spectral radius <= 1) at H = {}",
                map.len(),
                seconds(analyser.step())
            );
            let axes = (x.parameter.as_str(), y.parameter.as_str());
            if let Some(out) = &args.output {
                write_map_csv(out, axes, &map)?;
            }
            if let Some(image) = &args.plot {
                let title = format!(
                    "{}, {} k = {}, H = {}",
                    path.file_name().unwrap_or_default().to_string_lossy(),
                    system.experiment.algorithm.kind(),
                    system.experiment.algorithm.extrapolation_order(),
                    seconds(analyser.step())
                );
                draw(image, &title, axes, &map)?;
            }
        } else {
            out!("state vector: {}", analyser.describe());
            let rho = analyser.spectral_radius()?;
            out!(
                "spectral radius at H = {}: {rho:.9} ({})",
                seconds(analyser.step()),
                stable(rho)
            );
        }
        return Ok(());
    }

    // The stability thesis' two-mass oscillator.
    refuse(
        &[
            ("--map", args.map),
            ("--x", args.x.is_some()),
            ("--y", args.y.is_some()),
            ("--scan", args.scan),
            ("--step-size", args.step_size.is_some()),
        ],
        "studies a system file: cosimo stability SYSTEM.json ...",
    )?;
    let algorithm = args.algorithm.as_deref().unwrap_or("jacobi");
    let order = args.extrapolation_order.unwrap_or(0);
    let constraint = algorithm == "constraint";
    if constraint {
        refuse(
            &[("--decomposition", args.decomposition.is_some())],
            "cuts the two-mass oscillator for applied-force coupling; --algorithm constraint studies the rigidly coupled model",
        )?;
        refuse(
            &[("--max-stable-step", args.max_stable_step)],
            "analyses applied-force coupling; draw a map for --algorithm constraint",
        )?;
    }
    if algorithm != "implicit" {
        refuse(
            &[("--extension", args.extension.is_some())],
            "applies to the implicit algorithm only; add --algorithm implicit",
        )?;
    }
    if args.max_stable_step {
        refuse(
            &[
                ("--plane", args.plane.is_some()),
                ("--ratios", args.ratios.is_some()),
                ("--points", args.points.is_some()),
                ("--output", args.output.is_some()),
                ("--plot", args.plot.is_some()),
            ],
            "belongs to a map; --max-stable-step finds one macro step",
        )?;
    } else {
        refuse(
            &[&physical[..], &bounds[..]].concat(),
            "gives the physical system of --max-stable-step; add --max-stable-step",
        )?;
    }
    let decomposition = args.decomposition.as_deref().unwrap_or("ff");
    let scheme = Scheme {
        decomposition: match decomposition {
            "fd" => Decomposition::ForceDisplacement,
            "dd" => Decomposition::DisplacementDisplacement,
            _ => Decomposition::ForceForce,
        },
        algorithm: AlgorithmKind::parse(algorithm).unwrap_or(AlgorithmKind::Jacobi),
        order,
        extension: extension.unwrap_or(Extension::None),
    };
    let fmus = TestFmus::in_folder(&match &args.fmus {
        Some(folder) => folder.clone(),
        None => default_fmus()?,
    });
    if args.max_stable_step {
        let model = TwoMass {
            m1: args.m1.unwrap_or(1.0),
            c1: args.c1.unwrap_or(1000.0),
            d1: args.d1.unwrap_or(10.0),
            m2: args.m2.unwrap_or(1.0),
            c2: args.c2.unwrap_or(1000.0),
            d2: args.d2.unwrap_or(10.0),
            cc: args.cc.unwrap_or(1000.0),
            dc: args.dc.unwrap_or(10.0),
        };
        let h = max_stable_step(&fmus, &model, scheme, h_low, h_high, 1e-3)?;
        out!("largest stable macro step: {h:.6e} s");
        return Ok(());
    }
    let plane = match (constraint, args.plane.as_deref()) {
        (false, None | Some("explicit")) => Plane::ThesisExplicit,
        (false, Some("implicit")) => Plane::ThesisImplicit,
        (true, None | Some("10")) => Plane::Index1Ten,
        (true, Some("1000")) => Plane::Index1Thousand,
        (false, Some(other)) => {
            return Err(Error::Usage(format!(
                "--plane {other} is a square of the index-1 paper (--algorithm constraint); the thesis' maps of applied-force coupling use --plane explicit or implicit"
            )))
        }
        (true, Some(other)) => {
            return Err(Error::Usage(format!(
                "--plane {other} is a square of the thesis' maps; --algorithm constraint draws the index-1 paper's squares: --plane 10 or 1000"
            )))
        }
    };
    let (re, im) = plane.ranges();
    let wanted = if constraint { 3 } else { 5 };
    let ratios = args.ratios.clone().unwrap_or_else(|| vec![1.0; wanted]);
    if ratios.len() != wanted || ratios.iter().any(|r| !(r.is_finite() && *r > 0.0)) {
        return Err(Error::Usage(format!(
            "--ratios: {wanted} positive numbers, {}, not {}",
            if constraint {
                "alpha_m,alpha_Lr,alpha_Li (the index-1 paper's Eq. 41)"
            } else {
                "alpha,a_Re,a_Im,k_Re,k_Im (the thesis' Eqs. 3.31)"
            },
            ratios
                .iter()
                .map(|r| r.to_string())
                .collect::<Vec<_>>()
                .join(",")
        )));
    }
    let map = if constraint {
        if order != 2 && order != 3 {
            return Err(Error::Usage(
                "--algorithm constraint needs --extrapolation-order 2 or 3 (the index-1 multipliers' polynomial)"
                    .into(),
            ));
        }
        constraint_map(
            &fmus,
            order,
            (ratios[0], ratios[1], ratios[2]),
            re,
            im,
            points,
        )?
    } else {
        let ratios = [ratios[0], ratios[1], ratios[2], ratios[3], ratios[4]];
        plane_map(&fmus, scheme, ratios, re, im, points)?
    };
    let count = PlaneCount::of(&map);
    out!(
        "{} of {} damped grid points stable (Λr1 < 0; spectral radius <= 1) on Λr1 in [{}, {}], Λi1 in [{}, {}]",
        count.damped_stable,
        count.damped,
        re.0,
        re.1,
        im.0,
        im.1
    );
    if count.axis > 0 {
        out!(
            "undamped axis Λr1 = 0 ({} points, not counted: the coupled system itself has spectral radius 1 there): spectral radius from {:.9} to {:.9}",
            count.axis,
            count.axis_range.0,
            count.axis_range.1
        );
    }
    if let Some(path) = &args.output {
        write_map_csv(path, ("lambda_re", "lambda_im"), &map)?;
    }
    if let Some(path) = &args.plot {
        let listed = ratios
            .iter()
            .map(|r| r.to_string())
            .collect::<Vec<_>>()
            .join(", ");
        let title = if constraint {
            format!("index-1 constraint coupling k = {order}, rigid link, ratios ({listed})")
        } else if ratios.iter().all(|&r| r == 1.0) {
            format!(
                "{} {algorithm} k = {order}, symmetric two-mass oscillator",
                decomposition.to_uppercase()
            )
        } else {
            format!(
                "{} {algorithm} k = {order}, two-mass oscillator, ratios ({listed})",
                decomposition.to_uppercase()
            )
        };
        let axes = (
            "Λr1 (real part of H·λ of subsystem 1)",
            "Λi1 (imaginary part)",
        );
        draw(path, &title, axes, &map)?;
    }
    Ok(())
}

/// The folder of the project's FMUs when --fmus is not given: target/fmus of the current
/// folder (a checkout), else the one beside the build this cosimo runs from
/// (target/debug/cosimo -> target/fmus), so that the study runs from any folder.
fn default_fmus() -> Result<PathBuf, Error> {
    let mut tried = vec![PathBuf::from("target/fmus")];
    if let Some(build) = std::env::current_exe()
        .ok()
        .and_then(|exe| Some(exe.parent()?.parent()?.join("fmus")))
    {
        tried.push(build);
    }
    if let Some(found) = tried.iter().find(|folder| folder.is_dir()) {
        return Ok(found.clone());
    }
    Err(Error::Usage(format!(
        "the stability thesis' two-mass study runs the project's own FMUs, and they are not in {}: build them in a cosimo checkout with `cargo run -p fmu-pack` and give their folder with --fmus DIR (or run from the checkout), or study a system file: cosimo stability SYSTEM.json",
        tried
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(" or ")
    )))
}
