//! Raw C signatures of FMI 2 and FMI 3, resolved with libloading.
