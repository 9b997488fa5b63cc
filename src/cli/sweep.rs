//! `cosimo sweep`: the runs of a study on this machine's cores (or one shard of them), their
//! summary table in CSV (written row by row as runs finish) and Parquet; `--resume` continues
//! a sweep that was stopped or killed; `--merge` joins the tables of shards. Under `mpirun -n K`
//! (built with the feature `mpi`) the runs go to the ranks, and rank 0 writes the table.
//!
//! Exit codes: 0 done (failed runs are rows of the table), 2 a refused study or usage, 3 a
//! study with a `check` where some run's check did not pass (`fail` or `error`; the table is
//! written all the same), 130 stopped by Ctrl-C.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use clap::Args;

use super::{exit_code, out, say};

use cosimo::settings::study::Study;
use cosimo::sweep::table::{Shard, SummaryTable, TableMeta, TableWriter};
use cosimo::sweep::{run_local, Plan, RunRecord, RunStatus, Runner, Verdict};
use cosimo::Error;

#[cfg(feature = "mpi")]
use cosimo::sweep::mpi::Ranks;

/// Without the feature `mpi` there are never ranks.
#[cfg(not(feature = "mpi"))]
enum Ranks {}

#[cfg(not(feature = "mpi"))]
impl Ranks {
    fn rank(&self) -> usize {
        match *self {}
    }
    fn size(&self) -> usize {
        match *self {}
    }
    fn gather_codes(&self, _: u8) -> Vec<u8> {
        match *self {}
    }
    fn abort(&self, _: i32) -> ! {
        match *self {}
    }
    fn run(
        &self,
        _: &Runner,
        _: &[usize],
        _: &AtomicBool,
        _: &mut dyn FnMut(&RunRecord),
    ) -> Result<Option<Vec<RunRecord>>, Error> {
        match *self {}
    }
}

#[derive(Args)]
pub(crate) struct SweepArgs {
    /// The study: what to run, the parameters to vary, what to keep (schemas/study.schema.json).
    #[arg(value_name = "STUDY.json", required_unless_present = "merge")]
    pub(crate) study: Option<PathBuf>,
    /// Required (except with --dry-run or --resume): where to write summary.csv,
    /// summary.parquet, sweep.json and (when the study keeps them) runs/ with each run's
    /// results. Formerly --output-dir.
    #[arg(
        short = 'o',
        long = "output",
        alias = "output-dir",
        value_name = "DIR",
        required_unless_present_any = ["dry_run", "resume"]
    )]
    pub(crate) output_dir: Option<PathBuf>,
    /// Continue the sweep of this study that was stopped or killed with its output in DIR:
    /// make only the runs missing from DIR's table and write the table there, as the sweep
    /// would have had it had it not been stopped.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["output_dir", "merge", "dry_run"])]
    pub(crate) resume: Option<PathBuf>,
    /// Runs made side by side (default: one per core). Refused under mpirun, where each rank
    /// but rank 0 makes one run at a time: start more ranks instead.
    #[arg(
        long,
        value_name = "N",
        default_value_t = 0,
        allow_negative_numbers = true
    )]
    pub(crate) workers: usize,
    /// Make only every N-th run, starting at run I (0 <= I < N), and write their partial table:
    /// one task of a Slurm job array or a Kubernetes indexed Job; --merge joins the tables.
    #[arg(long, value_name = "I/N")]
    pub(crate) shard: Option<String>,
    /// Print the runs (index, parameter values and, with a check, the reference file, as CSV)
    /// without making them.
    #[arg(long, conflicts_with_all = ["output_dir", "workers"])]
    pub(crate) dry_run: bool,
    /// Join the tables in these output folders (shards of one study) into the table of the
    /// whole study, written to -o/--output.
    #[arg(long, value_name = "DIR", num_args = 1.., conflicts_with_all = ["study", "shard", "dry_run", "workers"])]
    pub(crate) merge: Vec<PathBuf>,
    /// Print nothing but errors.
    #[arg(long, short)]
    pub(crate) quiet: bool,
}

