/*
 * The raw loop of benches/peers/steps.py: the cheapest way to run a chain of N instances of
 * one FMI 2 co-simulation FMU, the floor every co-simulation master is measured against.
 *
 *   raw_loop FMU_DIR MODEL_IDENTIFIER N S IN_VR OUT_VR [STEP]
 *
 * FMU_DIR is an unzipped FMU; its binaries/linux64/MODEL_IDENTIFIER.so is dlopened (or
 * MODEL_IDENTIFIER itself when it contains a '/'). N instances are instantiated (resource
 * location: FMU_DIR/resources as a file URI; a logger that does nothing), set up at t = 0,
 * initialized, then for S macro steps of STEP seconds (default 1e-3), for i in 0..N:
 *
 *   if IN_VR is not "-" and i > 0: fmi2SetReal(instance i, IN_VR, output of i - 1 this step)
 *   fmi2DoStep(instance i, t, STEP)
 *   fmi2GetReal(instance i, OUT_VR)
 *
 * and nothing else; then every instance is terminated and freed. Instance 0's input keeps its
 * start value. The last instance's final output is printed, so a run can be checked against
 * a master's. Every status other than fmi2OK ends the program with exit 1.
 *
 * The FMI 2 types are declared here (only those used), not taken from the standard's headers.
 * Build: gcc -O2 -o raw_loop raw_loop.c -ldl
 */

#include <dlfcn.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef void *fmi2Component;
typedef void *fmi2ComponentEnvironment;
typedef unsigned int fmi2ValueReference;
typedef double fmi2Real;
typedef int fmi2Boolean;
typedef int fmi2Status; /* fmi2OK = 0 */
enum { fmi2OK = 0, fmi2CoSimulation = 1 };

typedef struct {
    void (*logger)(fmi2ComponentEnvironment, const char *, fmi2Status, const char *,
                   const char *, ...);
    void *(*allocateMemory)(size_t, size_t);
    void (*freeMemory)(void *);
    void (*stepFinished)(fmi2ComponentEnvironment, fmi2Status);
    fmi2ComponentEnvironment componentEnvironment;
} fmi2CallbackFunctions;

typedef fmi2Component (*Instantiate)(const char *, int, const char *, const char *,
                                     const fmi2CallbackFunctions *, fmi2Boolean, fmi2Boolean);
typedef fmi2Status (*SetupExperiment)(fmi2Component, fmi2Boolean, fmi2Real, fmi2Real,
                                      fmi2Boolean, fmi2Real);
typedef fmi2Status (*OneArg)(fmi2Component);
typedef void (*FreeInstance)(fmi2Component);
typedef fmi2Status (*DoStep)(fmi2Component, fmi2Real, fmi2Real, fmi2Boolean);
typedef fmi2Status (*SetReal)(fmi2Component, const fmi2ValueReference *, size_t,
                              const fmi2Real *);
typedef fmi2Status (*GetReal)(fmi2Component, const fmi2ValueReference *, size_t, fmi2Real *);

static void quiet_logger(fmi2ComponentEnvironment env, const char *instance, fmi2Status status,
                         const char *category, const char *message, ...) {
    (void)env; (void)instance; (void)status; (void)category; (void)message;
}

static void die(const char *what) {
    fprintf(stderr, "raw_loop: %s\n", what);
    exit(1);
}

static void *symbol(void *library, const char *name) {
    void *f = dlsym(library, name);
    if (!f) {
        fprintf(stderr, "raw_loop: %s not found: %s\n", name, dlerror());
        exit(1);
    }
    return f;
}

/* The guid attribute of FMU_DIR/modelDescription.xml (a plain text search: the kit's files
 * have one fmiModelDescription element with guid="..."). */
static char *read_guid(const char *dir) {
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/modelDescription.xml", dir);
    FILE *f = fopen(path, "rb");
    if (!f) die("cannot open modelDescription.xml");
    static char text[1 << 20];
    size_t len = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[len] = 0;
    char *start = strstr(text, " guid=\"");
    if (!start) die("no guid in modelDescription.xml");
    start += 7;
    char *end = strchr(start, '"');
    if (!end) die("unterminated guid");
    *end = 0;
    return start;
}

