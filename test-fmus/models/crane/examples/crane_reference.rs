//! Writes the monolithic reference of the paper's crane as CSV to stdout:
//! `cargo run --release -p fmu-crane --example crane_reference -- [actuators] [t_end] [dt] [every]`
//! (defaults: 1 actuator, 10 s, RK4 steps of 0.05 ms, a row every 200 steps = 10 ms).

use std::io::Write;

fn main() -> Result<(), String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arg = |i: usize, default: f64| -> Result<f64, String> {
        args.get(i).map_or(Ok(default), |a| {
            a.parse()
                .map_err(|e| format!("argument {}: {a}: {e}", i + 1))
        })
    };
    let actuators = arg(0, 1.0)? as usize;
    let (t_end, dt, every) = (arg(1, 10.0)?, arg(2, 5e-5)?, arg(3, 200.0)? as usize);
    let samples = fmu_crane::Setup::paper(actuators)?.run(t_end, dt, every)?;
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let w = |e: std::io::Error| e.to_string();
    writeln!(
        out,
        "time,theta1,theta2,omega1,omega2,s1,sd1,s2,sd2,f1,f2,p1_1,p2_1,p1_2,p2_2,kappa1,kappa2,xR,yR,vxR,vyR"
    )
    .map_err(w)?;
    for s in samples {
        writeln!(
            out,
            "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
            s.t,
            s.theta[0],
            s.theta[1],
            s.omega[0],
            s.omega[1],
            s.s[0],
            s.sd[0],
            s.s[1],
            s.sd[1],
            s.f[0],
            s.f[1],
            s.p1[0],
            s.p2[0],
            s.p1[1],
            s.p2[1],
            s.kappa[0],
            s.kappa[1],
            s.r[0],
            s.r[1],
            s.r_dot[0],
            s.r_dot[1]
        )
        .map_err(w)?;
    }
    Ok(())
}