/// What the table of this sweep says of itself (`complete` set when it is finished).
fn meta_of(study_file: &Path, study: &Study, runner: &Runner, shard: Option<Shard>) -> TableMeta {
    TableMeta {
        study: study_file.display().to_string(),
        fingerprint: study.fingerprint.clone(),
        runs: runner.plan().len(),
        shard,
        parameters: runner.plan().parameters.clone(),
        summaries: runner.summary_columns(),
        check: runner.checker().is_some(),
        complete: false,
    }
}

/// Exit code of a sweep stopped by Ctrl-C or kill (the shell's 128 + SIGINT).
const STOPPED: u8 = 130;
/// Exit code of a sweep whose runs were checked and some check did not pass (as `cosimo
/// check` exits when a comparison failed).
const CHECK_FAILED: u8 = 3;
/// The failed checks named on stderr at the end of a sweep (the table has them all).
const CHECKS_SHOWN: usize = 10;

pub(crate) fn sweep_command(args: &SweepArgs) -> ExitCode {
    let ranks = match start_ranks() {
        Ok(ranks) => ranks,
        Err(error) => {
            // Launched by mpirun without MPI: every rank gets the error; rank 0 says it.
            if launch_rank() == 0 {
                say!("error: {error}");
            }
            return ExitCode::from(exit_code(&error));
        }
    };
    match sweep(args, ranks.as_ref()) {
        Ok(code) => ExitCode::from(code),
        Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::BrokenPipe => {
            ExitCode::SUCCESS
        }
        Err(error) => {
            say!("error: {error}");
            ExitCode::from(exit_code(&error))
        }
    }
}

/// The ranks of `mpirun -n K` (K > 1), MPI initialised; `None` without mpirun.
#[cfg(feature = "mpi")]
fn start_ranks() -> Result<Option<Ranks>, Error> {
    match cosimo::sweep::mpi_launch_size() {
        None => Ok(None),
        Some(_) => Ranks::start(),
    }
}

/// Without the feature `mpi`, a sweep under `mpirun -n K` (K > 1) is refused: every process
/// would make every run and write the same files.
#[cfg(not(feature = "mpi"))]
fn start_ranks() -> Result<Option<Ranks>, Error> {
    match cosimo::sweep::mpi_launch_size() {
        None => Ok(None),
        Some(size) => Err(Error::Usage(format!(
            "cosimo sweep was started as {size} MPI processes (mpirun), but this cosimo was \
             built without MPI: each process would make every run and write the same files. \
             Build it with the feature: cargo build --release --features mpi (it needs an MPI \
             library, e.g. Debian's libopenmpi-dev, and libclang-dev), or run cosimo sweep \
             without mpirun (--workers uses this machine's cores)"
        ))),
    }
}

/// This process's rank as the MPI launcher set it (0 without one).
pub(crate) fn launch_rank() -> usize {
    ["OMPI_COMM_WORLD_RANK", "PMI_RANK"]
        .iter()
        .find_map(|name| std::env::var(name).ok()?.trim().parse().ok())
        .unwrap_or(0)
}

/// What every rank needs to make the runs of a study (or of its shard).
struct Prepared {
    study_file: PathBuf,
    study: Study,
    shard: Option<Shard>,
    indices: Vec<usize>,
    runner: Runner,
}

/// Read the study, open its target and (unless `--dry-run`) create the output folders: rank 0
/// the output folder, every rank the folder of per-run results it writes into.
fn prepare(args: &SweepArgs, lead: bool) -> Result<Prepared, Error> {
    let Some(study_file) = &args.study else {
        return Err(Error::Usage(
            "name the study file: cosimo sweep STUDY.json".into(),
        ));
    };
    let shard = args
        .shard
        .as_deref()
        .map(Shard::parse)
        .transpose()
        .map_err(Error::Usage)?;
    let study = Study::read(study_file).map_err(Error::Usage)?;
    let plan = Plan::new(&study);
    let indices = match shard {
        Some(shard) => shard.indices(plan.len()),
        None => (0..plan.len()).collect(),
    };
    let results = match (output_dir(args), study.keep.results) {
        (Ok(dir), true) if !args.dry_run => Some(dir.join("runs")),
        _ => None,
    };
    let runner = Runner::prepare(&study, plan, results.clone())?;
    if !args.dry_run {
        let dir = output_dir(args)?;
        if lead {
            std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        }
        if let Some(runs) = &results {
            std::fs::create_dir_all(runs).map_err(|e| Error::io(runs, e))?;
        }
    }
    Ok(Prepared {
        study_file: study_file.clone(),
        study,
        shard,
        indices,
        runner,
    })
}

