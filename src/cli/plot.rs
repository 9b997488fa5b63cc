//! `cosimo plot`: variables from result files into one PNG or SVG, over time or over another
//! column (a sweep's summary over a parameter), with the units the files give on the axis.

use std::path::PathBuf;

use clap::Args;

use super::say;

use cosimo::Error;

#[derive(Args)]
pub(crate) struct PlotArgs {
    /// Result files (CSV, MAT (also Dymola's and OpenModelica's), Arrow or Parquet, by the
    /// extension), one line each; with --x any CSV table (a sweep's
    /// summary.csv), one set of points each.
    #[arg(required = true)]
    pub(crate) files: Vec<PathBuf>,
    /// A column to plot (e.g. crane.s1); give it again for more variables in the same figure.
    /// The value axis carries their unit when the files give one (Arrow, Parquet, MAT) and
    /// all share it; else each legend entry carries its own (and a warning says so).
    #[arg(long = "variable", required = true)]
    pub(crate) variables: Vec<String>,
    /// The image to write: PNG (.png) or SVG (.svg), by the extension.
    #[arg(long, short, value_name = "FILE")]
    pub(crate) output: PathBuf,
    /// A label per file (default: the file names).
    #[arg(long = "label")]
    pub(crate) labels: Vec<String>,
    /// Chart title (default: the variables).
    #[arg(long)]
    pub(crate) title: Option<String>,
    /// Lower end of the value axis (with --y-max: keeps a diverging run from flattening the
    /// others).
    #[arg(long, allow_negative_numbers = true)]
    pub(crate) y_min: Option<f64>,
    /// Upper end of the value axis.
    #[arg(long, allow_negative_numbers = true)]
    pub(crate) y_max: Option<f64>,
    /// The column on the horizontal axis instead of time, drawn as points: e.g. a swept
    /// parameter of a sweep's summary.csv (rows without a number in either column, such as
    /// failed runs, are left out).
    #[arg(long)]
    pub(crate) x: Option<String>,
    /// With --x: one set of points per value of this column (e.g. a grid parameter).
    #[arg(long)]
    pub(crate) by: Option<String>,
    /// Print nothing but errors (no line naming the image written, no warning about units).
    #[arg(long, short)]
    pub(crate) quiet: bool,
}

pub(crate) fn plot_command(args: &PlotArgs) -> Result<(), Error> {
    use cosimo::results::plot::{plot_series, ImageFormat, Series};
    // Before any file is read: the image format.
    ImageFormat::of_path(&args.output)?;
    if args.y_min.is_some() != args.y_max.is_some() {
        return Err(Error::Usage(
            "--y-min and --y-max clip the value axis together: give both or neither".into(),
        ));
    }
    if let Some((lo, hi)) = args.y_min.zip(args.y_max) {
        if !(lo.is_finite() && hi.is_finite() && lo < hi) {
            return Err(Error::Usage(format!(
                "--y-min {lo} --y-max {hi}: the value axis needs finite bounds with --y-min below --y-max"
            )));
        }
    }
    if args.labels.len() > args.files.len() {
        return Err(Error::Usage(format!(
            "{} --label for {} result files: give one label per file at most",
            args.labels.len(),
            args.files.len()
        )));
    }
    if let Some(x) = &args.x {
        return plot_over(args, x);
    }
    if args.by.is_some() {
        return Err(Error::Usage(
            "--by splits the points of --x into sets; add --x COLUMN".into(),
        ));
    }
    let mut series = Vec::with_capacity(args.files.len() * args.variables.len());
    // Per series: the variable and its unit in that file.
    let mut units: Vec<(&str, Option<String>)> = Vec::with_capacity(series.capacity());
    // The horizontal axis is the first column: time in result files, else what it is named.
    let mut x_label = None;
    for (i, file) in args.files.iter().enumerate() {
        let table = cosimo::fs_checks::read_table(file, "results")?;
        x_label.get_or_insert_with(|| {
            let name = table.time_name();
            if name.eq_ignore_ascii_case("time") || name.is_empty() {
                "time [s]".to_string()
            } else {
                name.to_string()
            }
        });
        for variable in &args.variables {
            let (values, unit) = numeric_column(&table, variable)?;
            let points = table.time().iter().copied().zip(values).collect();
            series.push(Series {
                label: run_label(args, i, variable),
                points,
            });
            units.push((variable, unit));
        }
    }
    let (y_label, suffixes) = units_on_axis(args, &units);
    for (s, suffix) in series.iter_mut().zip(suffixes) {
        s.label.push_str(&suffix);
    }
    let range = args.y_min.zip(args.y_max);
    plot_series(
        &args.output,
        &title(args),
        (x_label.as_deref().unwrap_or("time [s]"), y_label.as_str()),
        &series,
        range,
    )?;
    if !args.quiet {
        say!("plot: {}", args.output.display());
    }
    Ok(())
}

