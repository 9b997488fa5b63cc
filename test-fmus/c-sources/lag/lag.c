/* The first-order lag, stepped exactly (the input held over the step). */
#include <math.h>

#include "lag.h"

#ifndef LAG_GAIN
#error "LAG_GAIN is not defined: the build description defines it"
#endif

void lag_reset(Lag *lag) {
    lag->u = 1.0;
    lag->tau = 0.5;
    lag->x = 0.0;
    lag->time = 0.0;
}

void lag_step(Lag *lag, double h) {
    lag->x = lag->u + (lag->x - lag->u) * exp(-h / lag->tau);
    lag->time += h;
}

double lag_output(const Lag *lag) {
    return LAG_GAIN * lag->x;
}