/// Where the table goes: `-o/--output`, or the folder `--resume` continues.
fn output_dir(args: &SweepArgs) -> Result<&Path, Error> {
    args.output_dir
        .as_deref()
        .or(args.resume.as_deref())
        .ok_or_else(|| Error::Usage("name the output folder: -o/--output DIR".into()))
}

/// The table a sweep stopped or killed left in `dir`, checked to be of this study and shard:
/// the runs it holds are not made again.
fn earlier_table(
    dir: &Path,
    study: &Study,
    runner: &Runner,
    shard: Option<Shard>,
) -> Result<SummaryTable, Error> {
    let table = SummaryTable::read_partial(dir)
        .map_err(|e| Error::Usage(format!("--resume {}: {e}", dir.display())))?;
    let meta = &table.meta;
    let refuse = |why: String| {
        Error::Usage(format!(
            "--resume {}: {why}; resume with the study and --shard the sweep was started with, or start afresh with -o/--output DIR",
            dir.display()
        ))
    };
    if meta.fingerprint != study.fingerprint
        || meta.runs != runner.plan().len()
        || meta.parameters != runner.plan().parameters
        || meta.summaries != runner.summary_columns()
        || meta.check != runner.checker().is_some()
    {
        return Err(refuse(format!(
            "its table is of another study ({}), or of this study before it was changed",
            meta.study
        )));
    }
    if meta.shard != shard {
        let name = |s: Option<Shard>| s.map_or("every run".to_string(), |s| format!("shard {s}"));
        return Err(refuse(format!(
            "its table holds {}, not {}",
            name(meta.shard),
            name(shard)
        )));
    }
    let mut seen = vec![false; meta.runs];
    for record in &table.records {
        let wanted = shard.is_none_or(|s| record.index % s.count == s.index);
        match seen.get_mut(record.index) {
            Some(seen) if wanted && !*seen => *seen = true,
            _ => {
                return Err(refuse(format!(
                    "run {} is in its table twice or is not a run of this sweep",
                    record.index
                )))
            }
        }
    }
    Ok(table)
}

/// Under MPI, whether every rank is ready: `Ok(Ok(prepared))` when all are, `Ok(Err(code))`
/// (nothing to say) when another rank failed, `Err(error)` to report (on rank 0, or on the
/// rank that failed while rank 0 did not).
fn agree<T>(ranks: Option<&Ranks>, prepared: Result<T, Error>) -> Result<Result<T, u8>, Error> {
    let Some(ranks) = ranks else {
        return prepared.map(Ok);
    };
    let code = match &prepared {
        Ok(_) => 0,
        Err(error) => exit_code(error).max(1),
    };
    let codes = ranks.gather_codes(code);
    match prepared {
        Err(error) if ranks.rank() == 0 || codes[0] == 0 => Err(error),
        Err(_) => Ok(Err(code)),
        Ok(prepared) => match codes.iter().copied().max().unwrap_or(0) {
            0 => Ok(Ok(prepared)),
            failed => Ok(Err(failed)),
        },
    }
}