/// The default title: the variables.
fn title(args: &PlotArgs) -> String {
    args.title
        .clone()
        .unwrap_or_else(|| args.variables.join(", "))
}

/// A legend entry: the run (its --label, else the file name) for one variable, the variable
/// for one run, "run: variable" for several of both.
fn run_label(args: &PlotArgs, file: usize, variable: &str) -> String {
    let run = || {
        args.labels
            .get(file)
            .cloned()
            .unwrap_or_else(|| args.files[file].display().to_string())
    };
    match (args.files.len() > 1, args.variables.len() > 1) {
        (true, true) => format!("{}: {variable}", run()),
        (false, true) => variable.to_string(),
        _ => run(),
    }
}

/// The value axis' label and each series' legend suffix (its unit, when the units differ),
/// with a warning when they do.
fn units_on_axis(args: &PlotArgs, units: &[(&str, Option<String>)]) -> (String, Vec<String>) {
    let listed: Vec<(&str, Option<&str>)> = units.iter().map(|(v, u)| (*v, u.as_deref())).collect();
    let (axis, suffixes, differ) = cosimo::results::plot::value_axis(&listed);
    if differ && !args.quiet {
        let mut seen: Vec<String> = Vec::new();
        for (variable, unit) in &listed {
            let entry = format!("{variable} [{}]", unit.unwrap_or("no unit given"));
            if !seen.contains(&entry) {
                seen.push(entry);
            }
        }
        say!(
            "warning: the plotted variables have different units ({}): one value axis without a unit, each legend entry with its own",
            seen.join(", ")
        );
    }
    (axis, suffixes)
}

/// The numbers of column (or array element) `name` of a result table, and its unit.
fn numeric_column(
    table: &cosimo::table::Table,
    name: &str,
) -> Result<(Vec<f64>, Option<String>), Error> {
    if let Some(values) = element_or_column(table, name)? {
        let base = name.rsplit_once('[').map_or(name, |(base, _)| base);
        let unit = table.column(base).and_then(|c| table.unit(c));
        return Ok((values, unit.map(str::to_string)));
    }
    let column = table.column(name).ok_or_else(|| {
        Error::Usage(format!(
            "{}: no column \"{name}\"; the columns are: {}",
            table.path().display(),
            table.columns().join(", ")
        ))
    })?;
    if !matches!(table.data(column), cosimo::table::Column::Numbers(_)) {
        return Err(Error::Usage(format!(
            "{}: column \"{name}\" holds {}; plot draws numbers{}",
            table.path().display(),
            table.data(column).kind(),
            if matches!(table.data(column), cosimo::table::Column::Arrays(_)) {
                format!(" (name one element: {name}[1], as `cosimo check` prints it)")
            } else {
                String::new()
            }
        )));
    }
    Ok((
        table.values(column).to_vec(),
        table.unit(column).map(str::to_string),
    ))
}

/// The points of one value of `--by` (None: all, without `--by`).
type PointSet = (Option<f64>, Vec<(f64, f64)>);

