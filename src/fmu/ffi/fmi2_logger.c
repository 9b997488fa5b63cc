/*
 * FMI 2's logger callback is a C variadic function (printf-style). Defining C-variadic
 * functions is unstable in Rust, so this shim formats the message with vsnprintf and hands the
 * finished string to a non-variadic Rust function.
 *
 * The Rust function is not called by symbol name (that would depend on link order between the
 * static library and the Rust crate): the component environment the FMU passes back starts with
 * a pointer to it (`cosimo_fmi2_env_header`).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

typedef void (*cosimo_fmi2_sink)(void *env, const char *instance_name, int status,
                                 const char *category, const char *message);

/* The first field of cosimo's component environment (a #[repr(C)] Rust struct). */
typedef struct {
    cosimo_fmi2_sink sink;
} cosimo_fmi2_env_header;

/* Used when an FMU passes a NULL component environment back. */
static cosimo_fmi2_sink cosimo_fmi2_fallback_sink = NULL;

void cosimo_fmi2_set_fallback_sink(cosimo_fmi2_sink sink) { cosimo_fmi2_fallback_sink = sink; }

void cosimo_fmi2_logger(void *env, const char *instance_name, int status, const char *category,
                        const char *message, ...) {
    cosimo_fmi2_sink sink =
        env ? ((cosimo_fmi2_env_header *)env)->sink : cosimo_fmi2_fallback_sink;
    char buffer[1024];
    va_list args;
    int n;

    if (!sink) {
        return;
    }
    if (!message) {
        sink(env, instance_name, status, category, NULL);
        return;
    }

    va_start(args, message);
    n = vsnprintf(buffer, sizeof buffer, message, args);
    va_end(args);

    if (n < 0) {
        /* Formatting failed: pass the raw format string on rather than nothing. */
        sink(env, instance_name, status, category, message);
    } else if ((size_t)n < sizeof buffer) {
        sink(env, instance_name, status, category, buffer);
    } else {
        char *large = (char *)malloc((size_t)n + 1);
        if (!large) {
            sink(env, instance_name, status, category, buffer);
            return;
        }
        va_start(args, message);
        vsnprintf(large, (size_t)n + 1, message, args);
        va_end(args);
        sink(env, instance_name, status, category, large);
        free(large);
    }
}
