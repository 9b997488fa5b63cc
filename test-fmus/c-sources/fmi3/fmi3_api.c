/* The FMI 3 Co-Simulation API of the lag, with the types and signatures declared here from the
   FMI 3.0 standard (no FMI headers needed). Value references: 0 u, 1 tau, 2 x, 3 y, 4 time. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "lag.h"

#if defined(_WIN32)
#define FMI3_EXPORT __declspec(dllexport)
#else
#define FMI3_EXPORT __attribute__((visibility("default")))
#endif

typedef void *fmi3Instance;
typedef void *fmi3InstanceEnvironment;
typedef uint32_t fmi3ValueReference;
typedef double fmi3Float64;
typedef bool fmi3Boolean;
typedef const char *fmi3String;

typedef enum { fmi3OK, fmi3Warning, fmi3Discard, fmi3Error, fmi3Fatal } fmi3Status;

typedef void (*fmi3LogMessageCallback)(fmi3InstanceEnvironment, fmi3Status, fmi3String,
                                       fmi3String);
typedef void (*fmi3IntermediateUpdateCallback)(fmi3InstanceEnvironment, fmi3Float64, fmi3Boolean,
                                               fmi3Boolean, fmi3Boolean, fmi3Boolean,
                                               fmi3Boolean *, fmi3Float64 *);

FMI3_EXPORT const char *fmi3GetVersion(void) { return "3.0"; }

FMI3_EXPORT fmi3Status fmi3SetDebugLogging(fmi3Instance instance, fmi3Boolean on, size_t n,
                                           const fmi3String categories[]) {
    (void)instance; (void)on; (void)n; (void)categories;
    return fmi3OK;
}

FMI3_EXPORT fmi3Instance fmi3InstantiateCoSimulation(
    fmi3String name, fmi3String token, fmi3String resources, fmi3Boolean visible,
    fmi3Boolean logging, fmi3Boolean eventModeUsed, fmi3Boolean earlyReturnAllowed,
    const fmi3ValueReference required[], size_t nRequired, fmi3InstanceEnvironment environment,
    fmi3LogMessageCallback logMessage, fmi3IntermediateUpdateCallback intermediateUpdate) {
    (void)name; (void)token; (void)resources; (void)visible; (void)logging;
    (void)earlyReturnAllowed; (void)required; (void)nRequired; (void)environment;
    (void)logMessage; (void)intermediateUpdate;
    /* The lag has no events. */
    if (eventModeUsed) return NULL;
    Lag *lag = calloc(1, sizeof(Lag));
    if (lag) lag_reset(lag);
    return lag;
}

FMI3_EXPORT void fmi3FreeInstance(fmi3Instance instance) { free(instance); }

FMI3_EXPORT fmi3Status fmi3EnterInitializationMode(fmi3Instance instance,
                                                   fmi3Boolean toleranceDefined,
                                                   fmi3Float64 tolerance, fmi3Float64 startTime,
                                                   fmi3Boolean stopTimeDefined,
                                                   fmi3Float64 stopTime) {
    (void)toleranceDefined; (void)tolerance; (void)stopTimeDefined; (void)stopTime;
    ((Lag *)instance)->time = startTime;
    return fmi3OK;
}

FMI3_EXPORT fmi3Status fmi3ExitInitializationMode(fmi3Instance instance) {
    (void)instance;
    return fmi3OK;
}
FMI3_EXPORT fmi3Status fmi3EnterConfigurationMode(fmi3Instance instance) {
    (void)instance;
    return fmi3Error; /* no structural parameters */
}
FMI3_EXPORT fmi3Status fmi3ExitConfigurationMode(fmi3Instance instance) {
    (void)instance;
    return fmi3Error;
}
FMI3_EXPORT fmi3Status fmi3Terminate(fmi3Instance instance) {
    (void)instance;
    return fmi3OK;
}
FMI3_EXPORT fmi3Status fmi3Reset(fmi3Instance instance) {
    lag_reset((Lag *)instance);
    return fmi3OK;
}

FMI3_EXPORT fmi3Status fmi3GetFloat64(fmi3Instance instance, const fmi3ValueReference vr[],
                                      size_t n, fmi3Float64 values[], size_t nValues) {
    const Lag *lag = instance;
    if (nValues != n) return fmi3Error;
    for (size_t i = 0; i < n; i++) {
        switch (vr[i]) {
        case 0: values[i] = lag->u; break;
        case 1: values[i] = lag->tau; break;
        case 2: values[i] = lag->x; break;
        case 3: values[i] = lag_output(lag); break;
        case 4: values[i] = lag->time; break;
        default: return fmi3Error;
        }
    }
    return fmi3OK;
}

FMI3_EXPORT fmi3Status fmi3SetFloat64(fmi3Instance instance, const fmi3ValueReference vr[],
                                      size_t n, const fmi3Float64 values[], size_t nValues) {
    Lag *lag = instance;
    if (nValues != n) return fmi3Error;
    for (size_t i = 0; i < n; i++) {
        switch (vr[i]) {
        case 0: lag->u = values[i]; break;
        case 1: lag->tau = values[i]; break;
        case 2: lag->x = values[i]; break;
        default: return fmi3Error;
        }
    }
    return fmi3OK;
}

FMI3_EXPORT fmi3Status fmi3DoStep(fmi3Instance instance, fmi3Float64 t, fmi3Float64 h,
                                  fmi3Boolean noSetFMUStatePriorToCurrentPoint,
                                  fmi3Boolean *eventHandlingNeeded,
                                  fmi3Boolean *terminateSimulation, fmi3Boolean *earlyReturn,
                                  fmi3Float64 *lastSuccessfulTime) {
    (void)noSetFMUStatePriorToCurrentPoint;
    Lag *lag = instance;
    lag_step(lag, h);
    lag->time = t + h;
    *eventHandlingNeeded = false;
    *terminateSimulation = false;
    *earlyReturn = false;
    *lastSuccessfulTime = lag->time;
    return fmi3OK;
}
