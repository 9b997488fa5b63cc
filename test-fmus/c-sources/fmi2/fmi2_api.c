/* The FMI 2 Co-Simulation API of the lag, with the types and signatures declared here from the
   FMI 2.0 standard (no FMI headers needed). Value references: 0 u, 1 tau, 2 x, 3 y. */
#include <stddef.h>
#include <stdlib.h>

#include "lag.h"

#if defined(_WIN32)
#define FMI2_EXPORT __declspec(dllexport)
#else
#define FMI2_EXPORT __attribute__((visibility("default")))
#endif

typedef void *fmi2Component;
typedef void *fmi2ComponentEnvironment;
typedef void *fmi2FMUstate;
typedef unsigned int fmi2ValueReference;
typedef double fmi2Real;
typedef int fmi2Integer;
typedef int fmi2Boolean;
typedef const char *fmi2String;

typedef enum { fmi2OK, fmi2Warning, fmi2Discard, fmi2Error, fmi2Fatal, fmi2Pending } fmi2Status;
typedef enum { fmi2ModelExchange, fmi2CoSimulation } fmi2Type;
typedef enum {
    fmi2DoStepStatus,
    fmi2PendingStatus,
    fmi2LastSuccessfulTime,
    fmi2Terminated
} fmi2StatusKind;

typedef struct {
    void (*logger)(fmi2ComponentEnvironment, fmi2String, fmi2Status, fmi2String, fmi2String, ...);
    void *(*allocateMemory)(size_t, size_t);
    void (*freeMemory)(void *);
    void (*stepFinished)(fmi2ComponentEnvironment, fmi2Status);
    fmi2ComponentEnvironment componentEnvironment;
} fmi2CallbackFunctions;

FMI2_EXPORT const char *fmi2GetTypesPlatform(void) { return "default"; }
FMI2_EXPORT const char *fmi2GetVersion(void) { return "2.0"; }

FMI2_EXPORT fmi2Status fmi2SetDebugLogging(fmi2Component c, fmi2Boolean on, size_t n,
                                           const fmi2String categories[]) {
    (void)c; (void)on; (void)n; (void)categories;
    return fmi2OK;
}

FMI2_EXPORT fmi2Component fmi2Instantiate(fmi2String name, fmi2Type type, fmi2String guid,
                                          fmi2String resources,
                                          const fmi2CallbackFunctions *functions,
                                          fmi2Boolean visible, fmi2Boolean logging) {
    (void)name; (void)guid; (void)resources; (void)functions; (void)visible; (void)logging;
    if (type != fmi2CoSimulation) return NULL;
    Lag *lag = calloc(1, sizeof(Lag));
    if (lag) lag_reset(lag);
    return lag;
}

FMI2_EXPORT void fmi2FreeInstance(fmi2Component c) { free(c); }

FMI2_EXPORT fmi2Status fmi2SetupExperiment(fmi2Component c, fmi2Boolean toleranceDefined,
                                           fmi2Real tolerance, fmi2Real startTime,
                                           fmi2Boolean stopTimeDefined, fmi2Real stopTime) {
    (void)toleranceDefined; (void)tolerance; (void)stopTimeDefined; (void)stopTime;
    ((Lag *)c)->time = startTime;
    return fmi2OK;
}

FMI2_EXPORT fmi2Status fmi2EnterInitializationMode(fmi2Component c) { (void)c; return fmi2OK; }
FMI2_EXPORT fmi2Status fmi2ExitInitializationMode(fmi2Component c) { (void)c; return fmi2OK; }
FMI2_EXPORT fmi2Status fmi2Terminate(fmi2Component c) { (void)c; return fmi2OK; }

FMI2_EXPORT fmi2Status fmi2Reset(fmi2Component c) {
    lag_reset((Lag *)c);
    return fmi2OK;
}

FMI2_EXPORT fmi2Status fmi2GetReal(fmi2Component c, const fmi2ValueReference vr[], size_t n,
                                   fmi2Real value[]) {
    const Lag *lag = c;
    for (size_t i = 0; i < n; i++) {
        switch (vr[i]) {
        case 0: value[i] = lag->u; break;
        case 1: value[i] = lag->tau; break;
        case 2: value[i] = lag->x; break;
        case 3: value[i] = lag_output(lag); break;
        default: return fmi2Error;
        }
    }
    return fmi2OK;
}