fn sweep(args: &SweepArgs, ranks: Option<&Ranks>) -> Result<u8, Error> {
    let lead = ranks.is_none_or(|r| r.rank() == 0);
    if !args.merge.is_empty() {
        return if lead { merge(args) } else { Ok(0) };
    }
    // Every rank sees the same options: all refuse, rank 0 says why.
    let workers = match (ranks, args.workers) {
        (Some(_), n) if n > 0 => Err(Error::Usage(format!(
            "--workers {n} sets the threads of a sweep on one machine; under mpirun each rank \
             but rank 0 makes one run at a time: start more ranks (mpirun -n K) instead"
        ))),
        _ => Ok(()),
    };
    if let Err(code) = agree(ranks, workers)? {
        return Ok(code);
    }
    let Prepared {
        study_file,
        study,
        shard,
        indices,
        runner,
    } = match agree(ranks, prepare(args, lead))? {
        Ok(prepared) => prepared,
        Err(code) => return Ok(code),
    };
    if args.dry_run && !lead {
        return Ok(0);
    }
    if args.dry_run {
        let checker = runner.checker();
        let header: Vec<String> = std::iter::once("index".to_string())
            .chain(runner.plan().parameters.iter().cloned())
            .chain(checker.map(|_| "check_reference".to_string()))
            .collect();
        out!("{}", header.join(","));
        let mut missing: Vec<usize> = Vec::new();
        for &index in &indices {
            let mut cells: Vec<String> = runner
                .plan()
                .values(index)
                .into_iter()
                .map(cosimo::sweep::runner::value_text)
                .collect();
            if let Some(checker) = checker {
                let file = checker.reference_file(index);
                if checker.per_run() && !file.is_file() {
                    missing.push(index);
                }
                cells.push(csv_cell(&file.display().to_string()));
            }
            out!("{index},{}", cells.join(","));
        }
        if !args.quiet {
            say!(
                "{} of the study's {} runs{}; nothing was run (--dry-run)",
                indices.len(),
                runner.plan().len(),
                shard.map_or(String::new(), |s| format!(" (shard {s})"))
            );
            if !missing.is_empty() {
                let shown: Vec<String> = missing.iter().take(10).map(|i| i.to_string()).collect();
                say!(
                    "{} of these runs have no reference file yet (runs {}{}): their checks will be errors",
                    missing.len(),
                    shown.join(", "),
                    if missing.len() > 10 { ", ..." } else { "" }
                );
            }
        }
        return Ok(0);
    }
    let dir = output_dir(args)?;
    // The runs a stopped sweep made already (`--resume`): kept, not made again. Rank 0
    // reads them and starts the table; every rank learns whether that went well.
    let start_table = || -> Result<Option<TableWriter>, Error> {
        if !lead {
            return Ok(None);
        }
        let meta = meta_of(&study_file, &study, &runner, shard);
        let (meta, earlier) = match &args.resume {
            Some(dir) => {
                let earlier = earlier_table(dir, &study, &runner, shard)?;
                // The study as the sweep that is resumed named it: the table is that sweep's.
                let meta = TableMeta {
                    study: earlier.meta.study,
                    ..meta
                };
                (meta, earlier.records)
            }
            None => (meta, Vec::new()),
        };
        TableWriter::create(dir, meta, earlier).map(Some)
    };
    let mut writer = match agree(ranks, start_table())? {
        Ok(writer) => writer,
        Err(code) => return Ok(code),
    };
    let resumed = writer.as_ref().map_or(0, |w| w.records().len());
    let mut done = vec![false; runner.plan().len()];
    for record in writer.iter().flat_map(|w| w.records()) {
        done[record.index] = true;
    }
    let indices: Vec<usize> = indices.into_iter().filter(|&i| !done[i]).collect();
    let wanted = resumed + indices.len();
    if resumed > 0 && !args.quiet {
        say!(
            "resuming: {resumed} of {wanted} runs are in {}; making the other {}",
            dir.join(cosimo::sweep::table::CSV_FILE).display(),
            indices.len()
        );
    }
    let cancel = stop_on_signals()?;
    let bar = progress_bar(args.quiet || !lead, indices.len());
    let started = std::time::Instant::now();
    let mut failed = 0usize;
    let mut unchecked = 0usize;
    let mut unwritten: Option<Error> = None;
    let mut progress = |record: &RunRecord| {
        if let Some(writer) = &mut writer {
            if unwritten.is_none() {
                if let Err(error) = writer.add(record.clone()) {
                    // The table cannot grow: stop rather than make runs nobody keeps.
                    unwritten = Some(error);
                    cancel.store(true, Ordering::Relaxed);
                }
            }
        }
        if record.status == RunStatus::Failed {
            failed += 1;
        }
        if record
            .check
            .as_ref()
            .is_some_and(|c| c.verdict != Verdict::Pass)
        {
            unchecked += 1;
        }
        if let Some(bar) = &bar {
            bar.inc(1);
            let mut message = String::new();
            if failed > 0 {
                message.push_str(&format!(", {failed} failed"));
            }
            if unchecked > 0 {
                message.push_str(&format!(", {unchecked} checks not passed"));
            }
            bar.set_message(message);
        }
    };
    match ranks {
        None => {
            run_local(&runner, &indices, args.workers, &cancel, &mut progress);
        }
        Some(ranks) => match ranks.run(&runner, &indices, &cancel, &mut progress) {
            Ok(Some(_)) => {}
            // A worker: rank 0 writes the table.
            Ok(None) if cancel.load(Ordering::Relaxed) => return Ok(STOPPED),
            Ok(None) => return Ok(0),
            // The other ranks wait for this one: end them all.
            Err(error) => {
                say!("error: {error}");
                ranks.abort(i32::from(exit_code(&error)))
            }
        },
    }
    if let Some(bar) = &bar {
        bar.finish_and_clear();
    }
    let Some(writer) = writer else {
        return Ok(0);
    };
    if let Some(error) = unwritten {
        return Err(error);
    }
    let stopped = cancel.load(Ordering::Relaxed);
    let complete = !stopped && writer.records().len() == wanted;
    let table = writer.finish(complete)?;
    let made = table.records.len();
    if stopped {
        say!(
            "stopped: {made} of {wanted} runs finished; their rows are in {}; continue with: cosimo sweep {} --resume {}{}",
            dir.join(cosimo::sweep::table::CSV_FILE).display(),
            study_file.display(),
            dir.display(),
            shard.map_or(String::new(), |s| format!(" --shard {s}"))
        );
        cosimo::fmu::crash::run_finished(STOPPED);
        return Ok(STOPPED);
    }
    if !args.quiet {
        let seconds = started.elapsed().as_secs_f64();
        let new = made - resumed;
        let failed = table
            .records
            .iter()
            .filter(|r| r.status == RunStatus::Failed)
            .count();
        say!(
            "{made} runs{}{}{} in {seconds:.2} s ({:.1} runs/s): {} ok, {failed} failed{}; table: {}, {}",
            if resumed > 0 { format!(" ({resumed} resumed, {new} made)") } else { String::new() },
            shard.map_or(String::new(), |s| format!(" (shard {s})")),
            ranks.map_or(String::new(), |r| format!(" on {} MPI ranks", r.size() - 1)),
            new as f64 / seconds.max(1e-9),
            made - failed,
            if runner.isolates() {
                " (FMUs in worker processes)"
            } else {
                ""
            },
            dir.join(cosimo::sweep::table::CSV_FILE).display(),
            dir.join(cosimo::sweep::table::PARQUET_FILE).display()
        );
    }
    let code = check_verdict(&table, args.quiet);
    // The table is written: an FMU that crashes as it is unloaded (in-process runs) or at exit
    // is a warning, and the exit code stays the study's.
    cosimo::fmu::crash::run_finished(code);
    Ok(code)
}

