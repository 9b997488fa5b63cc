/* The first-order lag of the test FMUs with C sources: x' = (u - x) / tau, y = LAG_GAIN * x. */
#ifndef LAG_H
#define LAG_H

typedef struct {
    double u;    /* input */
    double tau;  /* time constant (parameter) */
    double x;    /* state */
    double time; /* the time the state belongs to */
} Lag;

/* Start values: u = 1, tau = 0.5, x = 0 at time 0. */
void lag_reset(Lag *lag);

/* Advance the state exactly over h with the input held. */
void lag_step(Lag *lag, double h);

/* The output y. */
double lag_output(const Lag *lag);

#endif