/// `--x`: the variables over column `x` of each file, as points.
fn plot_over(args: &PlotArgs, x: &str) -> Result<(), Error> {
    use cosimo::results::plot::{plot_points, Series};
    use cosimo::table::{Column, Table};
    // The numbers of a column, None where a cell holds none (a failed run's empty summary),
    // and its unit.
    type Numbers = (Vec<Option<f64>>, Option<String>);
    let numbers = |table: &Table, name: &str| -> Result<Numbers, Error> {
        if name == "time" {
            return Ok((
                table.time().iter().map(|&t| Some(t)).collect(),
                Some("s".into()),
            ));
        }
        if let Some(values) = element_or_column(table, name)? {
            let base = name.rsplit_once('[').map_or(name, |(base, _)| base);
            let unit = table.column(base).and_then(|c| table.unit(c));
            return Ok((
                values.into_iter().map(Some).collect(),
                unit.map(str::to_string),
            ));
        }
        let column = table.column(name).ok_or_else(|| {
            Error::Usage(format!(
                "{}: no column \"{name}\"; the columns are: {}",
                table.path().display(),
                table.columns().join(", ")
            ))
        })?;
        let values = match table.data(column) {
            Column::Numbers(v) => v.iter().map(|&x| Some(x)).collect(),
            Column::Text(v) => v.iter().map(|cell| cell.trim().parse().ok()).collect(),
            Column::Arrays(_) => {
                return Err(Error::Usage(format!(
                    "{}: column \"{name}\" holds arrays; plot draws numbers",
                    table.path().display()
                )))
            }
        };
        Ok((values, table.unit(column).map(str::to_string)))
    };
    let mut series = Vec::with_capacity(args.files.len());
    let mut units: Vec<(&str, Option<String>)> = Vec::new();
    let mut x_unit = None;
    for (i, file) in args.files.iter().enumerate() {
        let table = cosimo::fs_checks::read_table(file, "results")?;
        let (xs, unit) = numbers(&table, x)?;
        x_unit = x_unit.or(unit);
        let groups = match &args.by {
            Some(by) => numbers(&table, by)?.0,
            None => vec![None; xs.len()],
        };
        for variable in &args.variables {
            let (ys, unit) = numbers(&table, variable)?;
            let label = run_label(args, i, variable);
            // One set per value of --by, in order of first appearance.
            let mut sets: Vec<PointSet> = Vec::new();
            for ((x, y), group) in xs.iter().zip(&ys).zip(&groups) {
                let (Some(x), Some(y)) = (*x, *y) else {
                    continue;
                };
                match sets.iter_mut().find(|s| s.0 == *group) {
                    Some(set) => set.1.push((x, y)),
                    None => sets.push((*group, vec![(x, y)])),
                }
            }
            if sets.is_empty() {
                return Err(Error::Usage(format!(
                    "{}: no row has numbers in both \"{x}\" and \"{variable}\"",
                    file.display(),
                )));
            }
            let several = args.files.len() > 1 || args.variables.len() > 1;
            for (group, points) in sets {
                let label = match (&args.by, group) {
                    (Some(by), Some(value)) if several => format!("{label}, {by} = {value}"),
                    (Some(by), Some(value)) => format!("{by} = {value}"),
                    _ => label.clone(),
                };
                series.push(Series { label, points });
                units.push((variable, unit.clone()));
            }
        }
    }
    let (y_label, suffixes) = units_on_axis(args, &units);
    for (s, suffix) in series.iter_mut().zip(suffixes) {
        s.label.push_str(&suffix);
    }
    let title = args
        .title
        .clone()
        .unwrap_or_else(|| format!("{} over {x}", args.variables.join(", ")));
    let x_label = match x_unit {
        Some(unit) => format!("{x} [{unit}]"),
        None => x.to_string(),
    };
    plot_points(
        &args.output,
        &title,
        (&x_label, &y_label),
        &series,
        args.y_min.zip(args.y_max),
    )?;
    if !args.quiet {
        say!("plot: {}", args.output.display());
    }
    Ok(())
}

/// The values of array element `name` = `base[i]` (1-based, counting all elements, as `cosimo
/// check` names them) of an array column `base`: `Ok(None)` when `name` is not of that form or
/// a column has that exact name; an error for an index outside the array.
fn element_or_column(table: &cosimo::table::Table, name: &str) -> Result<Option<Vec<f64>>, Error> {
    use cosimo::table::Column;
    if table.column(name).is_some() {
        return Ok(None);
    }
    let Some((base, index)) = name.strip_suffix(']').and_then(|n| n.rsplit_once('[')) else {
        return Ok(None);
    };
    let Some(column) = table.column(base) else {
        return Ok(None);
    };
    let Column::Arrays(rows) = table.data(column) else {
        return Err(Error::Usage(format!(
            "{}: column \"{base}\" holds {}, not arrays, so \"{name}\" names nothing",
            table.path().display(),
            table.data(column).kind()
        )));
    };
    let size = rows.first().map_or(0, Vec::len);
    let element = index
        .trim()
        .parse::<usize>()
        .ok()
        .filter(|&i| i >= 1 && i <= size)
        .ok_or_else(|| {
            Error::Usage(format!(
                "{}: \"{name}\": column \"{base}\" holds arrays of {size} elements, named {base}[1] to {base}[{size}] (counted in row-major order, as `cosimo check` prints them)",
                table.path().display()
            ))
        })?;
    Ok(Some(
        rows.iter()
            .map(|row| row.get(element - 1).copied().unwrap_or(f64::NAN))
            .collect(),
    ))
}