/// The exit code of a written table: [`CHECK_FAILED`] when some run's check did not pass;
/// unless `quiet`, the counts and the first failed checks on stderr.
fn check_verdict(table: &SummaryTable, quiet: bool) -> u8 {
    if !table.meta.check {
        return 0;
    }
    let (passed, failed, errors) = table.check_counts();
    if !quiet {
        say!(
            "checks: {passed} passed, {failed} failed, {errors} error{}",
            if errors == 1 { "" } else { "s" }
        );
        let bad = table.records.iter().filter_map(|r| {
            let check = r.check.as_ref()?;
            (check.verdict != Verdict::Pass).then_some((r, check))
        });
        for (record, check) in bad.clone().take(CHECKS_SHOWN) {
            let values: Vec<String> = table
                .meta
                .parameters
                .iter()
                .zip(&record.parameters)
                .map(|(name, value)| {
                    format!("{name}={}", cosimo::sweep::runner::value_text(*value))
                })
                .collect();
            say!(
                "  {} run {} ({}): {}",
                check.verdict.name().to_uppercase(),
                record.index,
                values.join(", "),
                check.message
            );
        }
        let more = failed + errors;
        if more > CHECKS_SHOWN {
            say!(
                "  ... and {} more; the check columns of {} have them all",
                more - CHECKS_SHOWN,
                cosimo::sweep::table::CSV_FILE
            );
        }
    }
    if failed + errors > 0 {
        CHECK_FAILED
    } else {
        0
    }
}