int main(int argc, char **argv) {
    if (argc < 7) {
        fprintf(stderr, "usage: %s FMU_DIR MODEL_IDENTIFIER N S IN_VR|- OUT_VR [STEP [VR=VALUE...]]\n",
                argv[0]);
        return 2;
    }
    const char *dir = argv[1];
    long n = atol(argv[3]), steps = atol(argv[4]);
    int has_input = strcmp(argv[5], "-") != 0;
    fmi2ValueReference in_vr = has_input ? (fmi2ValueReference)strtoul(argv[5], NULL, 10) : 0;
    fmi2ValueReference out_vr = (fmi2ValueReference)strtoul(argv[6], NULL, 10);
    double h = argc >= 8 ? atof(argv[7]) : 1e-3;
    if (n < 1 || steps < 0) die("N must be at least 1 and S at least 0");

    char so[PATH_MAX];
    if (strchr(argv[2], '/'))
        snprintf(so, sizeof so, "%s", argv[2]);
    else
        snprintf(so, sizeof so, "%s/binaries/linux64/%s.so", dir, argv[2]);
    void *library = dlopen(so, RTLD_NOW | RTLD_LOCAL);
    if (!library) {
        fprintf(stderr, "raw_loop: %s\n", dlerror());
        return 1;
    }
    Instantiate instantiate = (Instantiate)symbol(library, "fmi2Instantiate");
    SetupExperiment setup = (SetupExperiment)symbol(library, "fmi2SetupExperiment");
    OneArg enter_init = (OneArg)symbol(library, "fmi2EnterInitializationMode");
    OneArg exit_init = (OneArg)symbol(library, "fmi2ExitInitializationMode");
    OneArg terminate = (OneArg)symbol(library, "fmi2Terminate");
    FreeInstance free_instance = (FreeInstance)symbol(library, "fmi2FreeInstance");
    DoStep do_step = (DoStep)symbol(library, "fmi2DoStep");
    SetReal set_real = (SetReal)symbol(library, "fmi2SetReal");
    GetReal get_real = (GetReal)symbol(library, "fmi2GetReal");

    const char *guid = read_guid(dir);
    char *absolute = realpath(dir, NULL);
    if (!absolute) die("cannot resolve FMU_DIR");
    char resources[PATH_MAX + 16];
    snprintf(resources, sizeof resources, "file://%s/resources", absolute);
    free(absolute);

    fmi2CallbackFunctions callbacks = {quiet_logger, calloc, free, NULL, NULL};
    fmi2Component *c = malloc(sizeof *c * (size_t)n);
    if (!c) die("out of memory");
    for (long i = 0; i < n; i++) {
        char name[32];
        snprintf(name, sizeof name, "f%ld", i);
        c[i] = instantiate(name, fmi2CoSimulation, guid, resources, &callbacks, 0, 0);
        if (!c[i]) die("fmi2Instantiate failed");
        if (setup(c[i], 0, 0.0, 0.0, 0, 0.0) != fmi2OK) die("fmi2SetupExperiment failed");
        /* Real parameters VR=VALUE (e.g. the Gain's busy cost), set as cosimo sets them. */
        for (int a = 8; a < argc; a++) {
            char *end;
            fmi2ValueReference vr = (fmi2ValueReference)strtoul(argv[a], &end, 10);
            if (*end != '=') die("parameters are VR=VALUE");
            double value = atof(end + 1);
            if (set_real(c[i], &vr, 1, &value) != fmi2OK) die("fmi2SetReal of a parameter failed");
        }
        if (enter_init(c[i]) != fmi2OK) die("fmi2EnterInitializationMode failed");
        if (exit_init(c[i]) != fmi2OK) die("fmi2ExitInitializationMode failed");
    }

    double y = 0.0;
    for (long k = 0; k < steps; k++) {
        double t = (double)k * h;
        for (long i = 0; i < n; i++) {
            if (has_input && i > 0 && set_real(c[i], &in_vr, 1, &y) != fmi2OK)
                die("fmi2SetReal failed");
            if (do_step(c[i], t, h, 1) != fmi2OK) die("fmi2DoStep failed");
            if (get_real(c[i], &out_vr, 1, &y) != fmi2OK) die("fmi2GetReal failed");
        }
    }
    printf("%.17g\n", y);

    for (long i = 0; i < n; i++) {
        if (terminate(c[i]) != fmi2OK) die("fmi2Terminate failed");
        free_instance(c[i]);
    }
    free(c);
    return 0;
}
