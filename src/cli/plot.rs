//! `cosimo plot`: one variable from result files into a PNG.

use std::path::PathBuf;

use clap::Args;

use super::say;

use cosimo::Error;

#[derive(Args)]
pub(crate) struct PlotArgs {
    /// Result files (CSV with a time column), one line each.
    #[arg(required = true)]
    pub(crate) files: Vec<PathBuf>,
    /// The column to plot (e.g. crane.s1).
    #[arg(long)]
    pub(crate) variable: String,
    /// The PNG to write.
    #[arg(long, short)]
    pub(crate) output: PathBuf,
    /// A label per file (default: the file names).
    #[arg(long = "label")]
    pub(crate) labels: Vec<String>,
    /// Chart title (default: the variable).
    #[arg(long)]
    pub(crate) title: Option<String>,
    /// Lower end of the value axis (with --y-max: keeps a diverging run from flattening the
    /// others).
    #[arg(long, allow_negative_numbers = true)]
    pub(crate) y_min: Option<f64>,
    /// Upper end of the value axis.
    #[arg(long, allow_negative_numbers = true)]
    pub(crate) y_max: Option<f64>,
}

pub(crate) fn plot_command(args: &PlotArgs) -> Result<(), Error> {
    use cosimo::results::plot::{plot_series, Series};
    if args.y_min.is_some() != args.y_max.is_some() {
        return Err(Error::Usage(
            "--y-min and --y-max clip the value axis together: give both or neither".into(),
        ));
    }
    if args.labels.len() > args.files.len() {
        return Err(Error::Usage(format!(
            "{} --label for {} result files: give one label per file at most",
            args.labels.len(),
            args.files.len()
        )));
    }
    let mut series = Vec::with_capacity(args.files.len());
    for (i, file) in args.files.iter().enumerate() {
        let table = cosimo::fs_checks::read_table(file, "results")?;
        let column = table.column(&args.variable).ok_or_else(|| {
            Error::Usage(format!(
                "{}: no column \"{}\"; the columns are: {}",
                file.display(),
                args.variable,
                table.columns().join(", ")
            ))
        })?;
        if !matches!(table.data(column), cosimo::table::Column::Numbers(_)) {
            return Err(Error::Usage(format!(
                "{}: column \"{}\" holds {}; plot draws numbers",
                file.display(),
                args.variable,
                table.data(column).kind()
            )));
        }
        let label = args
            .labels
            .get(i)
            .cloned()
            .unwrap_or_else(|| file.display().to_string());
        let points = table
            .time()
            .iter()
            .copied()
            .zip(table.values(column).iter().copied())
            .collect();
        series.push(Series { label, points });
    }
    let range = args.y_min.zip(args.y_max);
    plot_series(
        &args.output,
        args.title.as_deref().unwrap_or(&args.variable),
        &args.variable,
        &series,
        range,
    )?;
    say!("plot: {}", args.output.display());
    Ok(())
}