/// A CSV cell: quoted when it must be.
fn csv_cell(text: &str) -> String {
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_string()
    }
}

/// `--merge DIR...`: the tables joined, the per-run results copied.
fn merge(args: &SweepArgs) -> Result<u8, Error> {
    let dir = args.output_dir.as_deref().ok_or_else(|| {
        Error::Usage("--merge writes the joined table to -o/--output: add -o DIR".into())
    })?;
    let mut tables = Vec::new();
    for part in &args.merge {
        tables.push((part.clone(), SummaryTable::read(part)?));
    }
    let table = SummaryTable::merge(tables)?;
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    for part in &args.merge {
        copy_runs(&part.join("runs"), &dir.join("runs"))?;
    }
    table.write(dir)?;
    if !args.quiet {
        say!(
            "{} runs from {} tables; table: {}",
            table.records.len(),
            args.merge.len(),
            dir.join(cosimo::sweep::table::CSV_FILE).display()
        );
    }
    Ok(check_verdict(&table, args.quiet))
}

/// Copy the result files of `from` (if any) into `to`, unless they are the same folder.
fn copy_runs(from: &Path, to: &Path) -> Result<(), Error> {
    if !from.is_dir() {
        return Ok(());
    }
    std::fs::create_dir_all(to).map_err(|e| Error::io(to, e))?;
    if from.canonicalize().ok() == to.canonicalize().ok() {
        return Ok(());
    }
    for entry in std::fs::read_dir(from).map_err(|e| Error::io(from, e))? {
        let entry = entry.map_err(|e| Error::io(from, e))?;
        let target = to.join(entry.file_name());
        std::fs::copy(entry.path(), &target).map_err(|e| Error::io(&target, e))?;
    }
    Ok(())
}

/// A flag that the first Ctrl-C, kill or hang-up sets (the sweep then stops and writes the
/// finished rows); a second one ends the process at once.
fn stop_on_signals() -> Result<Arc<AtomicBool>, Error> {
    let cancel = Arc::new(AtomicBool::new(false));
    #[cfg(unix)]
    {
        use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
        for signal in [SIGINT, SIGTERM, SIGHUP] {
            let failed = |e: std::io::Error| {
                Error::Internal(format!("cannot install the sweep's signal handlers: {e}"))
            };
            signal_hook::flag::register_conditional_shutdown(
                signal,
                STOPPED as i32,
                cancel.clone(),
            )
            .map_err(failed)?;
            signal_hook::flag::register(signal, cancel.clone()).map_err(failed)?;
        }
    }
    Ok(cancel)
}

/// A bar over the runs with an ETA, on a terminal only.
fn progress_bar(quiet: bool, runs: usize) -> Option<indicatif::ProgressBar> {
    if quiet || !std::io::IsTerminal::is_terminal(&std::io::stderr()) {
        return None;
    }
    let bar = indicatif::ProgressBar::new(runs as u64);
    if let Ok(style) = indicatif::ProgressStyle::with_template(
        "{bar:40} {pos}/{len} runs{msg}, {elapsed} elapsed, {eta} left",
    ) {
        bar.set_style(style);
    }
    Some(bar)
}
