//! `.fmu` zip or unpacked folder; safe extraction; platform binary lookup.