FMI2_EXPORT fmi2Status fmi2SetReal(fmi2Component c, const fmi2ValueReference vr[], size_t n,
                                   const fmi2Real value[]) {
    Lag *lag = c;
    for (size_t i = 0; i < n; i++) {
        switch (vr[i]) {
        case 0: lag->u = value[i]; break;
        case 1: lag->tau = value[i]; break;
        case 2: lag->x = value[i]; break;
        default: return fmi2Error;
        }
    }
    return fmi2OK;
}

/* The lag has no variables of these types: any value reference is an error. */
FMI2_EXPORT fmi2Status fmi2GetInteger(fmi2Component c, const fmi2ValueReference vr[], size_t n,
                                      fmi2Integer value[]) {
    (void)c; (void)vr; (void)value;
    return n == 0 ? fmi2OK : fmi2Error;
}
FMI2_EXPORT fmi2Status fmi2GetBoolean(fmi2Component c, const fmi2ValueReference vr[], size_t n,
                                      fmi2Boolean value[]) {
    (void)c; (void)vr; (void)value;
    return n == 0 ? fmi2OK : fmi2Error;
}
FMI2_EXPORT fmi2Status fmi2GetString(fmi2Component c, const fmi2ValueReference vr[], size_t n,
                                     fmi2String value[]) {
    (void)c; (void)vr; (void)value;
    return n == 0 ? fmi2OK : fmi2Error;
}
FMI2_EXPORT fmi2Status fmi2SetInteger(fmi2Component c, const fmi2ValueReference vr[], size_t n,
                                      const fmi2Integer value[]) {
    (void)c; (void)vr; (void)value;
    return n == 0 ? fmi2OK : fmi2Error;
}
FMI2_EXPORT fmi2Status fmi2SetBoolean(fmi2Component c, const fmi2ValueReference vr[], size_t n,
                                      const fmi2Boolean value[]) {
    (void)c; (void)vr; (void)value;
    return n == 0 ? fmi2OK : fmi2Error;
}
FMI2_EXPORT fmi2Status fmi2SetString(fmi2Component c, const fmi2ValueReference vr[], size_t n,
                                     const fmi2String value[]) {
    (void)c; (void)vr; (void)value;
    return n == 0 ? fmi2OK : fmi2Error;
}

FMI2_EXPORT fmi2Status fmi2DoStep(fmi2Component c, fmi2Real t, fmi2Real h,
                                  fmi2Boolean noSetFMUStatePriorToCurrentPoint) {
    (void)noSetFMUStatePriorToCurrentPoint;
    Lag *lag = c;
    lag_step(lag, h);
    lag->time = t + h;
    return fmi2OK;
}

FMI2_EXPORT fmi2Status fmi2CancelStep(fmi2Component c) { (void)c; return fmi2Error; }

/* Steps are synchronous: there is no status to ask for. */
FMI2_EXPORT fmi2Status fmi2GetStatus(fmi2Component c, const fmi2StatusKind s, fmi2Status *value) {
    (void)c; (void)s; (void)value;
    return fmi2Discard;
}
FMI2_EXPORT fmi2Status fmi2GetRealStatus(fmi2Component c, const fmi2StatusKind s,
                                         fmi2Real *value) {
    if (s != fmi2LastSuccessfulTime) return fmi2Discard;
    *value = ((const Lag *)c)->time;
    return fmi2OK;
}
FMI2_EXPORT fmi2Status fmi2GetIntegerStatus(fmi2Component c, const fmi2StatusKind s,
                                            fmi2Integer *value) {
    (void)c; (void)s; (void)value;
    return fmi2Discard;
}
FMI2_EXPORT fmi2Status fmi2GetBooleanStatus(fmi2Component c, const fmi2StatusKind s,
                                            fmi2Boolean *value) {
    if (s != fmi2Terminated) return fmi2Discard;
    (void)c;
    *value = 0;
    return fmi2OK;
}
FMI2_EXPORT fmi2Status fmi2GetStringStatus(fmi2Component c, const fmi2StatusKind s,
                                           fmi2String *value) {
    (void)c; (void)s; (void)value;
    return fmi2Discard;
}
