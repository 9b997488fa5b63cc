//! The formats of result files, picked by a file's extension (the run's output files, a
//! study's per-run results) or by name (a study's `keep.format`).

use std::path::Path;

/// A format cosimo writes results in and reads them back from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ResultFormat {
    /// Comma-separated text in the convention FMI tools share (`.csv`).
    Csv,
    /// MAT v4 in the "dsres" layout of Dymola and OpenModelica (`.mat`).
    Mat,
    /// An Arrow IPC stream (`.arrow`).
    Arrow,
    /// Apache Parquet (`.parquet`).
    Parquet,
}

impl ResultFormat {
    /// Every format, in the order messages list them.
    pub const ALL: [ResultFormat; 4] = [
        ResultFormat::Csv,
        ResultFormat::Mat,
        ResultFormat::Arrow,
        ResultFormat::Parquet,
    ];

    /// The format's name and file extension (without the dot).
    pub fn extension(self) -> &'static str {
        match self {
            ResultFormat::Csv => "csv",
            ResultFormat::Mat => "mat",
            ResultFormat::Arrow => "arrow",
            ResultFormat::Parquet => "parquet",
        }
    }

    /// The format of this name or extension (any case).
    pub fn parse(name: &str) -> Option<ResultFormat> {
        ResultFormat::ALL
            .into_iter()
            .find(|f| f.extension().eq_ignore_ascii_case(name))
    }

    /// The format a result file is written in, from its extension; the message of an unknown
    /// one names the file and the extensions there are.
    pub fn of_path(path: &Path) -> Result<ResultFormat, String> {
        let extension = path.extension().and_then(|e| e.to_str()).unwrap_or("");
        ResultFormat::parse(extension).ok_or_else(|| {
            let what = if extension.is_empty() {
                "has no extension".to_string()
            } else {
                format!("has the extension .{extension}")
            };
            format!(
                "{}: {what}, which names no result format; end the file name in {}",
                path.display(),
                ResultFormat::choices()
            )
        })
    }

    /// The extensions as a message lists them: `.csv, .mat, .arrow or .parquet`.
    pub fn choices() -> String {
        let names: Vec<String> = ResultFormat::ALL
            .iter()
            .map(|f| format!(".{}", f.extension()))
            .collect();
        format!(
            "{} or {}",
            names[..names.len() - 1].join(", "),
            names[names.len() - 1]
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_extension_picks_the_format_and_an_unknown_one_is_named() {
        assert_eq!(
            ResultFormat::of_path(Path::new("a/r.MAT")),
            Ok(ResultFormat::Mat)
        );
        assert_eq!(
            ResultFormat::of_path(Path::new("r.parquet")),
            Ok(ResultFormat::Parquet)
        );
        assert_eq!(
            ResultFormat::of_path(Path::new("r.xlsx")).unwrap_err(),
            "r.xlsx: has the extension .xlsx, which names no result format; end the file name \
             in .csv, .mat, .arrow or .parquet"
        );
        assert!(ResultFormat::of_path(Path::new("results"))
            .unwrap_err()
            .contains("results: has no extension"));
    }
}
