//! The safe FMI 2 / FMI 3 instance behind the `Slave` trait.
